import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { TestApp, startTestApp } from './testing/harness';

/**
 * Hostile input through real HTTP (issue 8): nothing an unauthenticated or authenticated caller
 * sends may end the process or answer a 5xx; every refusal is an RFC 9457 problem with the
 * JSON pointer of the offending field.
 */

const BASE = 'https://loyalty.test';
const BIG = { burst: 100000, per_second: 100000 };
const MAX = Number.MAX_SAFE_INTEGER;

type R = { status: number; headers: Headers; body: any };
const expectProblem = (r: R, status: number, slug: string, paths?: string[]) => {
  expect({ status: r.status, type: r.body?.type }).toEqual({ status, type: `${BASE}/docs/api/errors#${slug}` });
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  if (paths) expect(r.body.errors.map((e: { path: string }) => e.path)).toEqual(paths);
};
const forged = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);

describe('hostile input (standalone, over HTTP)', () => {
  let app: TestApp;
  let pid: string;
  let key: string;
  let testKey: string;
  let memberId: string;

  beforeAll(async () => {
    app = await startTestApp();
    const p = await app.createProgram({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 10, timing: 'immediate' }] });
    pid = p.programId;
    key = (await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'live', rate_limit: BIG })).body.data.key;
    testKey = (await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'test', rate_limit: BIG })).body.data.key;
    const m = await app.http('POST', '/v1/members', { key, body: { email: 'hostile@example.com' } });
    expect(m.status).toBe(201);
    memberId = m.body.data.id;
  });
  afterAll(async () => { await app?.close(); });

  const alive = async () => expect((await app.http('GET', '/healthz')).status).toBe(200);

  describe('1. deeply nested bodies', () => {
    it('refuses a ~7 KB body of a few thousand nested arrays, without credentials, on any path, and stays up', async () => {
      for (const path of ['/v1/members', '/v1/nope', '/admin/v1/programs', '/v1/events']) {
        const r = await app.http('POST', path, { rawBody: deep(3500) });
        expectProblem(r, 422, 'validation');
        expect(r.body.errors[0].message).toMatch(/nesting deeper than 32 levels/);
      }
      await alive();
    });

    it('refuses deep nesting inside a field with its pointer, authenticated and with an Idempotency-Key', async () => {
      const r = await app.http('POST', '/v1/members', { key, headers: { 'idempotency-key': 'deep-1' }, rawBody: `{"email":"d@example.com","external_ref":${deep(50_000)}}` });
      expectProblem(r, 422, 'validation');
      expect(r.body.errors[0].path).toMatch(/^\/external_ref(\/0)+$/);
      const patch = await app.http('PATCH', `/v1/members/${memberId}`, { key, rawBody: `{"phone":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}` });
      expectProblem(patch, 422, 'validation');
      await alive();
    });
  });

  describe('2. inputs that answered 500', () => {
    it.each([
      ['[]', forged([])], ['["x"]', forged(['x'])], ['[1e308]', forged([1e308])], ['a huge number', forged(['9'.repeat(40)])], ['an object', forged({})],
    ])('refuses a forged cursor (%s) on every paginated list with 422 at /cursor', async (_name, cursor) => {
      const ep = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body: { url: 'http://127.0.0.1:9/hook', events: ['member.enrolled'] } });
      expect(ep.status).toBe(201);
      for (const path of ['/v1/members', `/v1/members/${memberId}/ledger`, '/v1/events', `/v1/webhook_endpoints/${ep.body.data.id}/deliveries`]) {
        const r = await app.http('GET', `${path}?cursor=${cursor}`, { key: path.includes('webhook') ? testKey : key });
        expectProblem(r, 422, 'validation', ['/cursor']);
      }
    });

    it('refuses unpaired UTF-16 surrogates in any string field before storing', async () => {
      expectProblem(await app.http('POST', '/v1/members', { key, body: { email: 'sur@example.com', external_ref: 'a\ud800' } }), 422, 'validation', ['/external_ref']);
      expectProblem(await app.http('POST', '/v1/members', { key, rawBody: '{"email":"sur@example.com","phone":"\\udc00"}' }), 422, 'validation', ['/phone']);
      expectProblem(await app.http('POST', `/v1/members/${memberId}/adjust`, { key, body: { amount_cents: 1, reason_code: 'x', note: '\ud83d' } }), 422, 'validation', ['/note']);
      expectProblem(await app.http('POST', '/v1/events', { key, body: { type: 'order.paid', order_ref: 'o\ud800', gross_cents: 100, email: 'hostile@example.com' } }), 422, 'validation', ['/order_ref']);
      expectProblem(await app.admin('PATCH', `/admin/v1/programs/${pid}`, { program_name: '\udfff' }), 422, 'validation', ['/program_name']);
      expect((await app.http('GET', '/v1/members?email=sur%40example.com', { key })).body.data).toEqual([]);
    });

    it('refuses null in optional member fields (enrol, PATCH, resolve)', async () => {
      expectProblem(await app.http('POST', '/v1/members', { key, body: { email: 'null@example.com', phone: null } }), 422, 'validation', ['/phone']);
      expectProblem(await app.http('PATCH', `/v1/members/${memberId}`, { key, body: { phone: null } }), 422, 'validation', ['/phone']);
      expectProblem(await app.http('POST', '/v1/members/resolve', { key, body: { phone: null } }), 422, 'validation', ['/phone']);
      expectProblem(await app.http('POST', '/v1/members/resolve', { key, body: { email: null } }), 422, 'validation', ['/email']);
      expectProblem(await app.http('POST', '/v1/members/resolve', { key, body: { email: 'hostile@example.com', external_ref: null } }), 422, 'validation', ['/external_ref']);
      const member = await app.http('GET', `/v1/members/${memberId}`, { key });
      expect(member.status).toBe(200);
    });

    it('refuses admin inputs out of range, and a refused clock advance leaves the sandbox working', async () => {
      expectProblem(await app.admin('POST', `/admin/v1/programs/${pid}/test-clock/advance`, { seconds: 2 ** 53 }), 422, 'validation', ['/seconds']);
      expectProblem(await app.admin('POST', `/admin/v1/programs/${pid}/test-clock/advance`, { seconds: 1e308 }), 422, 'validation', ['/seconds']);
      const ok = await app.admin('POST', `/admin/v1/programs/${pid}/test-clock/advance`, { seconds: 60 });
      expect(ok.status).toBe(200);
      expect((await app.http('POST', '/v1/members', { key: testKey, body: { email: 'clock@example.com' } })).status).toBe(201);

      expectProblem(await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'live', scopes: null }), 422, 'validation', ['/scopes']);
      expectProblem(await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'live', rate_limit: { burst: 2 ** 31, per_second: 1 } }), 422, 'validation', ['/rate_limit/burst']);
      expectProblem(await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'live', rate_limit: { burst: 10, per_second: 2 ** 40 } }), 422, 'validation', ['/rate_limit/per_second']);
      expectProblem(await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'live', rate_limit: null }), 422, 'validation', ['/rate_limit']);
      expectProblem(await app.admin('GET', `/admin/v1/programs/${pid}/rejected-calls?limit=2.5`), 422, 'validation', ['/limit']);
      expect((await app.admin('GET', `/admin/v1/programs/${pid}/rejected-calls?limit=2`)).status).toBe(200);
      expectProblem(await app.admin('PUT', `/admin/v1/programs/${pid}/rules`, { rules: [{ type: 'base', earn_rate_pct: 1e308 }] }), 422, 'validation', ['/rules/0/earn_rate_pct']);
      for (const [path, body] of [['rules', { rules: [[]] }], ['rules', { rules: [null] }], ['tiers', { tiers: ['gold'] }]] as const) {
        const r = await app.admin('PUT', `/admin/v1/programs/${pid}/${path}`, body);
        expectProblem(r, 422, 'validation');
        expect(r.body.errors[0]).toEqual({ path: `/${path}`, message: `each value in ${path} must be an object` });
      }
      // the programme still earns: a valid order is credited
      const order = await app.http('POST', '/v1/events', { key, body: { type: 'order.paid', order_ref: 'after-admin', gross_cents: 1000, email: 'hostile@example.com' } });
      expect(order.status).toBe(202);
    });
  });

  describe('3. money stays exact', () => {
    it('refuses an adjust that would take the balance past 2^53 - 1 with a 422 and changes nothing', async () => {
      const m = (await app.http('POST', '/v1/members', { key, body: { email: 'rich@example.com' } })).body.data;
      expect((await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: MAX, reason_code: 'seed' } })).status).toBe(201);
      const second = await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: MAX, reason_code: 'again' } });
      expectProblem(second, 422, 'rule-ineligible');
      const one = await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: 1, reason_code: 'one more' } });
      expectProblem(one, 422, 'rule-ineligible');
      const after = (await app.http('GET', `/v1/members/${m.id}`, { key })).body.data;
      expect(after.balances.available_cents).toBe(MAX);
      expect(Number.isSafeInteger(after.balances.lifetime_earned_cents)).toBe(true);
      expect((await app.http('GET', `/v1/members/${m.id}/ledger`, { key })).body.data).toHaveLength(1);
      // a debit still works, and so does a credit back up to the limit
      expect((await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: -5, reason_code: 'debit' } })).status).toBe(201);
    });
  });

  describe('4. validation at the door', () => {
    it('refuses a batch of more than 100 events with 422 every time, never 429', async () => {
      const slow = (await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'live', rate_limit: { burst: 5, per_second: 1 } })).body.data.key;
      const events = Array.from({ length: 101 }, (_, i) => ({ id: `big-${i}`, type: 'order.paid', order_ref: `big-${i}`, gross_cents: 1, email: 'hostile@example.com' }));
      for (let i = 0; i < 3; i++) {
        expectProblem(await app.http('POST', '/v1/events', { key: slow, body: { events } }), 422, 'validation', ['/events']);
      }
      // a full batch of 100 on a key whose burst is below its cost is still accepted (cost capped at the burst)
      const fresh = (await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'live', rate_limit: { burst: 5, per_second: 1 } })).body.data.key;
      const ok = await app.http('POST', '/v1/events', { key: fresh, body: { events: events.slice(0, 100) } });
      expect(ok.status).toBe(202);
    });

    it('refuses an order line that is not an object synchronously', async () => {
      for (const line of [1, 'x', null, [], true]) {
        const r = await app.http('POST', '/v1/events', { key, body: { type: 'order.paid', order_ref: `bad-line-${String(line)}`, gross_cents: 10, email: 'hostile@example.com', lines: [{ amount_cents: 5 }, line] } });
        expectProblem(r, 422, 'validation', ['/lines/1']);
      }
      const batch = await app.http('POST', '/v1/events', { key, body: { events: [{ id: 'bl', type: 'order.paid', order_ref: 'bl', gross_cents: 1, email: 'hostile@example.com', lines: ['x'] }] } });
      expectProblem(batch, 422, 'validation', ['/events/0/lines/0']);
    });

    it('treats __proto__ and constructor keys as unknown fields', async () => {
      expectProblem(await app.http('POST', '/v1/members', { key, rawBody: '{"email":"proto@example.com","__proto__":{"x":1}}' }), 422, 'validation', ['/__proto__']);
      expectProblem(await app.http('POST', '/v1/events', { key, rawBody: '{"type":"order.paid","order_ref":"p","gross_cents":1,"constructor":{}}' }), 422, 'validation', ['/constructor']);
      expectProblem(await app.admin('POST', '/admin/v1/programs', JSON.parse('{"program_name":"p","currency_name":"c","settings":{"__proto__":{}}}')), 422, 'validation', ['/settings/__proto__']);
    });

    it('refuses a webhook URL without a host', async () => {
      for (const url of ['https:///path', 'https:/example.com/x', 'https://./x']) {
        expectProblem(await app.http('POST', '/v1/webhook_endpoints', { key, body: { url, events: ['member.enrolled'] } }), 422, 'validation', ['/url']);
      }
    });

    it("refuses a sandbox webhook on the service's own listening port at creation", async () => {
      const port = new URL(app.url).port;
      const r = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body: { url: `http://127.0.0.1:${port}/v1/ping`, events: ['member.enrolled'] } });
      expectProblem(r, 422, 'validation', ['/url']);
      expect(r.body.errors[0].message).toMatch(/own port/);
      const viaName = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body: { url: `http://localhost:${port}/`, events: ['member.enrolled'] } });
      expectProblem(viaName, 422, 'validation', ['/url']);
    });

    it("refuses /test on a sandbox endpoint whose URL is (now) one of the service's own ports, without connecting to it", async () => {
      // a loopback receiver that counts the connections made to it
      let connections = 0;
      const receiver = createServer((_req, res) => { res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'); });
      receiver.on('connection', () => { connections += 1; });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
      const port = (receiver.address() as AddressInfo).port;
      const saved = process.env.LOYALTY_RESERVED_PORTS;
      try {
        const created = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body: { url: `http://127.0.0.1:${port}/hook`, events: ['member.enrolled'] } });
        expect(created.status).toBe(201);
        const id = created.body.data.id as string;
        const test = () => app.http('POST', `/v1/webhook_endpoints/${id}/test`, { key: testKey });
        const refusal = { status_code: null, ok: false, error: "the url points to one of the service's own ports" };

        // a loopback port that is not the service's: the sandbox may test it (decisions §8)
        expect((await test()).body.data).toMatchObject({ status_code: 200, ok: true });
        expect(connections).toBe(1);

        // the same port once the deployment listens there (the distributed topology lists each of
        // its processes' ports in LOYALTY_RESERVED_PORTS): refused before any connection is made
        process.env.LOYALTY_RESERVED_PORTS = String(port);
        const refused = await test();
        expect(refused.status).toBe(200);
        expect(refused.body.data).toMatchObject(refusal);
        expect(connections).toBe(1);

        // an endpoint stored before the service came to listen on its port: its own listening port,
        // by address and by name, is never probed
        const db = new Client({ connectionString: app.databaseUrl });
        await db.connect();
        try {
          for (const url of [`http://127.0.0.1:${new URL(app.url).port}/v1/ping`, `http://localhost:${new URL(app.url).port}/healthz`]) {
            await db.query('update webhook.endpoints set url = $1 where id = $2', [url, id]);
            expect((await test()).body.data).toMatchObject(refusal);
          }
        } finally {
          await db.end();
        }
      } finally {
        if (saved === undefined) delete process.env.LOYALTY_RESERVED_PORTS; else process.env.LOYALTY_RESERVED_PORTS = saved;
        await new Promise<void>((r) => { receiver.closeAllConnections(); receiver.close(() => r()); });
      }
    });
  });
});
