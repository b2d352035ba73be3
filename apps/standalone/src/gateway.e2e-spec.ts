import { ConsoleLogger, Logger } from '@nestjs/common';
import { Client } from 'pg';
import { TestApp, freshDatabaseUrl, startTestApp } from './testing/harness';
import { startStandalone } from './start';

/**
 * The HTTP edge through real HTTP on the standalone app: authentication and scopes, key
 * rotation and revocation, problems, request ids, rate limits (in process and shared through
 * Redis), Idempotency-Key, and the operational endpoints.
 */

const BASE = 'https://loyalty.test';
const REDIS = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const ALL = ['ingest', 'read', 'act', 'webhooks'];
const BIG = { burst: 100000, per_second: 100000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const expectProblem = (r: { status: number; headers: Headers; body: any }, status: number, slug: string) => {
  expect({ status: r.status, type: r.body?.type }).toEqual({ status, type: `${BASE}/docs/api/errors#${slug}` });
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.body.status).toBe(status);
  expect(typeof r.body.title).toBe('string');
  expect(r.headers.get('x-request-id')).toBeTruthy();
};

const query = async <T = any>(url: string, sql: string, params: unknown[] = []): Promise<T[]> => {
  const c = new Client({ connectionString: url });
  await c.connect();
  try { return (await c.query(sql, params)).rows as T[]; } finally { await c.end(); }
};

