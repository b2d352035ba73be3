import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROBLEM_SLUGS } from '@loyalty/platform';
import { ERROR_CATALOGUE, undocumentedOperations } from '@loyalty/gateway';
import { apiArtefacts, generateOpenApiDocument } from './openapi';

/**
 * The API description as a product: complete, lint-clean, and the committed artefacts (document,
 * SDK types, error catalogue) in step with the code. On a failure here run `npm run api:generate`
 * and commit the result (after documenting any new operation in libs/gateway/src/openapi/operations.ts).
 */
const root = join(__dirname, '..', '..', '..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');
type Json = Record<string, any>;

describe('OpenAPI document', () => {
  let doc: Json;
  beforeAll(async () => { doc = (await generateOpenApiDocument()) as unknown as Json; });

  const operations = () => Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, path, op: op as Json })));

  it('documents every operation the gateway routes', () => {
    expect(operations().length).toBeGreaterThanOrEqual(53);
    expect(undocumentedOperations(doc as never)).toEqual([]);
  });

  it('gives every operation a summary, a description, a tag, security, a 2xx with an example, and its problems', () => {
    const problems: string[] = [];
    for (const { key, op } of operations()) {
      if (!op.summary || !op.description || op.description.startsWith('Not yet described')) problems.push(`${key}: words`);
      if (op.tags?.length !== 1) problems.push(`${key}: tag`);
      if (!Array.isArray(op.security) || op.security.length === 0) problems.push(`${key}: security`);
      const ok = Object.entries(op.responses as Json).filter(([s]) => s.startsWith('2'));
      if (!ok.length) problems.push(`${key}: no 2xx`);
      for (const [status, r] of ok) if (status !== '204' && !r.content?.['application/json']?.example) problems.push(`${key}: ${status} example`);
      if (!Object.keys(op.responses).some((s) => s.startsWith('4'))) problems.push(`${key}: no 4xx`);
      if (!op.responses['401']) problems.push(`${key}: no 401`);
    }
    expect(problems).toEqual([]);
  });

  it('tells merchant keys with scopes from the admin token', () => {
    const schemes = doc.components.securitySchemes;
    expect(Object.keys(schemes).sort()).toEqual(['adminToken', 'merchantKey']);
    const security = (k: string) => operations().find((o) => o.key === k)!.op.security;
    expect(security('POST /v1/events')).toEqual([{ merchantKey: ['ingest'] }]);
    expect(security('POST /v1/members')).toEqual([{ merchantKey: ['act'] }]);
    expect(security('GET /v1/webhook_endpoints')).toEqual([{ merchantKey: ['read'] }, { merchantKey: ['webhooks'] }]);
    expect(security('GET /v1/ping')).toEqual([{ merchantKey: [] }]);
    expect(security('POST /admin/v1/programs')).toEqual([{ adminToken: [] }]);
  });

  it('types every money field as an integer, in requests and responses', () => {
    const floats: string[] = [];
    const walk = (node: unknown, at: string) => {
      if (!node || typeof node !== 'object') return;
      for (const [k, v] of Object.entries(node as Json)) {
        if (k.endsWith('_cents') && v && typeof v === 'object' && !v.$ref) {
          const t = Array.isArray(v.type) ? v.type : [v.type];
          if (!t.includes('integer') || t.includes('number')) floats.push(`${at}/${k}`);
        }
        walk(v, `${at}/${k}`);
      }
    };
    walk(doc.components.schemas, '#/components/schemas');
    expect(floats).toEqual([]);
    expect(doc.components.schemas.Balances.properties.available_cents.type).toBe('integer');
    expect(doc.components.schemas.OrderAmountEventDto.properties.gross_cents.type).toBe('integer');
  });

  it('documents the idempotency, rate-limit and request-id headers', () => {
    const enrol = operations().find((o) => o.key === 'POST /v1/members')!.op;
    expect(enrol.parameters.map((p: Json) => p.name)).toContain('Idempotency-Key');
    expect(Object.keys(enrol.responses['201'].headers).sort()).toEqual(['Idempotent-Replay', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-Request-Id']);
    const events = operations().find((o) => o.key === 'POST /v1/events')!.op;
    expect(events.parameters.find((p: Json) => p.name === 'Idempotency-Key').schema.maxLength).toBe(128);
    expect(Object.keys(events.responses['429'].headers)).toContain('Retry-After');
    expect(Object.keys(events.responses['429'].content['application/problem+json'].examples).sort()).toEqual(['backlog', 'rate-limited']);
  });

  it('names only slugs of the error catalogue, and the catalogue covers every slug', () => {
    expect(ERROR_CATALOGUE.map((e) => e.slug).sort()).toEqual(Object.keys(PROBLEM_SLUGS).sort());
    const text = JSON.stringify(doc);
    const named = new Set([...text.matchAll(/docs\/api\/errors#([a-z-]+)/g)].map((m) => m[1]));
    for (const slug of named) expect(Object.keys(PROBLEM_SLUGS)).toContain(slug);
  });
});

describe('committed API artefacts (drift check)', () => {
  it('libs/sdk/openapi.json and docs/errors.md are what the code generates', async () => {
    const files = await apiArtefacts();
    for (const [path, text] of Object.entries(files)) expect({ path, text: read(path) }).toEqual({ path, text });
  });

  it('libs/sdk/src/schema.ts is what openapi-typescript makes of the committed document', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sdk-'));
    try {
      execFileSync(join(root, 'node_modules', '.bin', 'openapi-typescript'), [join(root, 'libs/sdk/openapi.json'), '--default-non-nullable', 'false', '--root-types', '--root-types-no-schema-prefix', '-o', join(dir, 'schema.ts')], { stdio: 'pipe' });
      expect(readFileSync(join(dir, 'schema.ts'), 'utf8')).toEqual(read('libs/sdk/src/schema.ts'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('passes Redocly\'s recommended ruleset with no errors and no warnings', () => {
    let out: string;
    try {
      out = execFileSync(join(root, 'node_modules', '.bin', 'redocly'), ['lint', '--extends', 'recommended', '--format', 'json', join(root, 'libs/sdk/openapi.json')], { stdio: 'pipe', env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } }).toString();
    } catch (e) {
      out = String((e as { stdout?: Buffer }).stdout ?? e);
    }
    const report = JSON.parse(out.slice(out.indexOf('{')));
    expect(report.problems.map((p: Json) => `${p.severity} ${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toEqual(expect.objectContaining({ errors: 0, warnings: 0 }));
  }, 60_000);
});
