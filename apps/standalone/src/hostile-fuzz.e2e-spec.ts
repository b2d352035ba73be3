import fc from 'fast-check';
import { TestApp, startTestApp } from './testing/harness';

/**
 * Guard rail (issue 8): a property-based walk of every operation in the served OpenAPI document
 * with generated hostile values (wrong types, sizes, encodings, nesting, prototype keys, broken
 * Unicode, forged cursors) in path parameters, query parameters, headers and bodies, through real
 * HTTP. Whatever is sent: never a 5xx, every error an RFC 9457 problem+json, and the process
 * stays up. Bounded: RUNS requests per operation, a fixed seed (a failure names it and the path
 * to replay it).
 */

const RUNS = Number(process.env.FUZZ_RUNS_PER_OPERATION ?? 40);
const SEED = Number(process.env.FUZZ_SEED ?? 20261126);
const BIG = { burst: 1_000_000, per_second: 1_000_000 };

type Schema = { $ref?: string; type?: string; format?: string; enum?: unknown[]; items?: Schema; properties?: Record<string, Schema>; oneOf?: Schema[]; allOf?: Schema[]; required?: string[] };
type Operation = { method: string; path: string; parameters: { in: string; name: string; schema?: Schema }[]; body: Schema | null };
type Doc = { paths: Record<string, Record<string, { parameters?: Operation['parameters']; requestBody?: { content: Record<string, { schema: Schema }> } }>>; components: { schemas: Record<string, Schema> } };

const deepArray = (n: number): unknown => { let v: unknown = []; for (let i = 0; i < n; i++) v = [v]; return v; };
const deepObject = (n: number): unknown => { let v: unknown = 1; for (let i = 0; i < n; i++) v = { a: v }; return v; };
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** Strings that broke, or could break, something: control and surrogate characters, sizes, injections, odd numbers and dates. */
const HOSTILE_STRINGS = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', '\udfff', 'x\ud83d', '😀'.repeat(40), 'x'.repeat(300), 'y'.repeat(70_000), '__proto__', 'constructor',
  "'; drop table members; --", '%00', '%', '../../etc/passwd', '<script>', '1e308', '-1', '9'.repeat(40), 'NaN', 'null', 'true',
  'ref:', 'phone:', 'phone:+', 'ref:\u0000', 'email:a@b.c', '+14155550100', 'a@b', 'A@EXAMPLE.COM', 'x@example.com',
  '9999-12-31T23:59:59Z', '0000-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', '2025-02-30T00:00:00Z', '2025-01-01T00:00:00+99:99',
  'http://127.0.0.1:1/', 'https:///x', 'https://169.254.169.254/', 'javascript:alert(1)',
  b64([]), b64(['x']), b64([1e308]), b64([-1]), b64(['123456789012345678901234567890']), b64({}),
];
const HOSTILE_NUMBERS = [0, -0, 1, -1, 2.5, -2.5, 0.001, 2 ** 31, 2 ** 31 - 1, 2 ** 53 - 1, 2 ** 53, -(2 ** 53), 2 ** 64, 1e308, -1e308, 5e-324];