describe('gateway over HTTP (standalone)', () => {
  let app: TestApp;
  let pid: string;
  let key: string; // live, all scopes, big rate
  let testKey: string; // sandbox, all scopes, big rate
  let liveKeyId: string;

  const newKey = async (body: Record<string, unknown>) => {
    const r = await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'live', scopes: ALL, rate_limit: BIG, ...body });
    expect(r.status).toBe(201);
    return r.body.data as { id: string; key: string; scopes: string[]; mode: string };
  };

  beforeAll(async () => {
    app = await startTestApp();
    const p = await app.createProgram();
    pid = p.programId;
    liveKeyId = p.liveKeyId;
    key = (await newKey({})).key;
    testKey = (await newKey({ mode: 'test' })).key;
  });
  afterAll(async () => app.close());

  describe('authentication', () => {
    it('refuses a request without a key with 401 unauthenticated', async () => {
      const r = await app.http('GET', '/v1/members');
      expectProblem(r, 401, 'unauthenticated');
    });

    it.each([
      ['a malformed bearer', 'Bearer not-a-key'],
      ['another scheme', `Basic ${Buffer.from('a:b').toString('base64')}`],
      ['an unknown well-formed key', `Bearer svc_live_${'A'.repeat(32)}`],
      ['a key of the wrong shape', `Bearer svc_prod_${'A'.repeat(32)}`],
      ['an empty bearer', 'Bearer '],
    ])('refuses %s with 401 unauthenticated', async (_name, authorization) => {
      const r = await app.http('GET', '/v1/ping', { headers: { authorization } });
      expectProblem(r, 401, 'unauthenticated');
    });

    it('answers GET /v1/ping with pong, mode and scopes for any valid key', async () => {
      const onlyWebhooks = await newKey({ scopes: ['webhooks'] });
      const r = await app.http('GET', '/v1/ping', { key: onlyWebhooks.key });
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ pong: true, mode: 'live', scopes: ['webhooks'] });
      const t = await app.http('GET', '/v1/ping', { key: testKey });
      expect(t.body.data).toMatchObject({ pong: true, mode: 'test' });
      expect([...t.body.data.scopes].sort()).toEqual([...ALL].sort());
    });

    it('refuses a missing scope with 403 insufficient-scope', async () => {
      const readOnly = await newKey({ scopes: ['read'] });
      const post = await app.http('POST', '/v1/members', { key: readOnly.key, body: { email: 'scope@example.com' } });
      expectProblem(post, 403, 'insufficient-scope');
      // the refused call did nothing
      const list = await app.http('GET', '/v1/members?email=scope@example.com', { key: readOnly.key });
      expect(list.status).toBe(200);
      expect(list.body.data).toEqual([]);
      const actOnly = await newKey({ scopes: ['act'], rate_limit: undefined });
      const refused = await app.http('GET', '/v1/members', { key: actOnly.key });
      expectProblem(refused, 403, 'insufficient-scope');
      // a refused call still reports (and counts against) the key's rate limit
      expect(refused.headers.get('x-ratelimit-limit')).toBe('50');
      expect(refused.headers.get('x-ratelimit-remaining')).toBe('49');
      expect((await app.http('POST', '/v1/members', { key: actOnly.key, body: { email: 'scope@example.com' } })).status).toBe(201);
    });

    it('keeps live and sandbox apart: a member of one mode is 404 for the other, and one email may exist in both', async () => {
      const live = await app.http('POST', '/v1/members', { key, body: { email: 'both@example.com', external_ref: 'cust-both' } });
      const test = await app.http('POST', '/v1/members', { key: testKey, body: { email: 'both@example.com', external_ref: 'cust-both' } });
      expect([live.status, test.status]).toEqual([201, 201]);
      expect(live.body.data.id).not.toBe(test.body.data.id);
      expectProblem(await app.http('GET', `/v1/members/${live.body.data.id}`, { key: testKey }), 404, 'not-found');
      expectProblem(await app.http('GET', `/v1/members/${test.body.data.id}`, { key }), 404, 'not-found');
      expect((await app.http('GET', '/v1/members/ref:cust-both', { key })).body.data.id).toBe(live.body.data.id);
      expect((await app.http('GET', '/v1/members/ref:cust-both', { key: testKey })).body.data.id).toBe(test.body.data.id);
      const liveList = await app.http('GET', '/v1/members?email=both@example.com', { key });
      expect(liveList.body.data.map((m: { id: string }) => m.id)).toEqual([live.body.data.id]);
      expectProblem(await app.http('POST', `/v1/members/${live.body.data.id}/adjust`, { key: testKey, body: { amount_cents: 5, reason_code: 'x' } }), 404, 'not-found');
    });

    it("answers 404 for another programme's member, whatever the id form", async () => {
      const other = await app.createProgram({ program_name: 'Other' });
      const m = await app.http('POST', '/v1/members', { key: other.liveKey, body: { email: 'theirs@example.com', external_ref: 'theirs-1', phone: '+14155550199' } });
      expect(m.status).toBe(201);
      for (const id of [m.body.data.id, 'ref:theirs-1', 'phone:%2B14155550199']) {
        expectProblem(await app.http('GET', `/v1/members/${id}`, { key }), 404, 'not-found');
        expectProblem(await app.http('GET', `/v1/members/${id}/ledger`, { key }), 404, 'not-found');
      }
      expectProblem(await app.http('PATCH', `/v1/members/${m.body.data.id}`, { key, body: { marketing_consent: true } }), 404, 'not-found');
      expectProblem(await app.http('DELETE', `/v1/members/${m.body.data.id}`, { key }), 404, 'not-found');
      expect((await app.http('GET', `/v1/members/${m.body.data.id}`, { key: other.liveKey })).body.data.state).toBe('registered');
    });

    it('rotates a key: the new key works and the old one keeps working during the grace period', async () => {
      const k = await newKey({ scopes: ['read'], name: 'till' });
      const r = await app.admin('POST', `/admin/v1/keys/${k.id}/rotate`);
      expect(r.status).toBe(201);
      const fresh = r.body.data;
      expect(fresh.key).toMatch(/^svc_live_[0-9A-Za-z]{32}$/);
      expect(fresh.id).not.toBe(k.id);
      expect(fresh.scopes).toEqual(['read']);
      // default grace is 24 hours
      const expires = Date.parse(fresh.old_key_expires_at) - Date.now();
      expect(expires).toBeGreaterThan(86_400_000 - 60_000);
      expect(expires).toBeLessThanOrEqual(86_400_000);
      expect((await app.http('GET', '/v1/members', { key: fresh.key })).status).toBe(200);
      expect((await app.http('GET', '/v1/members', { key: k.key })).status).toBe(200);
    });

    it('revokes a key at once, even right after it was used (no stale cache)', async () => {
      const k = await newKey({});
      expect((await app.http('GET', '/v1/ping', { key: k.key })).status).toBe(200);
      const r = await app.admin('DELETE', `/admin/v1/keys/${k.id}`);
      expect(r.status).toBe(200);
      expectProblem(await app.http('GET', '/v1/ping', { key: k.key }), 401, 'unauthenticated');
      expectProblem(await app.http('POST', '/v1/members', { key: k.key, body: { email: 'revoked@example.com' } }), 401, 'unauthenticated');
      // a revoked key cannot be brought back by rotating it
      expectProblem(await app.admin('POST', `/admin/v1/keys/${k.id}/rotate`), 409, 'invalid-state');
      expectProblem(await app.http('GET', '/v1/ping', { key: k.key }), 401, 'unauthenticated');
      // unknown key ids are 404
      expectProblem(await app.admin('DELETE', '/admin/v1/keys/K-DOESNOTEXIST'), 404, 'not-found');
      expectProblem(await app.admin('POST', '/admin/v1/keys/K-DOESNOTEXIST/rotate'), 404, 'not-found');
    });

    it('revokes the old key of a rotation at once too', async () => {
      const k = await newKey({});
      const rotated = (await app.admin('POST', `/admin/v1/keys/${k.id}/rotate`)).body.data;
      expect((await app.http('GET', '/v1/ping', { key: k.key })).status).toBe(200);
      expect((await app.admin('DELETE', `/admin/v1/keys/${k.id}`)).status).toBe(200);
      expectProblem(await app.http('GET', '/v1/ping', { key: k.key }), 401, 'unauthenticated');
      expect((await app.http('GET', '/v1/ping', { key: rotated.key })).status).toBe(200);
    });

    it('revokes at once on every replica, even one that just used (and cached) the key', async () => {
      const second = await startStandalone({
        databaseUrl: app.databaseUrl, port: 0, adminToken: app.adminToken, adminTokenGenerated: false, baseUrl: BASE,
      }, false);
      const b = await startTestApp({}, { url: second.url, adminToken: app.adminToken, databaseUrl: app.databaseUrl, close: () => second.app.close() });
      try {
        for (let i = 0; i < 3; i++) {
          const k = await newKey({});
          expect((await b.http('GET', '/v1/ping', { key: k.key })).status).toBe(200);
          expect((await app.admin('DELETE', `/admin/v1/keys/${k.id}`)).status).toBe(200);
          expectProblem(await b.http('GET', '/v1/ping', { key: k.key }), 401, 'unauthenticated');
        }
        // rotation with a grace period still lets the old key work on both
        const k = await newKey({});
        expect((await b.http('GET', '/v1/ping', { key: k.key })).status).toBe(200);
        await app.admin('POST', `/admin/v1/keys/${k.id}/rotate`);
        expect((await b.http('GET', '/v1/ping', { key: k.key })).status).toBe(200);
      } finally {
        await second.app.close();
      }
    });

    it('stores keys hashed: no column of gateway.api_keys holds a plaintext key', async () => {
      const k = await newKey({ name: 'hash-check' });
      const rows = await query<{ t: string }>(app.databaseUrl, 'select t::text as t from gateway.api_keys t');
      expect(rows.length).toBeGreaterThanOrEqual(3);
      for (const plain of [k.key, key, testKey]) {
        expect(rows.filter((r) => r.t.includes(plain))).toEqual([]);
        // not even the secret part after the lookup prefix
        expect(rows.filter((r) => r.t.includes(plain.slice(12)))).toEqual([]);
      }
      const [row] = await query<{ hash: Buffer; prefix: string }>(app.databaseUrl, 'select hash, prefix from gateway.api_keys where id = $1', [k.id]);
      const { createHash } = await import('node:crypto');
      expect(row.hash.equals(createHash('sha256').update(k.key).digest())).toBe(true);
      expect(row.prefix).toBe(k.key.slice(0, 12));
      // listing keys shows the prefix, never the key
      const listed = await app.admin('GET', `/admin/v1/programs/${pid}/keys`);
      expect(JSON.stringify(listed.body)).not.toContain(k.key);
      expect(JSON.stringify(listed.body)).not.toContain(key);
    });
  });

  describe('problems and request ids', () => {
    it('answers malformed JSON with 400 malformed-json', async () => {
      const r = await app.http('POST', '/v1/members', { key, rawBody: '{"email": "a@b.c",' });
      expectProblem(r, 400, 'malformed-json');
    });

    it('answers a body over 1 MiB with 413 payload-too-large', async () => {
      const r = await app.http('POST', '/v1/members', { key, rawBody: JSON.stringify({ email: 'big@example.com', note: 'x'.repeat(1024 * 1024 + 10) }) });
      expectProblem(r, 413, 'payload-too-large');
      // just under the limit parses (and is then refused for its unknown field)
      const under = await app.http('POST', '/v1/members', { key, rawBody: JSON.stringify({ email: 'big@example.com', note: 'x'.repeat(1024 * 1024 - 100) }) });
      expectProblem(under, 422, 'validation');
    });

    it('refuses unknown fields with 422 validation and a JSON-pointer path', async () => {
      const r = await app.http('POST', '/v1/members', { key, body: { email: 'unknown@example.com', foo: 1 } });
      expectProblem(r, 422, 'validation');
      expect(r.body.errors).toEqual([expect.objectContaining({ path: '/foo', message: expect.any(String) })]);
    });

    it('points at /email for a bad email and at every failing field', async () => {
      const r = await app.http('POST', '/v1/members', { key, body: { email: 'not-an-email', marketing_consent: 'yes' } });
      expectProblem(r, 422, 'validation');
      const paths = r.body.errors.map((e: { path: string }) => e.path);
      expect(paths).toEqual(expect.arrayContaining(['/email', '/marketing_consent']));
      const missing = await app.http('POST', '/v1/members', { key, body: {} });
      expect(missing.body.errors.map((e: { path: string }) => e.path)).toContain('/email');
    });

    it('points into nested admin bodies (/rules/0/type)', async () => {
      const r = await app.admin('PUT', `/admin/v1/programs/${pid}/rules`, { rules: [{ type: 'nonsense', earn_rate_pct: 1 }, { type: 'base', earn_rate_pct: -1, extra: true }] });
      expectProblem(r, 422, 'validation');
      const paths = r.body.errors.map((e: { path: string }) => e.path);
      expect(paths).toEqual(expect.arrayContaining(['/rules/0/type', '/rules/1/earn_rate_pct', '/rules/1/extra']));
      const tiers = await app.admin('PUT', `/admin/v1/programs/${pid}/tiers`, { tiers: [{ name: 'Gold', level: 1, criteria: [{ metric: 'bogus', threshold: 1 }] }] });
      expect(tiers.body.errors.map((e: { path: string }) => e.path)).toContain('/tiers/0/criteria/0/metric');
      const q = await app.http('GET', '/v1/members?limit=abc', { key });
      expectProblem(q, 422, 'validation');
      expect(q.body.errors.map((e: { path: string }) => e.path)).toContain('/limit');
    });

    it('refuses NUL characters: 422 in a body or query, 404 in a path (never a 500)', async () => {
      const m = (await app.http('POST', '/v1/members', { key, body: { email: 'nul@example.com' } })).body.data;
      const body = await app.http('POST', '/v1/members', { key, rawBody: '{"email":"nul2@example.com","external_ref":"a\\u0000b"}' });
      expectProblem(body, 422, 'validation');
      expect(body.body.errors).toEqual([{ path: '/external_ref', message: expect.any(String) }]);
      const adj = await app.http('POST', `/v1/members/${m.id}/adjust`, { key, rawBody: '{"amount_cents":5,"reason_code":"x\\u0000"}' });
      expect(adj.body.errors?.map((e: { path: string }) => e.path)).toEqual(['/reason_code']);
      const q = await app.http('GET', '/v1/members?email=a%00b', { key });
      expectProblem(q, 422, 'validation');
      expect(q.body.errors.map((e: { path: string }) => e.path)).toEqual(['/email']);
      expectProblem(await app.http('GET', '/v1/members/ref:a%00b', { key }), 404, 'not-found');
      expectProblem(await app.http('GET', '/v1/members/%E0%A4%A', { key }), 404, 'not-found');
      expect((await app.http('GET', `/v1/members/${m.id}/ledger`, { key })).body.data).toEqual([]);
    });

    it('answers an unknown route with a 404 problem, with or without a key', async () => {
      expectProblem(await app.http('GET', '/v1/nope', { key }), 404, 'not-found');
      expectProblem(await app.http('GET', '/v1/nope'), 404, 'not-found');
      expectProblem(await app.http('POST', '/v2/members', { key, body: {} }), 404, 'not-found');
    });

    it('carries X-Request-Id on every response: echoes the caller\'s, else generates one', async () => {
      const cases = [
        await app.http('GET', '/v1/ping', { key }),
        await app.http('GET', '/v1/ping'),
        await app.http('POST', '/v1/members', { key, body: { foo: 1 } }),
        await app.http('POST', '/v1/members', { key, rawBody: '{' }),
        await app.http('GET', '/v1/nope'),
        await app.http('GET', '/healthz'),
        await app.admin('GET', `/admin/v1/programs/${pid}`),
      ];
      const ids = cases.map((r) => r.headers.get('x-request-id'));
      for (const id of ids) expect(id).toMatch(/^[\w.:-]{8,128}$/);
      expect(new Set(ids).size).toBe(ids.length);
      for (const [path, k] of [['/v1/ping', key], ['/v1/ping', undefined], ['/v1/nope', key]] as const) {
        const echoed = await app.http('GET', path, { key: k, headers: { 'x-request-id': 'req-abc.123:x' } });
        expect(echoed.headers.get('x-request-id')).toBe('req-abc.123:x');
      }
      // an unsafe value is replaced, never reflected
      const unsafe = await app.http('GET', '/v1/ping', { key, headers: { 'x-request-id': 'bad id <script>' } });
      expect(unsafe.headers.get('x-request-id')).not.toContain('<script>');
      expect(unsafe.headers.get('x-request-id')).toBeTruthy();
    });
  });

  describe('rate limit', () => {
    it('sends X-RateLimit-Limit and X-RateLimit-Remaining, counting down', async () => {
      const k = await newKey({ rate_limit: undefined });
      const a = await app.http('GET', '/v1/ping', { key: k.key });
      const b = await app.http('GET', '/v1/members', { key: k.key });
      expect(a.headers.get('x-ratelimit-limit')).toBe('50');
      expect(Number(a.headers.get('x-ratelimit-remaining'))).toBe(49);
      expect(b.headers.get('x-ratelimit-limit')).toBe('50');
      expect(Number(b.headers.get('x-ratelimit-remaining'))).toBe(48);
      // errors after authentication carry them too
      const bad = await app.http('POST', '/v1/members', { key: k.key, body: { foo: 1 } });
      expect(bad.status).toBe(422);
      expect(bad.headers.get('x-ratelimit-limit')).toBe('50');
      expect(Number(bad.headers.get('x-ratelimit-remaining'))).toBe(47);
    });

    it('refuses the 51st rapid call of a default key with 429 rate-limited, Retry-After and retry_after', async () => {
      const k = await newKey({ rate_limit: undefined });
      const results = await Promise.all(Array.from({ length: 51 }, () => app.http('GET', '/v1/ping', { key: k.key })));
      const limited = results.filter((r) => r.status === 429);
      // 10 tokens per second refill: a slow runner may regain one or two while the calls land
      expect(results.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(50);
      const more = limited.length ? limited : (await Promise.all(Array.from({ length: 5 }, () => app.http('GET', '/v1/ping', { key: k.key })))).filter((r) => r.status === 429);
      expect(more.length).toBeGreaterThanOrEqual(1);
      const r = more[0];
      expectProblem(r, 429, 'rate-limited');
      const retryAfter = r.headers.get('retry-after');
      expect(retryAfter).toMatch(/^\d+$/);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
      expect(r.body.retry_after).toBe(Number(retryAfter));
      expect(r.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(r.headers.get('x-ratelimit-limit')).toBe('50');
      // the bucket refills at 10 per second
      await sleep(1100);
      expect((await app.http('GET', '/v1/ping', { key: k.key })).status).toBe(200);
    });

    it('honours a per-key limit set by the admin', async () => {
      const k = await newKey({ rate_limit: { burst: 3, per_second: 1 } });
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await app.http('GET', '/v1/ping', { key: k.key })).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
    });

    it('shares one bucket between two gateway instances through Redis', async () => {
      const a = await startTestApp({ redisUrl: REDIS });
      const second = await startStandalone({
        databaseUrl: a.databaseUrl, port: 0, adminToken: a.adminToken, adminTokenGenerated: false, baseUrl: BASE, redisUrl: REDIS,
      }, false);
      const b = await startTestApp({}, { url: second.url, adminToken: a.adminToken, databaseUrl: a.databaseUrl, close: () => second.app.close() });
      try {
        const p = await a.createProgram();
        // each instance knows the key (same database)
        expect((await b.http('GET', '/v1/ping', { key: p.liveKey })).status).toBe(200);
        const calls = Array.from({ length: 80 }, (_, i) => (i % 2 ? a : b).http('GET', '/v1/ping', { key: p.liveKey }));
        const results = await Promise.all(calls);
        const ok = results.filter((r) => r.status === 200).length;
        // 50 burst in total (one already spent above), plus what refills while the calls land
        expect(ok).toBeGreaterThanOrEqual(45);
        expect(ok).toBeLessThanOrEqual(56);
        expect(results.filter((r) => r.status === 429).length).toBe(80 - ok);
        // both instances refused some: the bucket is not per process
        const refusedBy = new Set(results.map((r, i) => (r.status === 429 ? i % 2 : -1)).filter((x) => x >= 0));
        expect(refusedBy.size).toBe(2);
        // a different key has its own bucket
        expect((await a.http('GET', '/v1/ping', { key: p.testKey })).status).toBe(200);
      } finally {
        await second.app.close();
        await a.close();
      }
    });
  });

  describe('Idempotency-Key', () => {
    it('replays an enrolment with the same status, body and Idempotent-Replay: true', async () => {
      const headers = { 'idempotency-key': 'enrol-replay-1' };
      const body = { email: 'replay@example.com', marketing_consent: true };
      const first = await app.http('POST', '/v1/members', { key, body, headers });
      expect(first.status).toBe(201);
      expect(first.headers.get('idempotent-replay')).toBeNull();
      const again = await app.http('POST', '/v1/members', { key, body: { marketing_consent: true, email: 'replay@example.com' }, headers });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replay')).toBe('true');
      expect(again.body).toEqual(first.body);
      // without the key the same call is a plain "already enrolled"
      expect((await app.http('POST', '/v1/members', { key, body })).status).toBe(200);
      // a 200 original replays as 200
      const h2 = { 'idempotency-key': 'enrol-replay-2' };
      const second = await app.http('POST', '/v1/members', { key, body, headers: h2 });
      const secondAgain = await app.http('POST', '/v1/members', { key, body, headers: h2 });
      expect([second.status, secondAgain.status]).toEqual([200, 200]);
      expect(secondAgain.headers.get('idempotent-replay')).toBe('true');
    });

    it('runs an adjustment once for one key (two calls → one ledger entry)', async () => {
      const m = (await app.http('POST', '/v1/members', { key, body: { email: 'adjust-once@example.com' } })).body.data;
      const headers = { 'idempotency-key': 'adj-once-1' };
      const body = { amount_cents: 1250, reason_code: 'goodwill' };
      const a = await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body, headers });
      const b = await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body, headers });
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(b.headers.get('idempotent-replay')).toBe('true');
      expect(b.body).toEqual(a.body);
      const ledger = await app.http('GET', `/v1/members/${m.id}/ledger`, { key });
      expect(ledger.body.data).toHaveLength(1);
      expect((await app.http('GET', `/v1/members/${m.id}`, { key })).body.data.balances.available_cents).toBe(1250);
    });

    it('answers the same key with a different body with 409 idempotency-key-reused', async () => {
      const headers = { 'idempotency-key': 'reuse-1' };
      expect((await app.http('POST', '/v1/members', { key, body: { email: 'reuse-a@example.com' }, headers })).status).toBe(201);
      const r = await app.http('POST', '/v1/members', { key, body: { email: 'reuse-b@example.com' }, headers });
      expectProblem(r, 409, 'idempotency-key-reused');
      // nothing ran for the second body
      expect((await app.http('GET', '/v1/members?email=reuse-b@example.com', { key })).body.data).toEqual([]);
      // the same key on another endpoint is another body too
      const m = (await app.http('GET', '/v1/members?email=reuse-a@example.com', { key })).body.data[0];
      expectProblem(await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: 1, reason_code: 'x' }, headers }), 409, 'idempotency-key-reused');
    });

    it('answers 409 idempotency-in-progress with reason in_progress and Retry-After while the first call runs', async () => {
      const headers = { 'idempotency-key': 'in-flight-1' };
      const body = { email: 'inflight@example.com' };
      const first = await app.http('POST', '/v1/members', { key, body, headers });
      expect(first.status).toBe(201);
      // put the record back in flight, as it is while the first call runs
      const ping = await app.http('GET', '/v1/ping', { key });
      const tenant = ping.body.data.program_id;
      const updated = await query(app.databaseUrl, `update gateway.idempotency set state = 'in_progress', response_status = null, response_body = null where tenant = $1 and key = $2 returning 1`, [tenant, 'in-flight-1']);
      expect(updated).toHaveLength(1);
      const r = await app.http('POST', '/v1/members', { key, body, headers });
      expectProblem(r, 409, 'idempotency-in-progress');
      expect(r.body.reason).toBe('in_progress');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // a record left in flight by a crashed call is taken over after a while
      await query(app.databaseUrl, `update gateway.idempotency set created_at = now() - interval '5 minutes' where tenant = $1 and key = $2`, [tenant, 'in-flight-1']);
      const takeover = await app.http('POST', '/v1/members', { key, body, headers });
      expect(takeover.status).toBe(200);
      expect(takeover.body.data.id).toBe(first.body.data.id);
    });

    it('resolves two concurrent identical calls to one run: one 201, the other 201 replay or 409 in_progress', async () => {
      const headers = { 'idempotency-key': 'concurrent-1' };
      const body = { email: 'concurrent-idem@example.com' };
      const rs = await Promise.all([1, 2, 3].map(() => app.http('POST', '/v1/members', { key, body, headers })));
      const fresh = rs.filter((r) => r.status === 201 && r.headers.get('idempotent-replay') === null);
      expect(fresh).toHaveLength(1);
      for (const r of rs) {
        if (r === fresh[0]) continue;
        if (r.status === 409) expect(r.body.reason).toBe('in_progress');
        else {
          expect(r.status).toBe(201);
          expect(r.headers.get('idempotent-replay')).toBe('true');
          expect(r.body.data.id).toBe(fresh[0].body.data.id);
        }
      }
    });

    it('forgets a failed first call: the same key runs again with a valid body', async () => {
      const headers = { 'idempotency-key': 'failed-first-1' };
      const bad = await app.http('POST', '/v1/members', { key, body: { email: 'nope' }, headers });
      expectProblem(bad, 422, 'validation');
      const good = await app.http('POST', '/v1/members', { key, body: { email: 'failed-first@example.com' }, headers });
      expect(good.status).toBe(201);
      expect(good.headers.get('idempotent-replay')).toBeNull();
      // a domain failure (409 phone-conflict) is not remembered either
      const owner = await app.http('POST', '/v1/members', { key, body: { email: 'phone-owner@example.com', phone: '+14155550123' } });
      expect(owner.status).toBe(201);
      const h2 = { 'idempotency-key': 'failed-first-2' };
      const conflict = await app.http('POST', '/v1/members', { key, body: { email: 'phone-taker@example.com', phone: '+14155550123' }, headers: h2 });
      expectProblem(conflict, 409, 'phone-conflict');
      const retry = await app.http('POST', '/v1/members', { key, body: { email: 'phone-taker@example.com' }, headers: h2 });
      expect(retry.status).toBe(201);
    });

    it('refuses an Idempotency-Key longer than 255 characters', async () => {
      const r = await app.http('POST', '/v1/members', { key, body: { email: 'longkey@example.com' }, headers: { 'idempotency-key': 'k'.repeat(256) } });
      expectProblem(r, 422, 'validation');
    });

    it('keeps keys apart per programme partition (live and sandbox)', async () => {
      const headers = { 'idempotency-key': 'per-tenant-1' };
      const a = await app.http('POST', '/v1/members', { key, body: { email: 'tenant-idem@example.com' }, headers });
      const b = await app.http('POST', '/v1/members', { key: testKey, body: { email: 'tenant-idem@example.com' }, headers });
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(b.headers.get('idempotent-replay')).toBeNull();
      expect(a.body.data.id).not.toBe(b.body.data.id);
    });
  });

  describe('operations', () => {
    it('serves /healthz, /readyz and Prometheus /metrics without a key', async () => {
      const h = await app.http('GET', '/healthz');
      expect(h.status).toBe(200);
      const r = await app.http('GET', '/readyz');
      expect(r.status).toBe(200);
      expect(r.body.checks.database).toBe('up');
      const m = await app.http('GET', '/metrics');
      expect(m.status).toBe(200);
      expect(m.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(m.body).toMatch(/^# HELP /m);
      expect(m.body).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/v1\/members"/);
      expect(m.body).toContain('process_cpu_seconds_total');
      // issue 13: the aggregate state caches, bounded in bytes, with their hits and misses
      const figure = (line: RegExp) => Number(line.exec(m.body)?.[1] ?? Number.NaN);
      expect(figure(/^loyalty_state_cache_misses_total\{cache="command_handler"\} (\d+)/m)).toBeGreaterThan(0);
      expect(figure(/^loyalty_state_cache_hits_total\{cache="command_handler"\} (\d+)/m)).toBeGreaterThan(0);
      // 64 MiB by default per command handler (summed over the apps this test process has started)
      const budget = figure(/^loyalty_state_cache_max_bytes\{cache="command_handler"\} (\d+)/m);
      expect(budget).toBeGreaterThan(0);
      expect(budget % (64 * 1024 * 1024)).toBe(0);
      expect(figure(/^loyalty_state_cache_bytes\{cache="member_fold"\} (\d+)/m)).toBeGreaterThan(0);
    });

    it('serves an OpenAPI 3 document listing /v1/members and HTML docs at /docs', async () => {
      const o = await app.http('GET', '/openapi.json');
      expect(o.status).toBe(200);
      expect(o.body.openapi).toMatch(/^3\./);
      expect(Object.keys(o.body.paths)).toEqual(expect.arrayContaining(['/v1/members', '/v1/members/{id}', '/v1/members/{id}/adjust', '/v1/ping']));
      expect(o.body.paths['/v1/members'].post).toBeDefined();
      const d = await app.http('GET', '/docs');
      expect(d.status).toBe(200);
      expect(d.headers.get('content-type')).toMatch(/text\/html/);
      expect(String(d.body)).toMatch(/<html/i);
    });
  });
});

describe('gateway with a short rotation grace', () => {
  let app: TestApp;
  beforeAll(async () => { app = await startTestApp({ keyRotationGraceSeconds: 1 }); });
  afterAll(async () => app.close());

  it('stops the old key after the grace period while the new one keeps working', async () => {
    const p = await app.createProgram();
    const r = await app.admin('POST', `/admin/v1/keys/${p.liveKeyId}/rotate`);
    expect(r.status).toBe(201);
    expect(Date.parse(r.body.data.old_key_expires_at) - Date.now()).toBeLessThanOrEqual(1000);
    expect((await app.http('GET', '/v1/ping', { key: p.liveKey })).status).toBe(200);
    await sleep(1500);
    const old = await app.http('GET', '/v1/ping', { key: p.liveKey });
    expectProblem(old, 401, 'unauthenticated');
    expect((await app.http('GET', '/v1/ping', { key: r.body.data.key })).status).toBe(200);
    // the lapsed key cannot be rotated back to life; the new one can be rotated
    expectProblem(await app.admin('POST', `/admin/v1/keys/${p.liveKeyId}/rotate`), 409, 'invalid-state');
    expect((await app.admin('POST', `/admin/v1/keys/${r.body.data.id}/rotate`)).status).toBe(201);
    // the sandbox key of the programme was not touched
    expect((await app.http('GET', '/v1/ping', { key: p.testKey })).status).toBe(200);
  });
});