const hostileLeaf: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, ...HOSTILE_NUMBERS, ...HOSTILE_STRINGS),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: hostileLeaf },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(deepArray(40), deepArray(3000), deepObject(40), [[]], [null], [{}], {}, { __proto__x: 1 }) },
  { weight: 1, arbitrary: fc.array(hostileLeaf, { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom('__proto__', 'constructor', 'a', 'email', '\u0000', '\ud800'), hostileLeaf, { maxKeys: 3 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

describe('property: every OpenAPI operation survives hostile input (standalone, over HTTP)', () => {
  let app: TestApp;
  let doc: Doc;
  let ops: Operation[];
  const real: Record<string, string[]> = {};
  let key: string;
  let testKey: string;

  const resolve = (s: Schema | undefined): Schema => {
    let cur = s ?? {};
    for (let i = 0; i < 10 && cur.$ref; i++) cur = doc.components.schemas[cur.$ref.split('/').pop()!] ?? {};
    return cur;
  };

  /** A value of the right shape (so the request gets past the first check), or a hostile one. */
  const validish = (raw: Schema | undefined, depth = 0): fc.Arbitrary<unknown> => {
    const s = resolve(raw);
    if (s.enum?.length) return fc.constantFrom(...s.enum);
    if (s.oneOf?.length) return fc.oneof(...s.oneOf.map((x) => validish(x, depth)));
    switch (s.type) {
      case 'integer': return fc.integer({ min: 1, max: 1000 });
      case 'number': return fc.integer({ min: 0, max: 100 });
      case 'boolean': return fc.boolean();
      case 'string':
        if (s.format === 'email') return fc.constantFrom('fuzz@example.com', 'FUZZ@Example.com', 'other@example.com');
        if (s.format === 'date-time') return fc.constantFrom('2026-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '0001-01-01T00:00:00Z');
        return fc.constantFrom('x', 'fuzz', 'cust-1', '+14155550100', 'http://127.0.0.1:9/h', 'order.paid', 'member.enrolled');
      case 'array': return depth > 3 ? fc.constant([]) : fc.array(validish(s.items, depth + 1), { minLength: 1, maxLength: 3 });
      case 'object': return depth > 3 ? fc.constant({}) : objectOf(s, depth + 1);
      default: return s.properties || s.allOf ? objectOf(s, depth + 1) : fc.constant('x');
    }
  };
  const objectOf = (raw: Schema, depth: number): fc.Arbitrary<unknown> => {
    const s = resolve(raw);
    const props = { ...(s.properties ?? {}) };
    for (const part of [...(s.allOf ?? []), ...(s.oneOf ?? [])]) Object.assign(props, resolve(part).properties ?? {});
    const entries = Object.entries(props);
    if (!entries.length) return fc.dictionary(fc.string({ maxLength: 8 }), hostileLeaf, { maxKeys: 3 });
    const required = new Set(s.required ?? []);
    // required fields always, optional ones sometimes
    return fc.record(Object.fromEntries(entries.map(([k, v]) => [k, validish(v, depth)])))
      .chain((o) => fc.subarray(Object.keys(o)).map((keep) => Object.fromEntries(Object.entries(o).filter(([k]) => required.has(k) || keep.includes(k)))));
  };
  /** Every location in a JSON value (pointer segments), so one of them can be made hostile. */
  const locations = (v: unknown, at: (string | number)[] = []): (string | number)[][] => {
    const out: (string | number)[][] = [at];
    if (Array.isArray(v)) v.forEach((x, i) => out.push(...locations(x, [...at, i])));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...locations(x, [...at, k]));
    return out;
  };
  const replaceAt = (v: unknown, at: (string | number)[], with_: unknown): unknown => {
    if (!at.length) return with_;
    const copy: any = Array.isArray(v) ? [...v] : { ...(v as object) };
    copy[at[0]] = replaceAt(copy[at[0]], at.slice(1), with_);
    return copy;
  };
  /** A well-shaped body with one hostile location (a field, an element, a new key, or the whole body), or a raw broken one. */
  const body = (s: Schema | null): fc.Arbitrary<{ raw?: string; json?: unknown }> => {
    const shaped = s ? objectOf(s, 0) : fc.constant({});
    const mutated = shaped.chain((json) => {
      const spots = locations(json);
      return fc.tuple(fc.constantFrom(...spots), hostileValue, fc.constantFrom<string | null>(null, null, 'extra', '__proto__', 'constructor'))
        .map(([at, value, newKey]) => ({ json: newKey && json && typeof json === 'object' && !Array.isArray(json) ? { ...json, [newKey]: value } : replaceAt(json, at, value) }));
    });
    return fc.oneof(
      { weight: 2, arbitrary: shaped.map((json) => ({ json })) },
      { weight: 6, arbitrary: mutated },
      { weight: 1, arbitrary: hostileValue.map((json) => ({ json })) },
      { weight: 1, arbitrary: fc.constantFrom('', '{', '{"a":1,}', '['.repeat(5000), 'null', '"\\ud800"', '{"__proto__":{"admin":true}}', '\u0000', '{"a":"\\u0000"}').map((raw) => ({ raw })) },
    );
  };

  /** Path segments: the real ids of this run (so validation past the lookup is reached) and hostile ones. */
  const pathValue = (name: string, path: string): fc.Arbitrary<string> => {
    const known = name === 'kid' ? [] // never a real key: the walk must not revoke its own keys
      : name === 'pid' ? real.pid : name === 'command' ? ['suspend', 'reinstate', 'pause', 'resume']
        : path.startsWith('/v1/members') || path.startsWith('/admin/v1/members') ? real.member
          : path.startsWith('/v1/webhook_endpoints') ? real.endpoint : [];
    return fc.oneof(
      { weight: 5, arbitrary: known.length ? fc.constantFrom(...known) : fc.constant('M-00000000000000000000000000') },
      { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_STRINGS.filter((x) => x.length < 2000), 'ref:cust-1', 'phone:%2B14155550100', '%E0%A4%A', '%2e%2e', '%ff', 'a%2Fb').map((v) => (/%/.test(v) ? v : encodeSegment(v))) },
    );
  };
  const encodeSegment = (v: string): string => [...Buffer.from(v, 'utf8')].map((b) => (/[A-Za-z0-9._~:+@-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0')}`)).join('');
  const queryPart = (name: string, schema: Schema | undefined): fc.Arbitrary<string | null> => fc.oneof(
    { weight: 4, arbitrary: fc.constant(null) },
    { weight: 4, arbitrary: validish(schema).map((v) => `${encodeSegment(name)}=${encodeSegment(typeof v === 'string' ? v : JSON.stringify(v) ?? '')}`) },
    { weight: 1, arbitrary: hostileLeaf.map((v) => `${encodeSegment(name)}=${encodeSegment(typeof v === 'string' ? v : JSON.stringify(v) ?? '')}`) },
    { weight: 1, arbitrary: fc.constantFrom(`${name}[]=1`, `${name}[a]=b`, `${name}[$ne]=x`, `${name}=1&${name}=2`, `${name}`, `${name}=%00`, `${name}=%ff`, `${name}=%ED%A0%80`) },
  );

  beforeAll(async () => {
    app = await startTestApp();
    const p = await app.createProgram({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 10, timing: 'immediate' }] });
    real.pid = [p.programId];
    key = (await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'live', rate_limit: BIG })).body.data.key;
    testKey = (await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'test', rate_limit: BIG })).body.data.key;
    const m = await app.http('POST', '/v1/members', { key, body: { email: 'fuzz@example.com', phone: '+14155550100', external_ref: 'cust-1' } });
    await app.http('POST', `/v1/members/${m.body.data.id}/adjust`, { key, body: { amount_cents: 100_000, reason_code: 'seed' } });
    real.member = [m.body.data.id, 'ref:cust-1', 'phone:%2B14155550100'];
    const ep = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body: { url: 'http://127.0.0.1:9/hook', events: ['member.enrolled'] } });
    real.endpoint = [ep.body.data.id];
    doc = (await app.http('GET', '/openapi.json')).body;
    ops = Object.entries(doc.paths).flatMap(([path, byMethod]) => Object.entries(byMethod).map(([method, o]) => ({
      method: method.toUpperCase(), path, parameters: o.parameters ?? [], body: o.requestBody?.content?.['application/json']?.schema ?? null,
    })));
  }, 120_000);
  afterAll(async () => { await app?.close(); });

  it('serves a document with the operations to walk', () => {
    expect(ops.length).toBeGreaterThan(40);
  });

  it('answers every operation with no 5xx and problem+json errors, whatever it is sent', async () => {
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const started = Date.now();
    for (const op of ops) {
      const pathParams = op.parameters.filter((x) => x.in === 'path');
      const queryParams = op.parameters.filter((x) => x.in === 'query');
      const request = fc.record({
        segments: fc.tuple(...pathParams.map((x) => pathValue(x.name, op.path))),
        query: fc.tuple(...queryParams.map((x) => queryPart(x.name, x.schema))),
        extraQuery: fc.option(fc.constantFrom('cursor=' + b64([1e308]), '%65mail=a%40b.c', 'api_key=secret', 'limit=2.5', 'x=%00'), { nil: undefined }),
        body: body(op.body),
        auth: fc.constantFrom('live', 'live', 'live', 'live', 'live', 'live', 'test', 'test', 'none', 'bogus'),
        idem: fc.option(fc.constantFrom('k', 'x'.repeat(300), '', 'fuzz-key-1', '\t'), { nil: undefined, freq: 4 }),
      });
      await fc.assert(fc.asyncProperty(request, async (r) => {
        let i = 0;
        const path = op.path.replace(/\{[^}]+\}/g, () => r.segments[i++] as string);
        const qs = [...(r.query as (string | null)[]).filter((x): x is string => x !== null), ...(r.extraQuery ? [r.extraQuery] : [])].join('&');
        const admin = op.path.startsWith('/admin');
        const token = r.auth === 'none' ? undefined : r.auth === 'bogus' ? 'svc_live_bogus' : admin ? app.adminToken : r.auth === 'test' ? testKey : key;
        const headers: Record<string, string> = {};
        if (r.idem !== undefined) headers['idempotency-key'] = r.idem;
        const hasBody = !['GET', 'HEAD'].includes(op.method);
        const raw = hasBody ? (r.body.raw ?? JSON.stringify(r.body.json) ?? 'null') : undefined;
        const res = await app.http(op.method, qs ? `${path}?${qs}` : path, { key: token, rawBody: raw, headers });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const problem = res.status >= 400 ? /^application\/problem\+json/.test(res.headers.get('content-type') ?? '') && res.body?.status === res.status : true;
        if (res.status >= 500 || !problem) {
          failures.push(`${op.method} ${`${path}${qs ? `?${qs}` : ''}`.slice(0, 300)} ${raw?.slice(0, 300) ?? ''} → ${res.status} ${JSON.stringify(res.body)?.slice(0, 300)}`);
          return false;
        }
        return true;
      }), { numRuns: RUNS, seed: SEED, endOnFailure: true }).catch(() => undefined);
    }
    // the process survived all of it
    expect((await app.http('GET', '/healthz')).status).toBe(200);
    expect((await app.http('GET', '/v1/ping', { key })).status).toBe(200);
    expect(failures).toEqual([]);
    // the walk reached the handlers, not only the edge: successes and refusals of several kinds
    const count = (from: number, to: number) => [...statuses].filter(([s]) => s >= from && s < to).reduce((a, [, n]) => a + n, 0);
    expect(count(200, 300)).toBeGreaterThan(ops.length);
    expect([...statuses.keys()]).toEqual(expect.arrayContaining([400, 401, 404, 422]));
    process.stdout.write(`fuzz: ${[...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(' ')} in ${Date.now() - started} ms\n`);
    expect(Date.now() - started).toBeLessThan(240_000);
  }, 300_000);
});