describe('gateway logs', () => {
  it('never writes an API key to the logs', async () => {
    const db = await freshDatabaseUrl('logs');
    const written: string[] = [];
    const capture = (stream: NodeJS.WriteStream) => jest.spyOn(stream, 'write').mockImplementation(((chunk: unknown) => {
      written.push(String(chunk));
      return true;
    }) as never);
    const out = capture(process.stdout);
    const err = capture(process.stderr);
    let started: Awaited<ReturnType<typeof startStandalone>> | undefined;
    // the harness's silent apps switched Nest's process-wide logger off; this app logs as in production
    Logger.overrideLogger(new ConsoleLogger());
    try {
      started = await startStandalone({ databaseUrl: db.url, port: 0, adminToken: 'adm_logs_test_token', adminTokenGenerated: false, baseUrl: BASE, logLevel: 'debug' });
      const t = await startTestApp({}, { url: started.url, adminToken: 'adm_logs_test_token', databaseUrl: db.url, close: async () => undefined });
      const p = await t.createProgram();
      const rotated = (await t.admin('POST', `/admin/v1/keys/${p.liveKeyId}/rotate`)).body.data.key as string;
      await t.http('GET', '/v1/ping', { key: p.liveKey });
      await t.http('POST', '/v1/members', { key: p.liveKey, body: { email: 'log@example.com' } });
      await t.http('POST', '/v1/members', { key: p.liveKey, rawBody: '{oops' });
      await t.http('GET', '/v1/ping', { key: `svc_live_${'Z'.repeat(32)}` });
      await t.admin('DELETE', `/admin/v1/keys/${p.liveKeyId}`);
      await t.http('GET', '/v1/ping', { key: p.liveKey });
      await t.http('GET', '/v1/members/M-00000000000000000000000000', { key: p.testKey, headers: { 'x-request-id': 'log-req-1' } });
      await t.http('GET', '/v1/members/ref:private-ref-77?limit=0', { key: rotated });
      await t.http('GET', '/v1/members?email=log@example.com', { key: rotated });
      await t.http('GET', '/v1/members/phone:%2B14155550111', { key: rotated });
      await started.app.close();
      started = undefined;
      const all = written.join('');
      // one access-log line per request, with the request id and the key's id (never the key)
      // (the request's other lines carry its id too: issue 11)
      const line = written.find((w) => w.includes('"request_id":"log-req-1"') && w.includes('"msg":"http request"'));
      expect(line).toBeDefined();
      expect(line).toContain('"status":404');
      expect(line).toContain(`"key_id":"${p.testKeyId}"`);
      expect(line).toContain('"path":"/v1/members/M-00000000000000000000000000"');
      for (const secret of [p.liveKey, p.testKey, rotated, `svc_live_${'Z'.repeat(32)}`, 'adm_logs_test_token']) {
        expect(all).not.toContain(secret);
        expect(all).not.toContain(secret.slice(12));
      }
      // nor personal identifiers from URLs
      for (const pii of ['private-ref-77', 'log@example.com', '14155550111']) expect(all).not.toContain(pii);
    } finally {
      out.mockRestore();
      err.mockRestore();
      Logger.overrideLogger(false);
      await started?.app.close();
      await db.drop();
    }
  });
});
