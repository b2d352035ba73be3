import { createHmac, randomUUID } from 'node:crypto';
import { IncomingHttpHeaders, Server, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { eventually } from '@loyalty/testing';
import { HttpResult, TestApp, startTestApp } from './testing/harness';

/**
 * Black-box conformance: every concrete statement of `shared/spec/interface-spec.md` and
 * `shared/spec/decisions.md` that can be checked over HTTP, checked over real HTTP on the
 * standalone app. Nothing here looks inside the service: only paths, statuses, headers and bodies.
 */

const BASE = 'https://loyalty.test';
const ALL = ['ingest', 'read', 'act', 'webhooks'] as const;
const FAST = { burst: 100_000, per_second: 100_000 };
const ULID = '[0-9A-HJKMNP-TV-Z]{26}';
const CROCKFORD = '[0-9A-HJKMNP-TV-Z]';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const id = (prefix: string) => new RegExp(`^${prefix}-${ULID}$`);

type R = HttpResult<any>;

const expectProblem = (r: R, status: number, slug: string) => {
  expect({ status: r.status, type: r.body?.type }).toEqual({ status, type: `${BASE}/docs/api/errors#${slug}` });
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.body.status).toBe(status);
  expect(typeof r.body.title).toBe('string');
  expect(r.body.title.length).toBeGreaterThan(0);
  if (r.body.detail !== undefined) expect(typeof r.body.detail).toBe('string');
  expect(r.headers.get('x-request-id')).toBeTruthy();
  expect(r.body).not.toHaveProperty('data');
};

const expectValidation = (r: R, ...paths: string[]) => {
  expectProblem(r, 422, 'validation');
  expect(Array.isArray(r.body.errors)).toBe(true);
  for (const e of r.body.errors) {
    expect(typeof e.path).toBe('string');
    expect(typeof e.message).toBe('string');
  }
  const got = r.body.errors.map((e: { path: string }) => e.path);
  expect(got).toEqual(expect.arrayContaining(paths));
};

/** `{ data }` with the request id and rate-limit headers. */
const expectData = (r: R, status: number) => {
  expect({ status: r.status, body: r.status === status ? 'ok' : r.body }).toEqual({ status, body: 'ok' });
  expect(r.headers.get('content-type')).toMatch(/^application\/json/);
  expect(r.body).toHaveProperty('data');
  expect(r.headers.get('x-request-id')).toBeTruthy();
  expect(r.headers.get('x-ratelimit-limit')).toMatch(/^\d+$/);
  expect(r.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
  return r.body.data;
};

/** `{ data: [...], pagination: { cursor } }`. */
const expectList = (r: R) => {
  const data = expectData(r, 200);
  expect(Array.isArray(data)).toBe(true);
  expect(r.body).toHaveProperty('pagination');
  expect(r.body.pagination).toHaveProperty('cursor');
  expect(r.body.pagination.cursor === null || typeof r.body.pagination.cursor === 'string').toBe(true);
  return data as any[];
};

const BALANCE_FIELDS = ['pending_cents', 'available_cents', 'reserved_cents', 'spendable_cents', 'lifetime_earned_cents', 'lifetime_redeemed_cents'];

const expectMember = (m: any) => {
  expect(m.id).toMatch(id('M'));
  for (const f of ['email', 'phone', 'external_ref', 'state', 'referral_code', 'tier', 'balances', 'expiring_30d_cents', 'enrolled_at']) expect(m).toHaveProperty(f);
  expect(['prospect', 'registered', 'active', 'paused', 'suspended', 'deleted', 'anonymised']).toContain(m.state);
  expect(m.referral_code).toMatch(new RegExp(`^${CROCKFORD}{8}$`));
  for (const f of BALANCE_FIELDS) expect(Number.isSafeInteger(m.balances[f])).toBe(true);
  expect(m.balances.spendable_cents).toBe(m.balances.available_cents - m.balances.reserved_cents);
  expect(Number.isSafeInteger(m.expiring_30d_cents)).toBe(true);
  if (m.enrolled_at !== null) expect(m.enrolled_at).toMatch(ISO);
  if (m.tier !== null) {
    expect(typeof m.tier.name).toBe('string');
    expect(Number.isInteger(m.tier.level)).toBe(true);
    expect(typeof m.tier.earn_multiplier).toBe('number');
    expect(typeof m.tier.benefits).toBe('object');
  }
  // internal identifiers never appear (the caller's own email and refs aside)
  expect(JSON.stringify({ ...m, email: null, external_ref: null })).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/);
};

const expectLedgerEntry = (e: any) => {
  expect(e.id).toMatch(id('LE'));
  expect(['earn', 'redeem', 'expire', 'reverse', 'adjust']).toContain(e.type);
  expect(['pending', 'under_review', 'posted', 'reversed', 'rejected']).toContain(e.status);
  expect(Number.isSafeInteger(e.amount_cents)).toBe(true);
  expect(typeof e.currency).toBe('string');
  for (const f of ['reason_code', 'rule', 'parent_entry_id', 'release_at', 'expires_at']) expect(e).toHaveProperty(f);
  for (const f of ['release_at', 'expires_at']) if (e[f] !== null) expect(e[f]).toMatch(ISO);
  expect(e.created_at).toMatch(ISO);
};

const expectEventStatus = (e: any) => {
  expect(e.id).toMatch(id('EV'));
  expect(typeof e.type).toBe('string');
  expect(['queued', 'running', 'completed', 'failed']).toContain(e.status);
  expect(e).toHaveProperty('error');
  expect(Array.isArray(e.ledger_entry_ids)).toBe(true);
  expect(e.received_at).toMatch(ISO);
  expect(e).toHaveProperty('processed_at');
  if (e.processed_at !== null) expect(e.processed_at).toMatch(ISO);
};

const expectRedemption = (d: any) => {
  expect(d.id).toMatch(id('RD'));
  expect(['created', 'used', 'restored', 'expired', 'failed', 'pending_creation']).toContain(d.status);
  expect(['voucher', 'direct']).toContain(d.mode);
  expect(Number.isSafeInteger(d.amount_cents)).toBe(true);
  expect(d.code).toMatch(new RegExp(`^RWD-${CROCKFORD}{4}-${CROCKFORD}{4}$`));
  expect(d).toHaveProperty('order_ref');
  expect(d.ledger_entry_id).toMatch(id('LE'));
  expect(d).toHaveProperty('expires_at');
  if (d.expires_at !== null) expect(d.expires_at).toMatch(ISO);
  expect(d.created_at).toMatch(ISO);
};

const expectReservation = (d: any) => {
  for (const f of ['id', 'status', 'member_id', 'amount_cents', 'cart_ref', 'order_ref', 'ledger_entry_id', 'expires_at', 'created_at']) expect(d).toHaveProperty(f);
  expect(d.id).toMatch(id('RS'));
  expect(['open', 'confirmed', 'released', 'expired']).toContain(d.status);
  expect(d.member_id).toMatch(id('M'));
  expect(d.expires_at).toMatch(ISO);
  expect(d.created_at).toMatch(ISO);
};

interface Received { headers: IncomingHttpHeaders; raw: string; body: any }
const startReceiver = async () => {
  const seen: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = null;
      try { body = JSON.parse(raw); } catch { /* keep null */ }
      seen.push({ headers: req.headers, raw, body });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, seen, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
};

describe('conformance with interface-spec.md and decisions.md (black box, real HTTP)', () => {
  let app: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    app = await startTestApp({ sweepIntervalMs: 200 });
  });
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
  });

  /** A programme with fast keys (live and test, all scopes) plus the admin-created default keys. */
  const programme = async (body: Record<string, unknown> = {}) => {
    const p = await app.createProgram(body);
    const mint = async (mode: 'live' | 'test', scopes: readonly string[] = ALL, rate_limit: unknown = FAST) => {
      const r = await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode, scopes, rate_limit });
      expect(r.status).toBe(201);
      return r.body.data.key as string;
    };
    return { ...p, id: p.programId, key: await mint('live'), testKey: await mint('test'), mint };
  };

  const enrol = async (key: string, body: Record<string, unknown> = {}) => {
    const r = await app.http('POST', '/v1/members', { key, body: { email: `m-${randomUUID()}@example.com`, ...body } });
    expect(r.status).toBe(201);
    return r.body.data as any;
  };
  const credit = async (key: string, memberId: string, cents: number) => {
    const r = await app.http('POST', `/v1/members/${memberId}/adjust`, { key, body: { amount_cents: cents, reason_code: 'seed' } });
    expect(r.status).toBe(201);
    return r.body.data;
  };
  const member = async (key: string, mid: string) => {
    const r = await app.http('GET', `/v1/members/${mid}`, { key });
    expect(r.status).toBe(200);
    return r.body.data as any;
  };
  const ledger = async (key: string, mid: string) => {
    const r = await app.http('GET', `/v1/members/${mid}/ledger?limit=200`, { key });
    expect(r.status).toBe(200);
    return r.body.data as any[];
  };
  const postEvent = async (key: string, event: Record<string, unknown>, headers: Record<string, string> = {}) => {
    const r = await app.http('POST', '/v1/events', { key, body: event, headers });
    expect([200, 202]).toContain(r.status);
    return r.body.data.id as string;
  };
  const settled = (key: string, eid: string) =>
    eventually(async () => {
      const r = await app.http('GET', `/v1/events/${eid}`, { key });
      expect(r.status).toBe(200);
      expect(['completed', 'failed']).toContain(r.body.data.status);
      return r.body.data as any;
    }, { timeoutMs: 20_000, intervalMs: 25 });
  const send = async (key: string, event: Record<string, unknown>, headers: Record<string, string> = {}) => settled(key, await postEvent(key, event, headers));
  const advance = async (pid: string, seconds: number) => {
    const r = await app.admin('POST', `/admin/v1/programs/${pid}/test-clock/advance`, { seconds });
    expect(r.status).toBe(200);
  };

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('envelope, request ids, problems', () => {
    let p: Awaited<ReturnType<typeof programme>>;
    beforeAll(async () => { p = await programme(); });

    it('admin POST /admin/v1/programs → 201 {id P-…, program fields, keys.live/test {id, key, scopes}} with all four scopes', async () => {
      const r = await app.admin('POST', '/admin/v1/programs', { program_name: 'Conf', currency_name: 'stars' });
      const d = expectDataNoRate(r, 201);
      expect(d.id).toMatch(id('P'));
      expect(d).toMatchObject({ program_name: 'Conf', currency_name: 'stars' });
      expect(d.keys.live.key).toMatch(/^svc_live_[0-9A-Za-z]{32}$/);
      expect(d.keys.test.key).toMatch(/^svc_test_[0-9A-Za-z]{32}$/);
      expect(typeof d.keys.live.id).toBe('string');
      expect([...d.keys.live.scopes].sort()).toEqual([...ALL].sort());
      expect([...d.keys.test.scopes].sort()).toEqual([...ALL].sort());
      // keys shown once: the programme read back never carries them
      const back = await app.admin('GET', `/admin/v1/programs/${d.id}`);
      expect(back.status).toBe(200);
      expect(JSON.stringify(back.body)).not.toContain(d.keys.live.key);
    });

    it('GET /v1/ping → 200 {pong, mode, scopes} for any key; live and test', async () => {
      const k = await p.mint('live', ['webhooks']);
      const d = expectData(await app.http('GET', '/v1/ping', { key: k }), 200);
      expect(d).toMatchObject({ pong: true, mode: 'live', scopes: ['webhooks'] });
      const t = expectData(await app.http('GET', '/v1/ping', { key: p.testKey }), 200);
      expect(t.mode).toBe('test');
      expect([...t.scopes].sort()).toEqual([...ALL].sort());
    });

    it('401 unauthenticated problem for a missing, unknown or malformed key, with X-Request-Id', async () => {
      expectProblem(await app.http('GET', '/v1/ping'), 401, 'unauthenticated');
      expectProblem(await app.http('GET', '/v1/members', { key: `svc_live_${'a'.repeat(32)}` }), 401, 'unauthenticated');
      expectProblem(await app.http('GET', '/v1/members', { key: 'nonsense' }), 401, 'unauthenticated');
      expectProblem(await app.http('POST', '/v1/events', { body: { type: 'order.paid', order_ref: 'x', gross_cents: 1 } }), 401, 'unauthenticated');
    });

    it('X-Request-Id on every response: success, 204, problems, 404 routes; a caller-supplied one is echoed', async () => {
      const echoed = await app.http('GET', '/v1/ping', { key: p.key, headers: { 'X-Request-Id': 'req-abc-123' } });
      expect(echoed.headers.get('x-request-id')).toBe('req-abc-123');
      const a = await app.http('GET', '/v1/ping', { key: p.key });
      const b = await app.http('GET', '/v1/ping', { key: p.key });
      expect(a.headers.get('x-request-id')).toBeTruthy();
      expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
      expectProblem(await app.http('GET', '/v1/nowhere', { key: p.key }), 404, 'not-found');
      expect((await app.admin('GET', `/admin/v1/programs/${p.id}`)).headers.get('x-request-id')).toBeTruthy();
    });

    it('400 malformed-json for a body that is not JSON', async () => {
      expectProblem(await app.http('POST', '/v1/members', { key: p.key, rawBody: '{"email":' }), 400, 'malformed-json');
      expectProblem(await app.http('POST', '/v1/events', { key: p.key, rawBody: 'not json' }), 400, 'malformed-json');
    });

    it('413 payload-too-large for a body over 1 MiB (events and members)', async () => {
      const big = 'x'.repeat(1024 * 1024 + 1);
      expectProblem(await app.http('POST', '/v1/members', { key: p.key, rawBody: JSON.stringify({ email: 'b@example.com', note: big }) }), 413, 'payload-too-large');
      expectProblem(await app.http('POST', '/v1/events', { key: p.key, rawBody: JSON.stringify({ type: 'order.paid', order_ref: 'big', gross_cents: 1, email: 'b@example.com', pad: big }) }), 413, 'payload-too-large');
    });

    it('422 validation with errors[{path, message}] in JSON-pointer form, nested ones included', async () => {
      expectValidation(await app.http('POST', '/v1/members', { key: p.key, body: {} }), '/email');
      expectValidation(await app.http('POST', '/v1/members', { key: p.key, body: { email: 'nope' } }), '/email');
      const batch = await app.http('POST', '/v1/events', {
        key: p.key,
        body: { events: [
          { type: 'order.paid', order_ref: 'v-0', gross_cents: 1, email: 'v@example.com' },
          { type: 'order.paid', order_ref: 'v-1', gross_cents: 1, email: 'v@example.com' },
          { type: 'order.paid', order_ref: 'v-2', gross_cents: 1, email: 'v@example.com' },
          { type: 'order.paid', order_ref: 'v-3', gross_cents: -5, email: 'v@example.com' },
        ] },
      });
      expectValidation(batch, '/events/3/gross_cents');
    });
  });

  /** Admin responses carry no API-key bucket: check only the envelope and the request id. */
  const expectDataNoRate = (r: R, status: number) => {
    expect({ status: r.status, body: r.status === status ? 'ok' : r.body }).toEqual({ status, body: 'ok' });
    expect(r.headers.get('x-request-id')).toBeTruthy();
    expect(r.body).toHaveProperty('data');
    return r.body.data;
  };

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('scopes (decisions §3)', () => {
    let p: Awaited<ReturnType<typeof programme>>;
    const keys: Record<string, string> = {};
    let m: any;
    beforeAll(async () => {
      p = await programme();
      for (const s of ALL) keys[s] = await p.mint('live', [s]);
      m = await enrol(p.key, { external_ref: 'scope-m' });
    });

    const reads = () => [
      ['GET', '/v1/members'], ['GET', `/v1/members/${m.id}`], ['GET', `/v1/members/${m.id}/ledger`], ['GET', `/v1/members/${m.id}/referral`],
      ['GET', '/v1/events'], ['GET', '/v1/programs'], ['GET', '/v1/programmes'], ['GET', '/v1/tenant/liability'],
      ['GET', '/v1/redemptions?code=RWD-0000-0000'], ['GET', `/v1/events/EV-${'0'.repeat(26)}`],
    ];

    it('GET endpoints need read: other single-scope keys get 403 insufficient-scope; read passes', async () => {
      for (const [method, path] of reads()) {
        for (const s of ['ingest', 'act', 'webhooks']) expectProblem(await app.http(method, path, { key: keys[s] }), 403, 'insufficient-scope');
        const ok = await app.http(method, path, { key: keys.read });
        expect([method, path, ok.status === 200 || ok.status === 404]).toEqual([method, path, true]);
      }
    });

    it('POST /v1/events needs ingest', async () => {
      const ev = { type: 'customer.created', email: 'scope-ev@example.com' };
      for (const s of ['read', 'act', 'webhooks']) expectProblem(await app.http('POST', '/v1/events', { key: keys[s], body: ev }), 403, 'insufficient-scope');
      expect((await app.http('POST', '/v1/events', { key: keys.ingest, body: ev })).status).toBe(202);
    });

    it('enrol, resolve, PATCH, DELETE, adjust, redemptions, quotes, reservations, referrals need act', async () => {
      const calls: [string, string, unknown][] = [
        ['POST', '/v1/members', { email: 'scope-x@example.com' }],
        ['POST', '/v1/members/resolve', { email: 'scope-y@example.com' }],
        ['PATCH', `/v1/members/${m.id}`, { marketing_consent: true }],
        ['DELETE', `/v1/members/${m.id}`, undefined],
        ['POST', `/v1/members/${m.id}/adjust`, { amount_cents: 1, reason_code: 'x' }],
        ['POST', `/v1/members/${m.id}/redemptions`, { amount_cents: 1 }],
        ['POST', '/v1/redemptions/RD-00000000000000000000000000/confirm', { order_ref: 'o' }],
        ['POST', '/v1/redemptions/RD-00000000000000000000000000/void', undefined],
        ['POST', '/v1/redemption-quotes', { member_id: m.id, eligible_total_cents: 100 }],
        ['POST', '/v1/redemption-reservations', { member_id: m.id, amount_cents: 1, cart_ref: 'c' }],
        ['POST', '/v1/redemption-reservations/RS-00000000000000000000000000/confirm', { order_ref: 'o' }],
        ['POST', '/v1/redemption-reservations/RS-00000000000000000000000000/release', undefined],
        ['POST', '/v1/referrals', { code: 'ABCDEFGH', friend_member_id: m.id }],
      ];
      for (const [method, path, body] of calls) {
        for (const s of ['read', 'ingest', 'webhooks']) {
          const r = await app.http(method, path, { key: keys[s], body });
          expect([method, path, s, r.status]).toEqual([method, path, s, 403]);
          expectProblem(r, 403, 'insufficient-scope');
        }
      }
      // the act key passes the scope check (whatever the domain answer)
      const q = await app.http('POST', '/v1/redemption-quotes', { key: keys.act, body: { member_id: m.id, eligible_total_cents: 100 } });
      expect(q.status).toBe(200);
      expect((await app.http('GET', `/v1/members/${m.id}`, { key: p.key })).body.data.state).toBe('registered');
    });

    it('webhook endpoint create/delete/test need webhooks; listing needs read or webhooks', async () => {
      const body = { url: 'https://example.com/hook', events: ['member.enrolled'] };
      for (const s of ['read', 'act', 'ingest']) expectProblem(await app.http('POST', '/v1/webhook_endpoints', { key: keys[s], body }), 403, 'insufficient-scope');
      const created = await app.http('POST', '/v1/webhook_endpoints', { key: keys.webhooks, body });
      expect(created.status).toBe(201);
      const wid = created.body.data.id;
      expect((await app.http('GET', '/v1/webhook_endpoints', { key: keys.read })).status).toBe(200);
      expect((await app.http('GET', '/v1/webhook_endpoints', { key: keys.webhooks })).status).toBe(200);
      expectProblem(await app.http('GET', '/v1/webhook_endpoints', { key: keys.act }), 403, 'insufficient-scope');
      for (const s of ['read', 'act', 'ingest']) {
        expectProblem(await app.http('POST', `/v1/webhook_endpoints/${wid}/test`, { key: keys[s] }), 403, 'insufficient-scope');
        expectProblem(await app.http('DELETE', `/v1/webhook_endpoints/${wid}`, { key: keys[s] }), 403, 'insufficient-scope');
      }
      expect((await app.http('DELETE', `/v1/webhook_endpoints/${wid}`, { key: keys.webhooks })).status).toBe(204);
    });

    it('GET /v1/ping needs any valid key', async () => {
      for (const s of ALL) expect((await app.http('GET', '/v1/ping', { key: keys[s] })).status).toBe(200);
    });
  });

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('members', () => {
    let p: Awaited<ReturnType<typeof programme>>;
    beforeAll(async () => { p = await programme(); });

    it('POST /v1/members → 201 Member (registered, all fields); the same email again → 200 the same member', async () => {
      const email = `ada-${randomUUID()}@example.com`;
      const r = await app.http('POST', '/v1/members', { key: p.key, body: { email, phone: '+14155550101', external_ref: 'ada-1', accepted_terms_version: 'v1', marketing_consent: true } });
      const m = expectData(r, 201);
      expectMember(m);
      expect(m).toMatchObject({ email, phone: '+14155550101', external_ref: 'ada-1', state: 'registered', tier: null, expiring_30d_cents: 0 });
      expect(m.balances).toEqual({ pending_cents: 0, available_cents: 0, reserved_cents: 0, spendable_cents: 0, lifetime_earned_cents: 0, lifetime_redeemed_cents: 0 });
      expect(m.enrolled_at).toMatch(ISO);
      const again = await app.http('POST', '/v1/members', { key: p.key, body: { email } });
      expect(expectData(again, 200).id).toBe(m.id);
    });

    it('enrolling again enriches (200) with a new phone; email lookups ignore case; phone:+… works unencoded too', async () => {
      const m = await enrol(p.key);
      const again = await app.http('POST', '/v1/members', { key: p.key, body: { email: m.email.toUpperCase(), phone: '+14155550177', external_ref: `enr-${m.id}` } });
      expect(expectData(again, 200)).toMatchObject({ id: m.id, phone: '+14155550177', external_ref: `enr-${m.id}` });
      expect(expectList(await app.http('GET', `/v1/members?email=${encodeURIComponent(m.email.toUpperCase())}`, { key: p.key })).map((x) => x.id)).toEqual([m.id]);
      expect(expectData(await app.http('GET', '/v1/members/phone:+14155550177', { key: p.key }), 200).id).toBe(m.id);
    });

    it('409 phone-conflict when the phone belongs to a different member', async () => {
      await enrol(p.key, { phone: '+14155550102' });
      expectProblem(await app.http('POST', '/v1/members', { key: p.key, body: { email: `x-${randomUUID()}@example.com`, phone: '+14155550102' } }), 409, 'phone-conflict');
    });

    it('422 for bad enrolment bodies (email missing/invalid/too long, marketing_consent not boolean)', async () => {
      expectValidation(await app.http('POST', '/v1/members', { key: p.key, body: { phone: '+14155550103' } }), '/email');
      expectValidation(await app.http('POST', '/v1/members', { key: p.key, body: { email: `${'a'.repeat(250)}@e.com` } }), '/email');
      expectValidation(await app.http('POST', '/v1/members', { key: p.key, body: { email: 'ok@example.com', marketing_consent: 'yes' } }), '/marketing_consent');
      expectValidation(await app.http('POST', '/v1/members', { key: p.key, body: { email: 'ok@example.com', external_ref: 'r'.repeat(129) } }), '/external_ref');
    });

    it('GET /v1/members/{id} accepts M-…, ref:<external_ref> and phone:%2B…; unknown → 404', async () => {
      const m = await enrol(p.key, { external_ref: 'ref-get-1', phone: '+14155550104' });
      for (const form of [m.id, 'ref:ref-get-1', 'phone:%2B14155550104']) {
        const d = expectData(await app.http('GET', `/v1/members/${form}`, { key: p.key }), 200);
        expect(d.id).toBe(m.id);
        expectMember(d);
      }
      expectProblem(await app.http('GET', `/v1/members/M-${'0'.repeat(26)}`, { key: p.key }), 404, 'not-found');
      expectProblem(await app.http('GET', '/v1/members/ref:nobody', { key: p.key }), 404, 'not-found');
      expectProblem(await app.http('GET', '/v1/members/phone:%2B14155550999', { key: p.key }), 404, 'not-found');
    });

    it("another programme's or mode's member is 404", async () => {
      const m = await enrol(p.key);
      const other = await programme();
      expectProblem(await app.http('GET', `/v1/members/${m.id}`, { key: other.key }), 404, 'not-found');
      expectProblem(await app.http('GET', `/v1/members/${m.id}`, { key: p.testKey }), 404, 'not-found');
      expectProblem(await app.http('GET', `/v1/members/${m.id}/ledger`, { key: other.key }), 404, 'not-found');
    });

    it('GET /v1/members: limit 1–100 default 25; pagination cursor walks without repeats; state and email filters', async () => {
      const q = await programme();
      const ids: string[] = [];
      for (let i = 0; i < 27; i++) ids.push((await enrol(q.key, { email: `list-${i}@example.com` })).id);
      const first = await app.http('GET', '/v1/members', { key: q.key });
      const page1 = expectList(first);
      expect(page1).toHaveLength(25);
      page1.forEach(expectMember);
      expect(first.body.pagination.cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      const second = await app.http('GET', `/v1/members?cursor=${encodeURIComponent(first.body.pagination.cursor)}`, { key: q.key });
      const page2 = expectList(second);
      expect(page2).toHaveLength(2);
      expect(second.body.pagination.cursor).toBeNull();
      expect(new Set([...page1, ...page2].map((x) => x.id))).toEqual(new Set(ids));
      expect(expectList(await app.http('GET', '/v1/members?limit=1', { key: q.key }))).toHaveLength(1);
      expect(expectList(await app.http('GET', '/v1/members?limit=100', { key: q.key }))).toHaveLength(27);
      for (const bad of ['0', '101', '-1', 'abc', '2.5']) expectValidation(await app.http('GET', `/v1/members?limit=${bad}`, { key: q.key }), '/limit');
      for (const s of ['prospect', 'registered', 'active', 'suspended', 'deleted']) expectList(await app.http('GET', `/v1/members?state=${s}`, { key: q.key }));
      expect(expectList(await app.http('GET', '/v1/members?state=registered&limit=100', { key: q.key }))).toHaveLength(27);
      expect(expectList(await app.http('GET', '/v1/members?state=prospect', { key: q.key }))).toHaveLength(0);
      for (const bad of ['paused', 'anonymised', 'bogus']) expectValidation(await app.http('GET', `/v1/members?state=${bad}`, { key: q.key }), '/state');
      const byEmail = expectList(await app.http('GET', '/v1/members?email=list-3@example.com', { key: q.key }));
      expect(byEmail.map((x) => x.id)).toEqual([ids[3]]);
    });

    it('GET /v1/members/{id}/ledger: LedgerEntry fields, oldest first, limit 1–200 default 50, cursor', async () => {
      const m = await enrol(p.key);
      for (let i = 1; i <= 52; i++) await credit(p.key, m.id, i);
      const r = await app.http('GET', `/v1/members/${m.id}/ledger`, { key: p.key });
      const page = expectList(r);
      expect(page).toHaveLength(50);
      page.forEach(expectLedgerEntry);
      expect(page.map((e) => e.amount_cents)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
      expect(page.every((e) => e.type === 'adjust' && e.reason_code === 'seed' && e.status === 'posted')).toBe(true);
      const next = expectList(await app.http('GET', `/v1/members/${m.id}/ledger?cursor=${encodeURIComponent(r.body.pagination.cursor)}`, { key: p.key }));
      expect(next.map((e) => e.amount_cents)).toEqual([51, 52]);
      expect(expectList(await app.http('GET', `/v1/members/${m.id}/ledger?limit=200`, { key: p.key }))).toHaveLength(52);
      for (const bad of ['0', '201']) expectValidation(await app.http('GET', `/v1/members/${m.id}/ledger?limit=${bad}`, { key: p.key }), '/limit');
      expectProblem(await app.http('GET', `/v1/members/M-${'1'.repeat(26)}/ledger`, { key: p.key }), 404, 'not-found');
    });

    it('POST /v1/members/{id}/adjust → 201 {ledger_entry_id, amount_cents, reason_code, status}; debit; 404; 422', async () => {
      const m = await enrol(p.key);
      const r = await app.http('POST', `/v1/members/${m.id}/adjust`, { key: p.key, body: { amount_cents: 500, reason_code: 'goodwill', note: 'sorry' } });
      const d = expectData(r, 201);
      expect(d.ledger_entry_id).toMatch(id('LE'));
      expect(d).toMatchObject({ amount_cents: 500, reason_code: 'goodwill' });
      expect(typeof d.status).toBe('string');
      const debit = expectData(await app.http('POST', `/v1/members/${m.id}/adjust`, { key: p.key, body: { amount_cents: -200, reason_code: 'fix' } }), 201);
      expect(debit.amount_cents).toBe(-200);
      const after = await member(p.key, m.id);
      expect(after.balances.available_cents).toBe(300);
      const entries = await ledger(p.key, m.id);
      expect(entries.map((e) => [e.id, e.type, e.amount_cents, e.reason_code])).toEqual([[d.ledger_entry_id, 'adjust', 500, 'goodwill'], [debit.ledger_entry_id, 'adjust', -200, 'fix']]);
      expectProblem(await app.http('POST', `/v1/members/M-${'2'.repeat(26)}/adjust`, { key: p.key, body: { amount_cents: 1, reason_code: 'x' } }), 404, 'not-found');
      expectValidation(await app.http('POST', `/v1/members/${m.id}/adjust`, { key: p.key, body: { amount_cents: 1 } }), '/reason_code');
      expectValidation(await app.http('POST', `/v1/members/${m.id}/adjust`, { key: p.key, body: { reason_code: 'x' } }), '/amount_cents');
      expectValidation(await app.http('POST', `/v1/members/${m.id}/adjust`, { key: p.key, body: { amount_cents: 1.5, reason_code: 'x' } }), '/amount_cents');
      expectValidation(await app.http('POST', `/v1/members/${m.id}/adjust`, { key: p.key, body: { amount_cents: 1, reason_code: 'r'.repeat(65) } }), '/reason_code');
      expectValidation(await app.http('POST', `/v1/members/${m.id}/adjust`, { key: p.key, body: { amount_cents: 1, reason_code: 'x', note: 'n'.repeat(1001) } }), '/note');
    });

    it('adjust with the body idempotency_key credits once', async () => {
      const m = await enrol(p.key);
      const body = { amount_cents: 70, reason_code: 'once', idempotency_key: `adj-${randomUUID()}` };
      const a = await app.http('POST', `/v1/members/${m.id}/adjust`, { key: p.key, body });
      const b = await app.http('POST', `/v1/members/${m.id}/adjust`, { key: p.key, body });
      expect(a.status).toBe(201);
      expect([200, 201]).toContain(b.status);
      expect(b.body.data.ledger_entry_id).toBe(a.body.data.ledger_entry_id);
      expect((await member(p.key, m.id)).balances.available_cents).toBe(70);
      expectProblem(await app.http('POST', `/v1/members/${m.id}/adjust`, { key: p.key, body: { ...body, amount_cents: 71 } }), 409, 'idempotency-key-reused');
    });

    it('POST /v1/members/resolve: phone only → 201 prospect; again → 200; ids of two members → 409 phone-conflict; empty → 422', async () => {
      const r = await app.http('POST', '/v1/members/resolve', { key: p.key, body: { phone: '+14155550110' } });
      const d = expectData(r, 201);
      expectMember(d);
      expect(d.state).toBe('prospect');
      const again = await app.http('POST', '/v1/members/resolve', { key: p.key, body: { phone: '+14155550110' } });
      expect(expectData(again, 200).id).toBe(d.id);
      const a = await enrol(p.key, { phone: '+14155550111' });
      expectProblem(await app.http('POST', '/v1/members/resolve', { key: p.key, body: { email: a.email, phone: '+14155550110' } }), 409, 'phone-conflict');
      expectProblem(await app.http('POST', '/v1/members/resolve', { key: p.key, body: {} }), 422, 'validation');
      const byEmail = await app.http('POST', '/v1/members/resolve', { key: p.key, body: { email: a.email } });
      expect(expectData(byEmail, 200).id).toBe(a.id);
    });

    it('PATCH /v1/members/{id}: profile fields → 200 member; email → 422; accepted_terms_version enrols a prospect', async () => {
      const m = await enrol(p.key);
      const r = await app.http('PATCH', `/v1/members/${m.id}`, { key: p.key, body: { phone: '+14155550120', external_ref: 'patched-1', marketing_consent: true } });
      const d = expectData(r, 200);
      expect(d).toMatchObject({ id: m.id, phone: '+14155550120', external_ref: 'patched-1', email: m.email });
      expectProblem(await app.http('PATCH', `/v1/members/${m.id}`, { key: p.key, body: { email: 'new@example.com' } }), 422, 'validation');
      const prospect = expectData(await app.http('POST', '/v1/members/resolve', { key: p.key, body: { phone: '+14155550121' } }), 201);
      const enrolled = expectData(await app.http('PATCH', `/v1/members/${prospect.id}`, { key: p.key, body: { accepted_terms_version: '2024-01' } }), 200);
      expect(enrolled.state).toBe('registered');
      expectProblem(await app.http('PATCH', `/v1/members/M-${'3'.repeat(26)}`, { key: p.key, body: { marketing_consent: true } }), 404, 'not-found');
    });

    it('DELETE /v1/members/{id} → 200 member state deleted; vouchers voided, reservations released, balance forfeited (expire, erasure); PII gone; email re-enrols as new', async () => {
      const q = await programme();
      const m = await enrol(q.key, { phone: '+14155550130', external_ref: 'erase-1' });
      await credit(q.key, m.id, 1_000);
      const v = await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: q.key, body: { amount_cents: 100 } });
      expect(v.status).toBe(201);
      const res = await app.http('POST', '/v1/redemption-reservations', { key: q.key, body: { member_id: m.id, amount_cents: 200, cart_ref: 'cart-erase' } });
      expect(res.status).toBe(201);
      const r = await app.http('DELETE', `/v1/members/${m.id}`, { key: q.key });
      const d = expectData(r, 200);
      expect(d.id).toBe(m.id);
      expect(d.state).toBe('deleted');
      expect(d.email).toBeNull();
      expect(d.phone).toBeNull();
      expect(d.external_ref).toBeNull();
      expect(d.balances.available_cents).toBe(0);
      expect(d.balances.reserved_cents).toBe(0);
      // the id still resolves to the tombstone
      const tomb = expectData(await app.http('GET', `/v1/members/${m.id}`, { key: q.key }), 200);
      expect(['deleted', 'anonymised']).toContain(tomb.state);
      expect(JSON.stringify(tomb)).not.toContain(m.email);
      const entries = await ledger(q.key, m.id);
      const forfeit = entries.filter((e) => e.type === 'expire' && e.reason_code === 'erasure');
      expect(forfeit).toHaveLength(1);
      expect(forfeit[0].amount_cents).toBe(-1_000);
      const voucher = expectData(await app.http('GET', `/v1/redemptions?code=${v.body.data.code}`, { key: q.key }), 200);
      expect(voucher.status).toBe('restored');
      const reservation = expectData(await app.http('GET', `/v1/redemption-reservations/${res.body.data.id}`, { key: q.key }), 200);
      expect(reservation.status).toBe('released');
      expectProblem(await app.http('GET', '/v1/members/ref:erase-1', { key: q.key }), 404, 'not-found');
      expectProblem(await app.http('GET', '/v1/members/phone:%2B14155550130', { key: q.key }), 404, 'not-found');
      expect(expectList(await app.http('GET', `/v1/members?email=${encodeURIComponent(m.email)}`, { key: q.key }))).toEqual([]);
      const anew = await app.http('POST', '/v1/members', { key: q.key, body: { email: m.email } });
      expect(expectData(anew, 201).id).not.toBe(m.id);
      // the retention job anonymises the tombstone after the erasure grace (default 0 days: at once)
      await eventually(async () => {
        const t = expectData(await app.http('GET', `/v1/members/${m.id}`, { key: q.key }), 200);
        expect(t).toMatchObject({ id: m.id, state: 'anonymised', email: null, phone: null, external_ref: null });
      }, { timeoutMs: 10_000 });
      expect(expectData(await app.http('DELETE', `/v1/members/${m.id}`, { key: q.key }), 200).id).toBe(m.id);
      // members counts neither deleted nor anonymised
      const liability = expectData(await app.http('GET', '/v1/tenant/liability', { key: q.key }), 200);
      expect(liability.members).toBe(1);
    });
  });

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('member states (decisions §4)', () => {
    let p: Awaited<ReturnType<typeof programme>>;
    beforeAll(async () => { p = await programme({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1, timing: 'immediate' }] }); });

    it('order for an unknown customer → prospect that earns but cannot spend (402 redemption-not-allowed); enrolment → registered; first earn → active', async () => {
      const email = `pros-${randomUUID()}@example.com`;
      const ev = await send(p.key, { type: 'order.paid', order_ref: `pr-${randomUUID()}`, gross_cents: 50_000, email });
      expect(ev.status).toBe('completed');
      const [m] = expectList(await app.http('GET', `/v1/members?email=${encodeURIComponent(email)}`, { key: p.key }));
      expect(m.state).toBe('prospect');
      expect(m.balances.available_cents).toBe(500);
      expectProblem(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 100 } }), 402, 'redemption-not-allowed');
      expectProblem(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 100, mode: 'direct', order_ref: 'o-1' } }), 402, 'redemption-not-allowed');
      const enrolled = await app.http('POST', '/v1/members', { key: p.key, body: { email } });
      expect(expectData(enrolled, 201)).toMatchObject({ id: m.id, state: 'registered' });
      await send(p.key, { type: 'order.paid', order_ref: `pr-${randomUUID()}`, gross_cents: 10_000, email });
      expect((await member(p.key, m.id)).state).toBe('active');
      expect((await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 100 } })).status).toBe(201);
    });

    it('admin pause/resume and suspend/reinstate; paused and suspended neither earn (failed, no entry, error) nor spend (402)', async () => {
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      expect((await app.admin('POST', `/admin/v1/members/${m.id}/pause`, {})).status).toBe(200);
      expect((await member(p.key, m.id)).state).toBe('paused');
      const paused = await send(p.key, { type: 'order.paid', order_ref: `pa-${randomUUID()}`, gross_cents: 10_000, email: m.email });
      expect(paused).toMatchObject({ status: 'failed', ledger_entry_ids: [] });
      expect(typeof paused.error).toBe('string');
      expectProblem(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 10 } }), 402, 'redemption-not-allowed');
      expect((await app.admin('POST', `/admin/v1/members/${m.id}/resume`, {})).status).toBe(200);
      // back to the previous state (an adjustment is not an earn: still registered)
      expect((await member(p.key, m.id)).state).toBe('registered');
      expect((await app.admin('POST', `/admin/v1/members/${m.id}/suspend`, {})).status).toBe(200);
      expect((await member(p.key, m.id)).state).toBe('suspended');
      expect(expectList(await app.http('GET', '/v1/members?state=suspended', { key: p.key })).map((x) => x.id)).toContain(m.id);
      const suspended = await send(p.key, { type: 'order.paid', order_ref: `su-${randomUUID()}`, gross_cents: 10_000, email: m.email });
      expect(suspended).toMatchObject({ status: 'failed', ledger_entry_ids: [] });
      expect(suspended.error).toBeTruthy();
      expectProblem(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 10 } }), 402, 'redemption-not-allowed');
      expect((await app.admin('POST', `/admin/v1/members/${m.id}/reinstate`, {})).status).toBe(200);
      expect((await member(p.key, m.id)).state).toBe('registered');
      expect((await member(p.key, m.id)).balances.available_cents).toBe(1_000);
    });

    it('a deleted member cannot spend (402) and its order events fail', async () => {
      const m = await enrol(p.key);
      expect((await app.http('DELETE', `/v1/members/${m.id}`, { key: p.key })).status).toBe(200);
      expectProblem(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 10 } }), 402, 'redemption-not-allowed');
    });
  });

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('events', () => {
    let p: Awaited<ReturnType<typeof programme>>;
    beforeAll(async () => { p = await programme({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1, timing: 'immediate' }] }); });

    it('single event → 202 EventAccepted {id EV-, type, status, replayed:false}; the same derived key → 200 replayed:true, same id', async () => {
      const ref = `e-${randomUUID()}`;
      const ev = { type: 'order.paid', order_ref: ref, gross_cents: 1_000, email: 'ev1@example.com' };
      const r = await app.http('POST', '/v1/events', { key: p.key, body: ev });
      const d = expectData(r, 202);
      expect(d.id).toMatch(id('EV'));
      expect(d).toMatchObject({ type: 'order.paid', replayed: false });
      expect(['queued', 'running', 'completed', 'failed']).toContain(d.status);
      const again = await app.http('POST', '/v1/events', { key: p.key, body: ev });
      expect(expectData(again, 200)).toMatchObject({ id: d.id, type: 'order.paid', replayed: true });
      const s = await settled(p.key, d.id);
      expectEventStatus(s);
      expect(s).toMatchObject({ id: d.id, type: 'order.paid', status: 'completed', error: null });
      expect(s.ledger_entry_ids).toHaveLength(1);
      expect(s.ledger_entry_ids[0]).toMatch(id('LE'));
      expect(s.processed_at).toMatch(ISO);
      const after = await app.http('POST', '/v1/events', { key: p.key, body: ev });
      expect(expectData(after, 200)).toMatchObject({ id: d.id, status: 'completed', replayed: true });
    });

    it('idempotency: header, else the event id, else <type>:<order_ref>; refunds keyed by refund_ref too', async () => {
      const ref = `k-${randomUUID()}`;
      const listKey = async (eid: string) => {
        const items = expectList(await app.http('GET', `/v1/events?order_ref=${ref}`, { key: p.key }));
        return items.find((x) => x.id === eid)!.idempotency_key;
      };
      const a = await postEvent(p.key, { type: 'order.paid', order_ref: ref, gross_cents: 1_000, email: 'ev2@example.com' });
      expect(await listKey(a)).toBe(`order.paid:${ref}`);
      const b = await postEvent(p.key, { type: 'order.fulfilled', order_ref: ref, gross_cents: 1_000, id: 'my-own-id' });
      expect(await listKey(b)).toBe('my-own-id');
      const c = await postEvent(p.key, { type: 'order.fulfilled', order_ref: ref, gross_cents: 1_000, id: 'other-id' }, { 'Idempotency-Key': 'hdr-key' });
      expect(await listKey(c)).toBe('hdr-key');
      const r1 = await postEvent(p.key, { type: 'order.refunded', order_ref: ref, refund_ref: 'R1', refunded_cents: 100 });
      const r2 = await postEvent(p.key, { type: 'order.refunded', order_ref: ref, refund_ref: 'R2', refunded_cents: 100 });
      expect(r1).not.toBe(r2);
      expect(await listKey(r1)).toBe(`order.refunded:${ref}:R1`);
    });

    it('Idempotency-Key on events: at most 128 characters', async () => {
      const ev = () => ({ type: 'order.paid', order_ref: `ik-${randomUUID()}`, gross_cents: 1, email: 'ik@example.com' });
      expect((await app.http('POST', '/v1/events', { key: p.key, body: ev(), headers: { 'Idempotency-Key': 'k'.repeat(128) } })).status).toBe(202);
      expectProblem(await app.http('POST', '/v1/events', { key: p.key, body: ev(), headers: { 'Idempotency-Key': 'k'.repeat(129) } }), 422, 'validation');
    });

    it('batch {events: [...]}: 1 to 100 → 202 BatchEventResult[] {index, accepted, id, status, replayed, errors}; 0 or 101 → 422', async () => {
      const mk = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'order.paid', order_ref: `b-${randomUUID()}-${i}`, gross_cents: 100, email: 'batch@example.com' }));
      const events = mk(100);
      const r = await app.http('POST', '/v1/events', { key: p.key, body: { events } });
      const d = expectData(r, 202);
      expect(d).toHaveLength(100);
      d.forEach((x: any, i: number) => {
        expect(x).toMatchObject({ index: i, accepted: true, replayed: false, errors: [] });
        expect(x.id).toMatch(id('EV'));
        expect(typeof x.status).toBe('string');
      });
      const replay = expectData(await app.http('POST', '/v1/events', { key: p.key, body: { events: events.slice(0, 2) } }), 202);
      expect(replay.map((x: any) => [x.id, x.replayed])).toEqual([[d[0].id, true], [d[1].id, true]]);
      expectValidation(await app.http('POST', '/v1/events', { key: p.key, body: { events: [] } }), '/events');
      expectValidation(await app.http('POST', '/v1/events', { key: p.key, body: { events: mk(101) } }), '/events');
      expect(expectData(await app.http('POST', '/v1/events', { key: p.key, body: { events: mk(1) } }), 202)).toHaveLength(1);
    });

    it('event bodies are validated per type (422 with the failing path)', async () => {
      const bad: [Record<string, unknown>, string][] = [
        [{ type: 'order.paid', gross_cents: 1 }, '/order_ref'],
        [{ type: 'order.paid', order_ref: 'x' }, '/gross_cents'],
        [{ type: 'order.paid', order_ref: 'x', gross_cents: -1 }, '/gross_cents'],
        [{ type: 'order.paid', order_ref: 'x', gross_cents: 1.5 }, '/gross_cents'],
        [{ type: 'order.placed', order_ref: 'x', gross_cents: 1, lines: [{ amount_cents: -1 }] }, '/lines/0/amount_cents'],
        [{ type: 'order.fulfilled', order_ref: 'x', gross_cents: 1, lines: [{ amount_cents: 1, quantity: 0 }] }, '/lines/0/quantity'],
        [{ type: 'order.refunded', order_ref: 'x', refund_ref: 'r', refunded_cents: 0 }, '/refunded_cents'],
        [{ type: 'order.refunded', order_ref: 'x', refunded_cents: 5 }, '/refund_ref'],
        [{ type: 'order.cancelled' }, '/order_ref'],
        [{ type: 'customer.created' }, '/email'],
        [{ type: 'customer.updated', email: 'not-email' }, '/email'],
        [{ type: 'order.exploded', order_ref: 'x' }, '/type'],
        [{ type: 'order.paid', order_ref: 'o'.repeat(129), gross_cents: 1 }, '/order_ref'],
      ];
      for (const [ev, path] of bad) {
        const r = await app.http('POST', '/v1/events', { key: p.key, body: ev });
        expect([JSON.stringify(ev), r.status]).toEqual([JSON.stringify(ev), 422]);
        expectValidation(r, path);
      }
      // field length limits (decisions §2)
      const order = (extra: Record<string, unknown>) => ({ type: 'order.paid', order_ref: `len-${randomUUID()}`, gross_cents: 1, email: 'len@example.com', ...extra });
      expectValidation(await app.http('POST', '/v1/events', { key: p.key, body: { type: 'order.refunded', order_ref: 'x', refund_ref: 'r'.repeat(129), refunded_cents: 1 } }), '/refund_ref');
      expectValidation(await app.http('POST', '/v1/events', { key: p.key, body: order({ lines: [{ amount_cents: 1, product_ref: 'p'.repeat(129) }] }) }), '/lines/0/product_ref');
      expectValidation(await app.http('POST', '/v1/events', { key: p.key, body: order({ lines: [{ amount_cents: 1, tags: ['t'.repeat(65)] }] }) }), '/lines/0/tags');
      expectValidation(await app.http('POST', '/v1/events', { key: p.key, body: order({ lines: [{ amount_cents: 1, tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }] }) }), '/lines/0/tags');
      expectValidation(await app.http('POST', '/v1/events', { key: p.key, body: order({ lines: Array.from({ length: 501 }, () => ({ amount_cents: 1 })) }) }), '/lines');
      expect((await app.http('POST', '/v1/events', { key: p.key, body: order({ lines: Array.from({ length: 500 }, () => ({ amount_cents: 1, tags: ['t'.repeat(64)] })) }) })).status).toBe(202);
      expectValidation(await app.http('POST', '/v1/redemption-reservations', { key: p.key, body: { member_id: 'M-x', amount_cents: 1, cart_ref: 'c'.repeat(129) } }), '/cart_ref');
      // every documented field is accepted
      const ok = await app.http('POST', '/v1/events', {
        key: p.key,
        body: {
          type: 'order.paid', id: `full-${randomUUID()}`, occurred_at: new Date().toISOString(), order_ref: `full-${randomUUID()}`, gross_cents: 1_000,
          email: 'full@example.com', phone: '+14155550140', customer_ref: 'full-1', customer: { phone: '+14155550140' }, tax_cents: 100, currency: 'USD',
          payment_method: 'card', aggregate_version: 1, reservation_id: `RS-${'0'.repeat(26)}`,
          lines: [{ amount_cents: 1_000, product_ref: 'sku-1', quantity: 2, gift_card: false, tags: ['shoes'] }],
        },
      });
      expect(r2s(ok)).toBe(202);
      for (const t of ['customer.created', 'customer.updated']) {
        expect((await app.http('POST', '/v1/events', { key: p.key, body: { type: t, email: `c-${randomUUID()}@example.com`, phone: '+14155550141', external_ref: 'c-1' } })).status).toBe(202);
      }
    });

    it('GET /v1/events/{id}: unknown → 404; another programme → 404', async () => {
      expectProblem(await app.http('GET', `/v1/events/EV-${'0'.repeat(26)}`, { key: p.key }), 404, 'not-found');
      const eid = await postEvent(p.key, { type: 'customer.created', email: `o-${randomUUID()}@example.com` });
      const other = await programme();
      expectProblem(await app.http('GET', `/v1/events/${eid}`, { key: other.key }), 404, 'not-found');
      expectProblem(await app.http('GET', `/v1/events/${eid}`, { key: p.testKey }), 404, 'not-found');
    });

    it('GET /v1/events: EventStatus + order_ref + idempotency_key, newest first, filters status/order_ref/type, cursor', async () => {
      const q = await programme({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1, timing: 'immediate' }] });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await send(q.key, { type: 'order.paid', order_ref: `L-${i}`, gross_cents: 100, email: 'l@example.com' })).id);
      const unmatched = await send(q.key, { type: 'order.paid', order_ref: 'L-x', gross_cents: 100 });
      expect(unmatched.status).toBe('failed');
      expect(unmatched.error).toMatch(/unmatched/i);
      const all = expectList(await app.http('GET', '/v1/events', { key: q.key }));
      all.forEach((e) => {
        expectEventStatus(e);
        expect(e).toHaveProperty('order_ref');
        expect(typeof e.idempotency_key).toBe('string');
      });
      expect(all.map((e) => e.id)).toEqual([unmatched.id, ...ids.reverse()]);
      const failed = expectList(await app.http('GET', '/v1/events?status=failed', { key: q.key }));
      expect(failed.map((e) => [e.id, e.order_ref, e.error])).toEqual([[unmatched.id, 'L-x', unmatched.error]]);
      expect(expectList(await app.http('GET', '/v1/events?order_ref=L-1', { key: q.key })).map((e) => e.id)).toEqual([ids[1]]);
      expect(expectList(await app.http('GET', '/v1/events?type=order.refunded', { key: q.key }))).toEqual([]);
      expect(expectList(await app.http('GET', '/v1/events?type=order.paid', { key: q.key }))).toHaveLength(4);
      const p1 = await app.http('GET', '/v1/events?limit=2', { key: q.key });
      expect(expectList(p1)).toHaveLength(2);
      const p2 = await app.http('GET', `/v1/events?limit=2&cursor=${encodeURIComponent(p1.body.pagination.cursor)}`, { key: q.key });
      expect([...p1.body.data, ...expectList(p2)].map((e: any) => e.id)).toEqual(all.map((e) => e.id));
      expectValidation(await app.http('GET', '/v1/events?status=bogus', { key: q.key }), '/status');
    });
  });

  const r2s = (r: R) => r.status;

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('earning arithmetic (decisions §5)', () => {
    const earnOf = async (key: string, event: Record<string, unknown>) => {
      const s = await send(key, event);
      expect(s.status).toBe('completed');
      return s;
    };
    const entriesOf = async (key: string, email: string) => {
      const [m] = expectList(await app.http('GET', `/v1/members?email=${encodeURIComponent(email)}`, { key }));
      return { m, entries: await ledger(key, m.id) };
    };

    it('base 1 % of 12,345 → 123 (floored), posted at once for paid timing; rule and type on the entry', async () => {
      const p = await programme({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1, timing: 'paid' }] });
      const s = await earnOf(p.key, { type: 'order.paid', order_ref: 'A1', gross_cents: 12_345, email: 'a1@example.com' });
      const { m, entries } = await entriesOf(p.key, 'a1@example.com');
      expect(entries.map((e) => [e.id, e.type, e.status, e.amount_cents, e.rule])).toEqual([[s.ledger_entry_ids[0], 'earn', 'posted', 123, 'base']]);
      expect(m.balances).toMatchObject({ available_cents: 123, pending_cents: 0, lifetime_earned_cents: 123, spendable_cents: 123 });
    });

    it('gift-card lines never earn: earns on min(gross, sum of non-gift-card lines)', async () => {
      const p = await programme({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 10, timing: 'immediate' }] });
      await earnOf(p.key, { type: 'order.paid', order_ref: 'G1', gross_cents: 10_000, email: 'g1@example.com', lines: [{ amount_cents: 6_000, gift_card: true }, { amount_cents: 4_000 }] });
      expect((await entriesOf(p.key, 'g1@example.com')).m.balances.available_cents).toBe(400);
      // gross below the line total: gross wins
      await earnOf(p.key, { type: 'order.paid', order_ref: 'G2', gross_cents: 3_000, email: 'g2@example.com', lines: [{ amount_cents: 4_000 }] });
      expect((await entriesOf(p.key, 'g2@example.com')).m.balances.available_cents).toBe(300);
    });

    it('category_boost: extra rate on non-gift-card lines whose tags intersect', async () => {
      const p = await programme({ rules: [
        { id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1, timing: 'immediate' },
        { id: 'shoes', name: 'Shoes', type: 'category_boost', earn_rate_pct: 5, tags: ['shoes'], timing: 'immediate' },
      ] });
      await earnOf(p.key, { type: 'order.paid', order_ref: 'C1', gross_cents: 10_000, email: 'c1@example.com', lines: [
        { amount_cents: 3_000, tags: ['shoes', 'sale'] }, { amount_cents: 2_000, tags: ['shoes'], gift_card: true }, { amount_cents: 5_000, tags: ['hats'] },
      ] });
      const { entries } = await entriesOf(p.key, 'c1@example.com');
      // base on min(10 000, 8 000) = 80; boost 5 % of 3 000 = 150
      expect(entries.map((e) => [e.rule, e.amount_cents]).sort()).toEqual([['base', 80], ['shoes', 150]]);
    });

    it('min_order_cents and cap_per_order_cents', async () => {
      const p = await programme({ rules: [
        { id: 'min', name: 'Min', type: 'base', earn_rate_pct: 2, timing: 'immediate', min_order_cents: 5_000 },
        { id: 'cap', name: 'Cap', type: 'base', earn_rate_pct: 1, timing: 'immediate', cap_per_order_cents: 100 },
      ] });
      await earnOf(p.key, { type: 'order.paid', order_ref: 'M1', gross_cents: 4_999, email: 'm1@example.com' });
      expect((await entriesOf(p.key, 'm1@example.com')).entries.map((e) => [e.rule, e.amount_cents])).toEqual([['cap', 49]]);
      await earnOf(p.key, { type: 'order.paid', order_ref: 'M2', gross_cents: 100_000, email: 'm2@example.com' });
      expect((await entriesOf(p.key, 'm2@example.com')).entries.map((e) => [e.rule, e.amount_cents]).sort()).toEqual([['cap', 100], ['min', 2_000]]);
    });

    it('tier multiplier: the crossing order earns at the old rate, the next at the tier multiplier; member.tier fields', async () => {
      const p = await programme({
        rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1, timing: 'immediate' }],
        tiers: [{ name: 'Gold', level: 1, threshold_type: 'spend', threshold_value: 10_000, earn_multiplier: 2, benefits: { lounge: true } }],
      });
      await earnOf(p.key, { type: 'order.paid', order_ref: 'T1', gross_cents: 10_000, email: 't1@example.com' });
      let { m } = await entriesOf(p.key, 't1@example.com');
      expect(m.tier).toEqual({ name: 'Gold', level: 1, earn_multiplier: 2, benefits: { lounge: true } });
      await earnOf(p.key, { type: 'order.paid', order_ref: 'T2', gross_cents: 12_345, email: 't1@example.com' });
      const r = await entriesOf(p.key, 't1@example.com');
      m = r.m;
      expect(r.entries.map((e) => e.amount_cents)).toEqual([100, 246]);
      expect(m.balances.available_cents).toBe(346);
      // a refund re-evaluates the tier: spend = paid gross minus refunds = 22 345 − 12 346 < 10 000 → no tier
      await earnOf(p.key, { type: 'order.refunded', order_ref: 'T2', refund_ref: 'x', refunded_cents: 12_345 });
      await earnOf(p.key, { type: 'order.refunded', order_ref: 'T1', refund_ref: 'y', refunded_cents: 1 });
      expect((await entriesOf(p.key, 't1@example.com')).m.tier).toBeNull();
    });

    it('tiers: criteria with criteria_mode any/all, metrics spend/points/orders, the highest qualifying tier wins (≥ threshold)', async () => {
      const p = await programme({
        rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1, timing: 'immediate' }],
        tiers: [
          { name: 'Silver', level: 1, criteria: [{ metric: 'orders', threshold: 2 }, { metric: 'spend', threshold: 1_000_000 }], criteria_mode: 'any', earn_multiplier: 1.5 },
          { name: 'Gold', level: 2, criteria: [{ metric: 'orders', threshold: 3 }, { metric: 'points', threshold: 300 }], criteria_mode: 'all', earn_multiplier: 2 },
        ],
      });
      const email = `tier-${randomUUID()}@example.com`;
      await earnOf(p.key, { type: 'order.paid', order_ref: 'TC-1', gross_cents: 10_000, email });
      expect((await entriesOf(p.key, email)).m.tier).toBeNull();
      await earnOf(p.key, { type: 'order.paid', order_ref: 'TC-2', gross_cents: 10_000, email });
      expect((await entriesOf(p.key, email)).m.tier).toMatchObject({ name: 'Silver', level: 1, earn_multiplier: 1.5 });
      // third order: 3 orders but points 100 + 100 + 150 = 350 ≥ 300 → Gold (all criteria met)
      await earnOf(p.key, { type: 'order.paid', order_ref: 'TC-3', gross_cents: 10_000, email });
      const { m, entries } = await entriesOf(p.key, email);
      expect(entries.map((e) => e.amount_cents)).toEqual([100, 100, 150]);
      expect(m.tier).toMatchObject({ name: 'Gold', level: 2, earn_multiplier: 2 });
    });

    it('timings: fulfilled → pending until fulfilment; return_window → pending with release_at; manual → under_review', async () => {
      const p = await programme({
        settings: { return_window_days: 10 },
        rules: [
          { id: 'ful', name: 'Ful', type: 'base', earn_rate_pct: 1, timing: 'fulfilled' },
          { id: 'rw', name: 'RW', type: 'base', earn_rate_pct: 2, timing: 'return_window' },
          { id: 'man', name: 'Manual', type: 'base', earn_rate_pct: 3, timing: 'manual' },
        ],
      });
      await earnOf(p.key, { type: 'order.paid', order_ref: 'W1', gross_cents: 10_000, email: 'w1@example.com' });
      let { m, entries } = await entriesOf(p.key, 'w1@example.com');
      const byRule = (es: any[]) => Object.fromEntries(es.map((e) => [e.rule, e]));
      expect(Object.fromEntries(entries.map((e) => [e.rule, [e.status, e.amount_cents]]))).toEqual({ ful: ['pending', 100], rw: ['pending', 200], man: ['under_review', 300] });
      expect(m.balances).toMatchObject({ available_cents: 0, pending_cents: 600 });
      const fulfilledAt = Date.now();
      await earnOf(p.key, { type: 'order.fulfilled', order_ref: 'W1', gross_cents: 10_000 });
      ({ m, entries } = await entriesOf(p.key, 'w1@example.com'));
      const e = byRule(entries);
      expect(e.ful.status).toBe('posted');
      expect(e.rw.status).toBe('pending');
      expect(Math.abs(Date.parse(e.rw.release_at) - (fulfilledAt + 10 * 86_400_000))).toBeLessThan(60_000);
      expect(m.balances).toMatchObject({ available_cents: 100, pending_cents: 500 });
    });

    it('earn_on order.placed runs the rules on order.placed; order.paid then earns nothing more', async () => {
      const p = await programme({ settings: { earn_on: 'order.placed' }, rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1, timing: 'immediate' }] });
      const placed = await earnOf(p.key, { type: 'order.placed', order_ref: 'P1', gross_cents: 10_000, email: 'p1@example.com' });
      expect(placed.ledger_entry_ids).toHaveLength(1);
      const paid = await send(p.key, { type: 'order.paid', order_ref: 'P1', gross_cents: 10_000 });
      expect(paid.ledger_entry_ids).toEqual([]);
      expect((await entriesOf(p.key, 'p1@example.com')).m.balances.available_cents).toBe(100);
    });

    it('refunds: cumulative take-back floor(earned × cumulative_refunded / gross), reverse entries pointing at the earn; beyond gross takes the rest only; may go negative', async () => {
      const p = await programme({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 3, timing: 'immediate' }] });
      await earnOf(p.key, { type: 'order.paid', order_ref: 'R1', gross_cents: 33_333, email: 'r1@example.com' });
      let { m, entries } = await entriesOf(p.key, 'r1@example.com');
      const earn = entries[0];
      expect(earn.amount_cents).toBe(999);
      const r1 = await earnOf(p.key, { type: 'order.refunded', order_ref: 'R1', refund_ref: 'a', refunded_cents: 10_000 });
      ({ entries } = await entriesOf(p.key, 'r1@example.com'));
      const rev1 = entries.find((e) => e.id === r1.ledger_entry_ids[0]);
      // floor(999 × 10 000 / 33 333) = 299
      expect([rev1.type, rev1.amount_cents, rev1.parent_entry_id]).toEqual(['reverse', -299, earn.id]);
      await earnOf(p.key, { type: 'order.refunded', order_ref: 'R1', refund_ref: 'b', refunded_cents: 5_000 });
      // cumulative 15 000: floor(999 × 15 000 / 33 333) = 449 → second takes 150
      ({ m, entries } = await entriesOf(p.key, 'r1@example.com'));
      expect(entries.filter((e) => e.type === 'reverse').map((e) => e.amount_cents)).toEqual([-299, -150]);
      expect(m.balances.available_cents).toBe(999 - 449);
      // spend then refund beyond gross: the balance goes negative, take-back stops at the earn
      const spend = await app.http('POST', `/v1/members/${m.id}/adjust`, { key: p.key, body: { amount_cents: -550, reason_code: 'spent' } });
      expect(spend.status).toBe(201);
      await earnOf(p.key, { type: 'order.refunded', order_ref: 'R1', refund_ref: 'c', refunded_cents: 40_000 });
      ({ m, entries } = await entriesOf(p.key, 'r1@example.com'));
      expect(entries.filter((e) => e.type === 'reverse').reduce((a, e) => a + e.amount_cents, 0)).toBe(-999);
      expect(m.balances.available_cents).toBe(-550);
      expect(entries.find((e) => e.id === earn.id).status).toBe('reversed');
    });

    it('order.cancelled reverses every entry of the order', async () => {
      const p = await programme({ rules: [
        { id: 'a', name: 'A', type: 'base', earn_rate_pct: 1, timing: 'immediate' },
        { id: 'b', name: 'B', type: 'base', earn_rate_pct: 2, timing: 'return_window' },
      ] });
      await earnOf(p.key, { type: 'order.paid', order_ref: 'X1', gross_cents: 10_000, email: 'x1@example.com' });
      const c = await earnOf(p.key, { type: 'order.cancelled', order_ref: 'X1' });
      expect(c.ledger_entry_ids).toHaveLength(2);
      const { m, entries } = await entriesOf(p.key, 'x1@example.com');
      expect(entries.filter((e) => e.type === 'earn').map((e) => e.status)).toEqual(['reversed', 'reversed']);
      expect(entries.filter((e) => e.type === 'reverse').map((e) => e.amount_cents).sort((a, b) => a - b)).toEqual([-200, -100]);
      expect(m.balances).toMatchObject({ available_cents: 0, pending_cents: 0 });
    });

    it('an older aggregate_version → failed, error naming both versions, no entries', async () => {
      const p = await programme({ rules: [{ id: 'a', name: 'A', type: 'base', earn_rate_pct: 1, timing: 'immediate' }] });
      await earnOf(p.key, { type: 'order.placed', order_ref: 'V1', gross_cents: 10_000, email: 'v1@example.com', aggregate_version: 7 });
      const old = await send(p.key, { type: 'order.paid', order_ref: 'V1', gross_cents: 10_000, aggregate_version: 3 });
      expect(old.status).toBe('failed');
      expect(old.ledger_entry_ids).toEqual([]);
      expect(old.error).toContain('3');
      expect(old.error).toContain('7');
      const listed = expectList(await app.http('GET', '/v1/events?status=failed&order_ref=V1', { key: p.key }));
      expect(listed.map((e) => e.error)).toEqual([old.error]);
    });

    it('an event for an unseen order naming no customer fails as unmatched', async () => {
      const p = await programme();
      const s = await send(p.key, { type: 'order.paid', order_ref: 'U1', gross_cents: 100 });
      expect(s.status).toBe('failed');
      expect(s.error).toMatch(/unmatched/i);
    });
  });

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('redemptions (decisions §6)', () => {
    let p: Awaited<ReturnType<typeof programme>>;
    beforeAll(async () => { p = await programme(); });

    it('voucher: 201 Redemption (created, RWD code, debited now, expires 72 h); lookup by code; confirm → used; idempotent; cross-state 409', async () => {
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      const r = await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 300 } });
      const d = expectData(r, 201);
      expectRedemption(d);
      expect(d).toMatchObject({ status: 'created', mode: 'voucher', amount_cents: 300, order_ref: null });
      expect(Math.abs(Date.parse(d.expires_at) - Date.parse(d.created_at) - 259_200_000)).toBeLessThan(2_000);
      let b = (await member(p.key, m.id)).balances;
      expect(b).toMatchObject({ available_cents: 700, spendable_cents: 700, lifetime_redeemed_cents: 300 });
      const redeemEntry = (await ledger(p.key, m.id)).find((e) => e.id === d.ledger_entry_id);
      expect(redeemEntry).toMatchObject({ type: 'redeem', amount_cents: -300, status: 'posted' });
      const look = expectData(await app.http('GET', `/v1/redemptions?code=${d.code}`, { key: p.key }), 200);
      expect(look).toMatchObject({ id: d.id, code: d.code, member_id: m.id, valid: true, amount_cents: 300, status: 'created' });
      expectProblem(await app.http('GET', '/v1/redemptions?code=RWD-ZZZZ-ZZZZ', { key: p.key }), 404, 'not-found');
      const c = expectData(await app.http('POST', `/v1/redemptions/${d.id}/confirm`, { key: p.key, body: { order_ref: 'ORD-1' } }), 200);
      expect(c).toMatchObject({ id: d.id, status: 'used', order_ref: 'ORD-1' });
      expect(expectData(await app.http('POST', `/v1/redemptions/${d.id}/confirm`, { key: p.key, body: { order_ref: 'ORD-1' } }), 200)).toMatchObject({ status: 'used' });
      expectProblem(await app.http('POST', `/v1/redemptions/${d.id}/confirm`, { key: p.key, body: { order_ref: 'ORD-2' } }), 409, 'invalid-state');
      expectProblem(await app.http('POST', `/v1/redemptions/${d.id}/void`, { key: p.key }), 409, 'invalid-state');
      expect(expectData(await app.http('GET', `/v1/redemptions?code=${d.code}`, { key: p.key }), 200).valid).toBe(false);
      b = (await member(p.key, m.id)).balances;
      expect(b).toMatchObject({ available_cents: 700, lifetime_redeemed_cents: 300 });
      expectValidation(await app.http('POST', `/v1/redemptions/${d.id}/confirm`, { key: p.key, body: {} }), '/order_ref');
      expectProblem(await app.http('POST', `/v1/redemptions/RD-${'0'.repeat(26)}/confirm`, { key: p.key, body: { order_ref: 'x' } }), 404, 'not-found');
      expectProblem(await app.http('POST', `/v1/redemptions/RD-${'0'.repeat(26)}/void`, { key: p.key }), 404, 'not-found');
    });

    it('void → 200 restored, points back at once, lifetime_redeemed net; void again 200; confirm after void 409', async () => {
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      const d = expectData(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 400 } }), 201);
      const v = expectData(await app.http('POST', `/v1/redemptions/${d.id}/void`, { key: p.key }), 200);
      expectRedemption(v);
      expect(v).toMatchObject({ id: d.id, status: 'restored' });
      expect((await member(p.key, m.id)).balances).toMatchObject({ available_cents: 1_000, lifetime_redeemed_cents: 0 });
      const entries = await ledger(p.key, m.id);
      expect(entries.find((e) => e.type === 'reverse')).toMatchObject({ amount_cents: 400, parent_entry_id: d.ledger_entry_id });
      expect(expectData(await app.http('POST', `/v1/redemptions/${d.id}/void`, { key: p.key }), 200).status).toBe('restored');
      expectProblem(await app.http('POST', `/v1/redemptions/${d.id}/confirm`, { key: p.key, body: { order_ref: 'o' } }), 409, 'invalid-state');
      expect((await member(p.key, m.id)).balances.available_cents).toBe(1_000);
    });

    it('direct: order_ref required (422); 201 used at once; no body order_ref → 422', async () => {
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      expectValidation(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 100, mode: 'direct' } }), '/order_ref');
      const d = expectData(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 100, mode: 'direct', order_ref: 'D-1' } }), 201);
      expectRedemption(d);
      expect(d).toMatchObject({ status: 'used', mode: 'direct', order_ref: 'D-1', amount_cents: 100 });
      expect((await member(p.key, m.id)).balances).toMatchObject({ available_cents: 900, lifetime_redeemed_cents: 100 });
    });

    it('422 balance-insufficient; 422 validation for amount 0 / bad mode; 404 unknown member; rule-ineligible below min_redeem_cents', async () => {
      const m = await enrol(p.key);
      await credit(p.key, m.id, 100);
      expectProblem(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 101 } }), 422, 'balance-insufficient');
      expectValidation(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 0 } }), '/amount_cents');
      expectValidation(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: {} }), '/amount_cents');
      expectValidation(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 1, mode: 'cash' } }), '/mode');
      expectProblem(await app.http('POST', `/v1/members/M-${'4'.repeat(26)}/redemptions`, { key: p.key, body: { amount_cents: 1 } }), 404, 'not-found');
      const q = await programme({ settings: { min_redeem_cents: 500 } });
      const n = await enrol(q.key);
      await credit(q.key, n.id, 1_000);
      expectProblem(await app.http('POST', `/v1/members/${n.id}/redemptions`, { key: q.key, body: { amount_cents: 499 } }), 422, 'rule-ineligible');
      expect((await app.http('POST', `/v1/members/${n.id}/redemptions`, { key: q.key, body: { amount_cents: 500 } })).status).toBe(201);
    });

    it('sandbox: an unconfirmed voucher expires after voucher_ttl_seconds and its points come back', async () => {
      const q = await programme({ settings: { voucher_ttl_seconds: 3_600 } });
      const m = await enrol(q.testKey);
      await credit(q.testKey, m.id, 1_000);
      const d = expectData(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: q.testKey, body: { amount_cents: 250 } }), 201);
      expect(Date.parse(d.expires_at) - Date.parse(d.created_at)).toBe(3_600_000);
      await advance(q.id, 3_601);
      await eventually(async () => {
        const look = expectData(await app.http('GET', `/v1/redemptions?code=${d.code}`, { key: q.testKey }), 200);
        expect(look).toMatchObject({ status: 'expired', valid: false });
      }, { timeoutMs: 10_000 });
      expect((await member(q.testKey, m.id)).balances).toMatchObject({ available_cents: 1_000, lifetime_redeemed_cents: 0 });
      expectProblem(await app.http('POST', `/v1/redemptions/${d.id}/confirm`, { key: q.testKey, body: { order_ref: 'late' } }), 409, 'invalid-state');
      expectProblem(await app.http('POST', `/v1/redemptions/${d.id}/void`, { key: q.testKey }), 409, 'invalid-state');
    });

    it('spending never drives spendable below zero under concurrency', async () => {
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      const rs = await Promise.all(Array.from({ length: 10 }, () => app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 300 } })));
      expect(rs.filter((r) => r.status === 201)).toHaveLength(3);
      rs.filter((r) => r.status !== 201).forEach((r) => expectProblem(r, 422, 'balance-insufficient'));
      expect((await member(p.key, m.id)).balances).toMatchObject({ available_cents: 100, spendable_cents: 100 });
    });
  });

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('quotes and reservations (decisions §6)', () => {
    it('quote: {spendable_cents, minimum_cents, maximum_cents, tender_blocked}; maths; nothing held', async () => {
      const p = await programme({ settings: { min_redeem_cents: 200, max_order_share_pct: 50, blocked_payment_methods: ['gift_card'] } });
      const m = await enrol(p.key, { external_ref: 'q-1' });
      await credit(p.key, m.id, 1_000);
      const quote = async (body: Record<string, unknown>) => expectData(await app.http('POST', '/v1/redemption-quotes', { key: p.key, body }), 200);
      const q1 = await quote({ member_id: m.id, eligible_total_cents: 1_001, payment_method: 'card' });
      expect(q1).toEqual(expect.objectContaining({ spendable_cents: 1_000, minimum_cents: 200, maximum_cents: 500, tender_blocked: false }));
      // capped by spendable
      expect((await quote({ member_id: 'ref:q-1', eligible_total_cents: 100_000 })).maximum_cents).toBe(1_000);
      // below the minimum → 0
      expect((await quote({ member_id: m.id, eligible_total_cents: 399 })).maximum_cents).toBe(0);
      // blocked tender → 0
      const blocked = await quote({ member_id: m.id, eligible_total_cents: 10_000, payment_method: 'gift_card' });
      expect(blocked).toMatchObject({ maximum_cents: 0, tender_blocked: true });
      expect((await member(p.key, m.id)).balances).toMatchObject({ reserved_cents: 0, spendable_cents: 1_000 });
      expectProblem(await app.http('POST', '/v1/redemption-quotes', { key: p.key, body: { member_id: `M-${'5'.repeat(26)}`, eligible_total_cents: 1 } }), 404, 'not-found');
      expectValidation(await app.http('POST', '/v1/redemption-quotes', { key: p.key, body: { member_id: m.id } }), '/eligible_total_cents');
    });

    it('reservation: 201 record (open, RS-, expires 15 min), points held; confirm → 200 confirmed with redeem entry; idempotent; cross-state 409', async () => {
      const p = await programme();
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      const r = await app.http('POST', '/v1/redemption-reservations', { key: p.key, body: { member_id: m.id, amount_cents: 300, cart_ref: 'cart-1', eligible_total_cents: 5_000, payment_method: 'card' } });
      const d = expectData(r, 201);
      expectReservation(d);
      expect(d).toMatchObject({ status: 'open', member_id: m.id, amount_cents: 300, cart_ref: 'cart-1', order_ref: null, ledger_entry_id: null });
      expect(Math.abs(Date.parse(d.expires_at) - Date.parse(d.created_at) - 900_000)).toBeLessThan(2_000);
      expect((await member(p.key, m.id)).balances).toMatchObject({ available_cents: 1_000, reserved_cents: 300, spendable_cents: 700, lifetime_redeemed_cents: 0 });
      const c = expectData(await app.http('POST', `/v1/redemption-reservations/${d.id}/confirm`, { key: p.key, body: { order_ref: 'ORD-9' } }), 200);
      expectReservation(c);
      expect(c).toMatchObject({ id: d.id, status: 'confirmed', order_ref: 'ORD-9' });
      expect(c.ledger_entry_id).toMatch(id('LE'));
      expect((await member(p.key, m.id)).balances).toMatchObject({ available_cents: 700, reserved_cents: 0, spendable_cents: 700, lifetime_redeemed_cents: 300 });
      expect((await ledger(p.key, m.id)).find((e) => e.id === c.ledger_entry_id)).toMatchObject({ type: 'redeem', amount_cents: -300 });
      expect(expectData(await app.http('POST', `/v1/redemption-reservations/${d.id}/confirm`, { key: p.key, body: { order_ref: 'ORD-9' } }), 200).status).toBe('confirmed');
      expectProblem(await app.http('POST', `/v1/redemption-reservations/${d.id}/release`, { key: p.key }), 409, 'invalid-state');
      expect((await member(p.key, m.id)).balances.available_cents).toBe(700);
      expectProblem(await app.http('POST', `/v1/redemption-reservations/RS-${'0'.repeat(26)}/confirm`, { key: p.key, body: { order_ref: 'x' } }), 404, 'not-found');
      expectProblem(await app.http('POST', `/v1/redemption-reservations/RS-${'0'.repeat(26)}/release`, { key: p.key }), 404, 'not-found');
    });

    it('release → 200 released, points given back; release again 200; confirm after release 409', async () => {
      const p = await programme();
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      const d = expectData(await app.http('POST', '/v1/redemption-reservations', { key: p.key, body: { member_id: m.id, amount_cents: 400, cart_ref: 'cart-2' } }), 201);
      const rel = expectData(await app.http('POST', `/v1/redemption-reservations/${d.id}/release`, { key: p.key }), 200);
      expect(rel).toMatchObject({ id: d.id, status: 'released' });
      expect((await member(p.key, m.id)).balances).toMatchObject({ available_cents: 1_000, reserved_cents: 0, spendable_cents: 1_000 });
      expect(expectData(await app.http('POST', `/v1/redemption-reservations/${d.id}/release`, { key: p.key }), 200).status).toBe('released');
      expectProblem(await app.http('POST', `/v1/redemption-reservations/${d.id}/confirm`, { key: p.key, body: { order_ref: 'o' } }), 409, 'invalid-state');
    });

    it('outside the quote range → 422 rule-ineligible; beyond spendable → 422 balance-insufficient; prospect → 402', async () => {
      const p = await programme({ settings: { min_redeem_cents: 100, max_order_share_pct: 50, blocked_payment_methods: ['cash'] } });
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      const res = (body: Record<string, unknown>) => app.http('POST', '/v1/redemption-reservations', { key: p.key, body: { member_id: m.id, cart_ref: 'c', ...body } });
      expectProblem(await res({ amount_cents: 99 }), 422, 'rule-ineligible');
      expectProblem(await res({ amount_cents: 600, eligible_total_cents: 1_000 }), 422, 'rule-ineligible');
      expectProblem(await res({ amount_cents: 200, payment_method: 'cash' }), 422, 'rule-ineligible');
      expectProblem(await res({ amount_cents: 1_001, eligible_total_cents: 100_000 }), 422, 'balance-insufficient');
      expect((await res({ amount_cents: 500, eligible_total_cents: 1_000 })).status).toBe(201);
      const prospect = expectData(await app.http('POST', '/v1/members/resolve', { key: p.key, body: { phone: '+14155550150' } }), 201);
      expectProblem(await app.http('POST', '/v1/redemption-reservations', { key: p.key, body: { member_id: prospect.id, amount_cents: 100, cart_ref: 'c' } }), 402, 'redemption-not-allowed');
    });

    it('sandbox: an open reservation lapses after 15 minutes; held points freed', async () => {
      const p = await programme();
      const m = await enrol(p.testKey);
      await credit(p.testKey, m.id, 1_000);
      const d = expectData(await app.http('POST', '/v1/redemption-reservations', { key: p.testKey, body: { member_id: m.id, amount_cents: 300, cart_ref: 'cart-x' } }), 201);
      await advance(p.id, 901);
      await eventually(async () => {
        expect(expectData(await app.http('GET', `/v1/redemption-reservations/${d.id}`, { key: p.testKey }), 200).status).toBe('expired');
      }, { timeoutMs: 10_000 });
      expect((await member(p.testKey, m.id)).balances).toMatchObject({ available_cents: 1_000, reserved_cents: 0, spendable_cents: 1_000 });
      expectProblem(await app.http('POST', `/v1/redemption-reservations/${d.id}/confirm`, { key: p.testKey, body: { order_ref: 'late' } }), 409, 'invalid-state');
      expectProblem(await app.http('POST', `/v1/redemption-reservations/${d.id}/release`, { key: p.testKey }), 409, 'invalid-state');
    });

    it('an order event carrying reservation_id confirms the reservation when the order lands', async () => {
      const p = await programme({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1, timing: 'immediate' }] });
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      const d = expectData(await app.http('POST', '/v1/redemption-reservations', { key: p.key, body: { member_id: m.id, amount_cents: 300, cart_ref: 'cart-o' } }), 201);
      const s = await send(p.key, { type: 'order.paid', order_ref: 'RO-1', gross_cents: 10_000, email: m.email, reservation_id: d.id });
      expect(s.status).toBe('completed');
      const after = expectData(await app.http('GET', `/v1/redemption-reservations/${d.id}`, { key: p.key }), 200);
      expect(after).toMatchObject({ status: 'confirmed', order_ref: 'RO-1' });
      expect((await member(p.key, m.id)).balances).toMatchObject({ reserved_cents: 0, available_cents: 1_000 - 300 + 100 });
    });
  });

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('programme and liability', () => {
    it('GET /v1/programs and /v1/programmes: identical Program with rules (all fields), tiers (all fields), settings', async () => {
      const p = await programme({
        program_name: 'Stars', currency_name: 'stars',
        rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1.5, timing: 'paid', tags: null, min_order_cents: 100, cap_per_order_cents: 10_000, expiry_months: 12 }],
        tiers: [{ name: 'Gold', level: 1, threshold_type: 'spend', threshold_value: 100_000, earn_multiplier: 1.5, benefits: { free_shipping: true } }],
      });
      const a = expectData(await app.http('GET', '/v1/programs', { key: p.key }), 200);
      const b = expectData(await app.http('GET', '/v1/programmes', { key: p.key }), 200);
      expect(b).toEqual(a);
      expect(a).toMatchObject({ program_name: 'Stars', currency_name: 'stars' });
      expect(typeof a.settings).toBe('object');
      expect(a.rules).toHaveLength(1);
      expect(a.rules[0]).toMatchObject({ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1.5, timing: 'paid', tags: null, min_order_cents: 100, cap_per_order_cents: 10_000, expiry_months: 12 });
      expect(Number.isInteger(a.rules[0].version)).toBe(true);
      expect(a.tiers[0]).toMatchObject({ name: 'Gold', level: 1, threshold_type: 'spend', threshold_value: 100_000, earn_multiplier: 1.5, benefits: { free_shipping: true } });
      for (const f of ['criteria', 'criteria_mode', 'window', 'window_days']) expect(a.tiers[0]).toHaveProperty(f);
      expect(Array.isArray(a.tiers[0].criteria)).toBe(true);
      expect(['all', 'any']).toContain(a.tiers[0].criteria_mode);
      expect(['lifetime', 'calendar_year', 'rolling_365', 'custom']).toContain(a.tiers[0].window);
      // the sandbox mirrors the live rules and tiers
      expect(expectData(await app.http('GET', '/v1/programs', { key: p.testKey }), 200).rules).toEqual(a.rules);
      // PUT /rules bumps the version
      const put = await app.admin('PUT', `/admin/v1/programs/${p.id}/rules`, { rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 2, timing: 'paid' }] });
      expect(put.status).toBe(200);
      const after = expectData(await app.http('GET', '/v1/programs', { key: p.key }), 200);
      expect(after.rules[0].version).toBeGreaterThan(a.rules[0].version);
    });

    it('GET /v1/tenant/liability: integer fields, as_of, Cache-Control max-age=30; members excludes deleted', async () => {
      const p = await programme({ rules: [
        { id: 'a', name: 'A', type: 'base', earn_rate_pct: 1, timing: 'immediate' },
        { id: 'b', name: 'B', type: 'base', earn_rate_pct: 2, timing: 'return_window' },
      ] });
      await send(p.key, { type: 'order.paid', order_ref: 'LI-1', gross_cents: 10_000, email: 'li1@example.com' });
      const m = await enrol(p.key);
      await credit(p.key, m.id, 500);
      const v = expectData(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 200 } }), 201);
      expect(v.status).toBe('created');
      const r = await app.http('GET', '/v1/tenant/liability', { key: p.key });
      const d = expectData(r, 200);
      expect(r.headers.get('cache-control')).toMatch(/max-age=30/);
      for (const f of ['outstanding_cents', 'available_cents', 'pending_cents', 'lifetime_issued_cents', 'lifetime_redeemed_cents', 'members']) expect(Number.isSafeInteger(d[f])).toBe(true);
      expect(d.as_of).toMatch(ISO);
      expect(d).toMatchObject({ available_cents: 100 + 300, pending_cents: 200, outstanding_cents: 600, lifetime_redeemed_cents: 200, members: 2 });
      expect(d.lifetime_issued_cents).toBe(600);
      // live and sandbox are separate figures
      const t = expectData(await app.http('GET', '/v1/tenant/liability', { key: p.testKey }), 200);
      expect(t).toMatchObject({ outstanding_cents: 0, members: 0 });
    });
  });

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('referrals (decisions §7)', () => {
    it('GET /v1/members/{id}/referral {code, link, stats}; POST /v1/referrals 201 {id RF-, code, advocate_id, friend_id, status, created_at}; 404/422/409', async () => {
      const p = await programme({ settings: { referral_link_template: 'https://shop.example/r/{code}' } });
      const adv = await enrol(p.key);
      const det = expectData(await app.http('GET', `/v1/members/${adv.id}/referral`, { key: p.key }), 200);
      expect(det).toMatchObject({ code: adv.referral_code, link: `https://shop.example/r/${adv.referral_code}`, stats: { pending: 0, qualified: 0, rewarded: 0 } });
      expectProblem(await app.http('GET', `/v1/members/M-${'6'.repeat(26)}/referral`, { key: p.key }), 404, 'not-found');
      const friend = await enrol(p.key);
      const r = await app.http('POST', '/v1/referrals', { key: p.key, body: { code: adv.referral_code, friend_member_id: friend.id } });
      const d = expectData(r, 201);
      expect(d.id).toMatch(id('RF'));
      expect(d).toMatchObject({ code: adv.referral_code, advocate_id: adv.id, friend_id: friend.id, status: 'pending' });
      expect(d.created_at).toMatch(ISO);
      expect(expectData(await app.http('GET', `/v1/members/${adv.id}/referral`, { key: p.key }), 200).stats).toEqual({ pending: 1, qualified: 0, rewarded: 0 });
      const again = await app.http('POST', '/v1/referrals', { key: p.key, body: { code: adv.referral_code, friend_member_id: friend.id } });
      expect(again.status).toBe(409);
      expectProblem(await app.http('POST', '/v1/referrals', { key: p.key, body: { code: 'ZZZZZZZZ', friend_member_id: friend.id } }), 404, 'not-found');
      expectProblem(await app.http('POST', '/v1/referrals', { key: p.key, body: { code: adv.referral_code, friend_member_id: adv.id } }), 422, 'rule-ineligible');
      // without a template the link is null
      const q = await programme();
      const other = await enrol(q.key);
      expect(expectData(await app.http('GET', `/v1/members/${other.id}/referral`, { key: q.key }), 200).link).toBeNull();
    });

    it("a friend's first qualifying paid order rewards the advocate (earn, rule referral) → rewarded", async () => {
      const p = await programme({ rules: [{ id: 'ref', name: 'Referral', type: 'referral', amount_cents: 500, timing: 'immediate', min_order_cents: 1_000 }] });
      const adv = await enrol(p.key);
      const friend = await enrol(p.key);
      const ref = expectData(await app.http('POST', '/v1/referrals', { key: p.key, body: { code: adv.referral_code, friend_member_id: friend.id } }), 201);
      await send(p.key, { type: 'order.paid', order_ref: 'RF-1', gross_cents: 999, email: friend.email });
      expect(expectData(await app.http('GET', `/v1/members/${adv.id}/referral`, { key: p.key }), 200).stats).toMatchObject({ pending: 1 });
      await send(p.key, { type: 'order.paid', order_ref: 'RF-2', gross_cents: 1_000, email: friend.email });
      await eventually(async () => {
        expect(expectData(await app.http('GET', `/v1/members/${adv.id}/referral`, { key: p.key }), 200).stats).toEqual({ pending: 0, qualified: 0, rewarded: 1 });
      }, { timeoutMs: 10_000 });
      expect(expectData(await app.http('GET', `/v1/referrals/${ref.id}`, { key: p.key }), 200).status).toBe('rewarded');
      const earns = (await ledger(p.key, adv.id)).filter((e) => e.type === 'earn');
      expect(earns.map((e) => [e.rule, e.amount_cents])).toEqual([['referral', 500]]);
    });

    it('a friend who already has a paid order is 422 rule-ineligible', async () => {
      const p = await programme({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1, timing: 'immediate' }] });
      const adv = await enrol(p.key);
      const buyer = await enrol(p.key);
      await send(p.key, { type: 'order.paid', order_ref: `fb-${randomUUID()}`, gross_cents: 5_000, email: buyer.email });
      expectProblem(await app.http('POST', '/v1/referrals', { key: p.key, body: { code: adv.referral_code, friend_member_id: buyer.id } }), 422, 'rule-ineligible');
    });

    it('fraud checks hold a referral with the same normalised email as the advocate', async () => {
      const p = await programme();
      const adv = await enrol(p.key, { email: `jo.hn-${randomUUID().slice(0, 8)}@example.com` });
      const [local, domain] = adv.email.split('@');
      const friend = await enrol(p.key, { email: `${local.replace('.', '').toUpperCase()}+x@${domain}` });
      const r = expectData(await app.http('POST', '/v1/referrals', { key: p.key, body: { code: adv.referral_code, friend_member_id: friend.id } }), 201);
      expect(r.status).toBe('held');
    });
  });

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('webhook endpoints (decisions §8)', () => {
    it('create → 201 WebhookEndpoint + secret once (whsec_ + base64 of 32 bytes); list hides secrets; delete → 204 then 404', async () => {
      const p = await programme();
      const r = await app.http('POST', '/v1/webhook_endpoints', { key: p.key, body: { url: 'https://example.com/hooks', events: ['member.enrolled', 'balance.updated'] } });
      const d = expectData(r, 201);
      expect(d.id).toMatch(id('WE'));
      expect(d).toMatchObject({ url: 'https://example.com/hooks', events: ['member.enrolled', 'balance.updated'], status: 'active', failure_count: 0, disabled_at: null });
      expect(d.created_at).toMatch(ISO);
      expect(d.secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
      expect(Buffer.from(d.secret.slice(6), 'base64')).toHaveLength(32);
      const list = expectData(await app.http('GET', '/v1/webhook_endpoints', { key: p.key }), 200);
      expect(list.map((x: any) => x.id)).toEqual([d.id]);
      expect(list[0]).not.toHaveProperty('secret');
      expect(JSON.stringify(list)).not.toContain(d.secret);
      const del = await app.http('DELETE', `/v1/webhook_endpoints/${d.id}`, { key: p.key });
      expect(del.status).toBe(204);
      expect(del.headers.get('x-request-id')).toBeTruthy();
      expectProblem(await app.http('DELETE', `/v1/webhook_endpoints/${d.id}`, { key: p.key }), 404, 'not-found');
      expect(expectData(await app.http('GET', '/v1/webhook_endpoints', { key: p.key }), 200)).toEqual([]);
    });

    it('422 for a missing/invalid url, empty or unknown events; live refuses loopback/http (SSRF)', async () => {
      const p = await programme();
      const post = (body: unknown, key = p.key) => app.http('POST', '/v1/webhook_endpoints', { key, body });
      expectValidation(await post({ events: ['member.enrolled'] }), '/url');
      expectValidation(await post({ url: 'not a url', events: ['member.enrolled'] }), '/url');
      expectValidation(await post({ url: 'https://example.com/h' }), '/events');
      expectValidation(await post({ url: 'https://example.com/h', events: [] }), '/events');
      expectValidation(await post({ url: 'https://example.com/h', events: ['order.paid'] }));
      expectValidation(await post({ url: 'http://example.com/h', events: ['member.enrolled'] }), '/url');
      expectValidation(await post({ url: 'https://127.0.0.1/h', events: ['member.enrolled'] }), '/url');
      expectValidation(await post({ url: 'https://10.0.0.1/h', events: ['member.enrolled'] }), '/url');
      expectValidation(await post({ url: `https://example.com/${'a'.repeat(2050)}`, events: ['member.enrolled'] }), '/url');
      // test mode: http only for loopback
      expectValidation(await post({ url: 'http://example.com/h', events: ['member.enrolled'] }, p.testKey), '/url');
      expect((await post({ url: 'http://127.0.0.1:9/h', events: ['member.enrolled'] }, p.testKey)).status).toBe(201);
      // every documented kind is accepted
      const kinds = ['member.enrolled', 'ledger.entry.created', 'balance.updated', 'tier.changed', 'referral.qualified', 'redemption.created', 'redemption.confirmed', 'redemption.voided', 'reward.expiring_soon'];
      expect((await post({ url: 'https://example.com/all', events: kinds })).status).toBe(201);
    });

    it('test mode allows http loopback; POST /{id}/test sends a signed webhook.test at once → 200 {delivery_id WD-, status_code, ok, duration_ms}; events are delivered signed', async () => {
      const p = await programme();
      const created = expectData(await app.http('POST', '/v1/webhook_endpoints', { key: p.testKey, body: { url: receiver.url, events: ['member.enrolled', 'balance.updated', 'ledger.entry.created'] } }), 201);
      const before = receiver.seen.length;
      const t = expectData(await app.http('POST', `/v1/webhook_endpoints/${created.id}/test`, { key: p.testKey }), 200);
      expect(t.delivery_id).toMatch(id('WD'));
      expect(t).toMatchObject({ status_code: 200, ok: true });
      expect(Number.isFinite(t.duration_ms)).toBe(true);
      const got = receiver.seen.slice(before).find((x) => x.body?.type === 'webhook.test');
      expect(got).toBeDefined();
      const check = (x: Received) => {
        const wid = String(x.headers['webhook-id']);
        const ts = String(x.headers['webhook-timestamp']);
        expect(ts).toMatch(/^\d+$/);
        expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(120);
        const sig = createHmac('sha256', Buffer.from(created.secret.slice(6), 'base64')).update(`${wid}.${ts}.${x.raw}`).digest('base64');
        expect(String(x.headers['webhook-signature']).split(' ')).toContain(`v1,${sig}`);
        expect(x.body).toEqual(expect.objectContaining({ id: expect.any(String), type: expect.any(String), created_at: expect.stringMatching(ISO), livemode: false }));
        expect(x.body).toHaveProperty('data');
      };
      check(got!);
      expect(String(got!.headers['webhook-id'])).toBe(t.delivery_id);
      const m = await enrol(p.testKey);
      await credit(p.testKey, m.id, 123);
      const seen = await eventually(() => {
        const mine = receiver.seen.filter((x) => JSON.stringify(x.body?.data ?? {}).includes(m.id));
        expect(mine.map((x) => x.body.type)).toEqual(expect.arrayContaining(['member.enrolled', 'balance.updated', 'ledger.entry.created']));
        return mine;
      }, { timeoutMs: 15_000 });
      seen.forEach(check);
      const enrolled = seen.find((x) => x.body.type === 'member.enrolled')!;
      expect(enrolled.body.data.id).toBe(m.id);
      // data is the resource in its public API shape
      const entry = seen.find((x) => x.body.type === 'ledger.entry.created')!.body.data;
      expectLedgerEntry(entry);
      expect(entry).toMatchObject({ type: 'adjust', amount_cents: 123, reason_code: 'seed' });
      const balance = seen.filter((x) => x.body.type === 'balance.updated').map((x) => x.body.data);
      expect(balance.some((b) => b.id === m.id && b.balances?.available_cents === 123)).toBe(true);
      // one webhook event id per event; delivery ids differ
      expect(new Set(seen.map((x) => x.body.id)).size).toBe(seen.length);
      expectProblem(await app.http('POST', `/v1/webhook_endpoints/WE-${'0'.repeat(26)}/test`, { key: p.testKey }), 404, 'not-found');
    });
  });

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('rate limits (decisions §3, spec Limits)', () => {
    it('X-RateLimit-Limit is the burst, Remaining counts down; an empty bucket → 429 rate-limited with Retry-After (≥1 s) and retry_after', async () => {
      const p = await programme();
      const k = await p.mint('live', ALL, { burst: 3, per_second: 1 });
      const rs: R[] = [];
      for (let i = 0; i < 4; i++) rs.push(await app.http('GET', '/v1/ping', { key: k }));
      expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 429]);
      expect(rs.map((r) => r.headers.get('x-ratelimit-limit'))).toEqual(['3', '3', '3', '3']);
      expect(rs.slice(0, 3).map((r) => r.headers.get('x-ratelimit-remaining'))).toEqual(['2', '1', '0']);
      const limited = rs[3];
      expectProblem(limited, 429, 'rate-limited');
      expect(limited.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(Number.isInteger(limited.body.retry_after)).toBe(true);
      expect(limited.body.retry_after).toBeGreaterThanOrEqual(1);
      expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    });

    it('default bucket is burst 50; a batch of n events costs ceil(n/10) tokens', async () => {
      const p = await programme();
      const r = await app.http('GET', '/v1/ping', { key: p.liveKey });
      expect(r.headers.get('x-ratelimit-limit')).toBe('50');
      expect(r.headers.get('x-ratelimit-remaining')).toBe('49');
      const k = await p.mint('live', ALL, { burst: 20, per_second: 1 });
      const batch = (n: number) => ({ events: Array.from({ length: n }, (_, i) => ({ type: 'customer.created', email: `c${i}-${randomUUID()}@example.com` })) });
      const b1 = await app.http('POST', '/v1/events', { key: k, body: batch(11) });
      expect(b1.status).toBe(202);
      expect(b1.headers.get('x-ratelimit-remaining')).toBe('18');
      const b2 = await app.http('POST', '/v1/events', { key: k, body: batch(100) });
      expect(b2.status).toBe(202);
      expect(b2.headers.get('x-ratelimit-remaining')).toBe('8');
    });
  });

  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('Idempotency-Key on writes other than events', () => {
    let p: Awaited<ReturnType<typeof programme>>;
    beforeAll(async () => { p = await programme(); });

    it('same key and body → original response with Idempotent-Replay: true; different body → 409 idempotency-key-reused', async () => {
      const k = `idem-${randomUUID()}`;
      const body = { email: `idem-${randomUUID()}@example.com` };
      const a = await app.http('POST', '/v1/members', { key: p.key, body, headers: { 'Idempotency-Key': k } });
      expect(a.status).toBe(201);
      const b = await app.http('POST', '/v1/members', { key: p.key, body, headers: { 'Idempotency-Key': k } });
      expect(b.status).toBe(201);
      expect(b.headers.get('idempotent-replay')).toBe('true');
      expect(b.body).toEqual(a.body);
      expectProblem(await app.http('POST', '/v1/members', { key: p.key, body: { email: 'other@example.com' }, headers: { 'Idempotency-Key': k } }), 409, 'idempotency-key-reused');
    });

    it('the same key while the first call runs → 409 idempotency-in-progress, reason in_progress, Retry-After; or the replay', async () => {
      const h = { 'Idempotency-Key': `conc-${randomUUID()}` };
      const body = { email: `conc-${randomUUID()}@example.com` };
      const rs = await Promise.all(Array.from({ length: 6 }, () => app.http('POST', '/v1/members', { key: p.key, body, headers: h })));
      const created = rs.filter((r) => r.status === 201);
      expect(created.length).toBeGreaterThanOrEqual(1);
      expect(new Set(created.map((r) => r.body.data.id)).size).toBe(1);
      for (const r of rs.filter((x) => x.status !== 201)) {
        expectProblem(r, 409, 'idempotency-in-progress');
        expect(r.body.reason).toBe('in_progress');
        expect(r.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      }
      expect(expectList(await app.http('GET', `/v1/members?email=${encodeURIComponent(body.email)}`, { key: p.key }))).toHaveLength(1);
    });

    it('a redemption with the same key debits once', async () => {
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      const h = { 'Idempotency-Key': `rd-${randomUUID()}` };
      const a = await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 100 }, headers: h });
      const b = await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 100 }, headers: h });
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(b.body.data.id).toBe(a.body.data.id);
      expect(b.headers.get('idempotent-replay')).toBe('true');
      expect((await member(p.key, m.id)).balances.available_cents).toBe(900);
    });

    it('a redemption\'s key again with another body or for another member → 409 idempotency-key-reused; the replay after a void answers as the first call', async () => {
      const [m, other] = [await enrol(p.key), await enrol(p.key)];
      await credit(p.key, m.id, 1_000);
      await credit(p.key, other.id, 1_000);
      const h = { 'Idempotency-Key': `rd2-${randomUUID()}` };
      const body = { amount_cents: 150, mode: 'voucher' };
      const redeem = (mid: string, b: Record<string, unknown>) => app.http('POST', `/v1/members/${mid}/redemptions`, { key: p.key, body: b, headers: h });
      const a = await redeem(m.id, body);
      expect(a.status).toBe(201);
      expect(a.headers.get('idempotent-replay')).toBeNull();
      expectProblem(await redeem(m.id, { ...body, amount_cents: 160 }), 409, 'idempotency-key-reused');
      expectProblem(await redeem(m.id, { ...body, order_ref: 'O-other' }), 409, 'idempotency-key-reused');
      expectProblem(await redeem(other.id, body), 409, 'idempotency-key-reused');
      expect((await member(p.key, m.id)).balances.available_cents).toBe(850);
      expect((await member(p.key, other.id)).balances.available_cents).toBe(1_000);
      expect((await app.http('POST', `/v1/redemptions/${a.body.data.id}/void`, { key: p.key })).status).toBe(200);
      const b = await redeem(m.id, body);
      expect(b.status).toBe(201);
      expect(b.headers.get('idempotent-replay')).toBe('true');
      expect(b.body).toEqual(a.body);
      expect((await member(p.key, m.id)).balances.available_cents).toBe(1_000);
    });

    it('a reservation with the same key holds once; the key again with another body or for another member → 409 idempotency-key-reused', async () => {
      const [m, other] = [await enrol(p.key), await enrol(p.key)];
      await credit(p.key, m.id, 1_000);
      await credit(p.key, other.id, 1_000);
      const h = { 'Idempotency-Key': `rs-${randomUUID()}` };
      const body = { member_id: m.id, amount_cents: 200, cart_ref: 'cart-1', eligible_total_cents: 5_000, payment_method: 'card' };
      const reserve = (b: Record<string, unknown>, headers: Record<string, string> = h) => app.http('POST', '/v1/redemption-reservations', { key: p.key, body: b, headers });
      const a = await reserve(body);
      const b = await reserve(body);
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(a.headers.get('idempotent-replay')).toBeNull();
      expect(b.headers.get('idempotent-replay')).toBe('true');
      expect(b.body).toEqual(a.body);
      expectProblem(await reserve({ ...body, amount_cents: 300 }), 409, 'idempotency-key-reused');
      expectProblem(await reserve({ ...body, eligible_total_cents: 6_000 }), 409, 'idempotency-key-reused');
      expectProblem(await reserve({ ...body, member_id: other.id }), 409, 'idempotency-key-reused');
      // held once, on the first member only; the other member's points untouched
      expect((await member(p.key, m.id)).balances).toMatchObject({ reserved_cents: 200, spendable_cents: 800 });
      expect((await member(p.key, other.id)).balances).toMatchObject({ reserved_cents: 0, spendable_cents: 1_000 });
      // after the reservation was confirmed, the same call still answers as the first one did
      expect((await app.http('POST', `/v1/redemption-reservations/${a.body.data.id}/confirm`, { key: p.key, body: { order_ref: 'o-1' } })).status).toBe(200);
      const c = await reserve(body);
      expect(c.status).toBe(201);
      expect(c.body).toEqual(a.body);
      expect((await member(p.key, m.id)).balances).toMatchObject({ available_cents: 800, reserved_cents: 0 });
      // a key is the programme's: the test partition does not see the live one's
      const t = await enrol(p.testKey);
      await credit(p.testKey, t.id, 1_000);
      const sandbox = await app.http('POST', '/v1/redemption-reservations', { key: p.testKey, body: { ...body, member_id: t.id }, headers: h });
      expect(sandbox.status).toBe(201);
      expect(sandbox.headers.get('idempotent-replay')).toBeNull();
    });

    it('the same reservation key sent by six callers at once, for two members: one reservation; the rest replay it or are refused', async () => {
      const [m, other] = [await enrol(p.key), await enrol(p.key)];
      await credit(p.key, m.id, 1_000);
      await credit(p.key, other.id, 1_000);
      const h = { 'Idempotency-Key': `rs-conc-${randomUUID()}` };
      const body = { member_id: m.id, amount_cents: 100, cart_ref: 'cart-c', eligible_total_cents: 5_000, payment_method: 'card' };
      const rs = await Promise.all(Array.from({ length: 6 }, (_, i) =>
        app.http('POST', '/v1/redemption-reservations', { key: p.key, body: i % 2 ? { ...body, member_id: other.id } : body, headers: h })));
      const created = rs.filter((r) => r.status === 201);
      expect(created.length).toBeGreaterThanOrEqual(1);
      expect(new Set(created.map((r) => r.body.data.id)).size).toBe(1);
      for (const r of rs.filter((x) => x.status !== 201)) expect(r.status).toBe(409);
      const held = [(await member(p.key, m.id)).balances.reserved_cents, (await member(p.key, other.id)).balances.reserved_cents];
      expect(held.sort()).toEqual([0, 100]);
    });

    it('a reservation refused (422) does not keep its key: the same key with a valid body runs', async () => {
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      const h = { 'Idempotency-Key': `rs-fail-${randomUUID()}` };
      const body = { member_id: m.id, amount_cents: 5_000, cart_ref: 'cart-f', eligible_total_cents: 10_000, payment_method: 'card' };
      expect((await app.http('POST', '/v1/redemption-reservations', { key: p.key, body, headers: h })).status).toBe(422);
      const ok = await app.http('POST', '/v1/redemption-reservations', { key: p.key, body: { ...body, amount_cents: 100 }, headers: h });
      expect(ok.status).toBe(201);
      expect(ok.headers.get('idempotent-replay')).toBeNull();
    });

    it('a failed first call is not remembered: the same key runs again', async () => {
      const m = await enrol(p.key);
      const h = { 'Idempotency-Key': `fail-${randomUUID()}` };
      expectProblem(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 100 }, headers: h }), 422, 'balance-insufficient');
      await credit(p.key, m.id, 100);
      expect((await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 100 }, headers: h })).status).toBe(201);
    });

    it('Idempotency-Key up to 255 characters elsewhere; 256 → 422', async () => {
      expect((await app.http('POST', '/v1/members', { key: p.key, body: { email: `l-${randomUUID()}@example.com` }, headers: { 'Idempotency-Key': 'x'.repeat(255) } })).status).toBe(201);
      expectProblem(await app.http('POST', '/v1/members', { key: p.key, body: { email: `l-${randomUUID()}@example.com` }, headers: { 'Idempotency-Key': 'y'.repeat(256) } }), 422, 'validation');
      // the routes whose command keeps the key check it the same way
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      const long = 'z'.repeat(256);
      const refused = [
        await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 100 }, headers: { 'Idempotency-Key': long } }),
        await app.http('POST', '/v1/redemption-reservations', { key: p.key, body: { member_id: m.id, amount_cents: 100, cart_ref: 'c-l', eligible_total_cents: 5_000, payment_method: 'card' }, headers: { 'Idempotency-Key': long } }),
      ];
      for (const r of refused) {
        expectProblem(r, 422, 'validation');
        expect(JSON.stringify(r.body)).toContain('/headers/idempotency-key');
      }
      expect((await member(p.key, m.id)).balances).toMatchObject({ available_cents: 1_000, reserved_cents: 0 });
      expect((await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 100 }, headers: { 'Idempotency-Key': 'x'.repeat(255) } })).status).toBe(201);
    });
  });
  // ─────────────────────────────────────────────────────────────────────────────────────────────
  describe('more rules, expiry, admin plane, isolation', () => {
    it('signup_bonus: a fixed amount_cents on enrolment, rule signup, once', async () => {
      const p = await programme({ rules: [{ id: 'su', name: 'Welcome', type: 'signup_bonus', amount_cents: 250, timing: 'immediate' }] });
      const m = await enrol(p.key);
      const entries = await ledger(p.key, m.id);
      expect(entries.map((e) => [e.type, e.rule, e.amount_cents, e.status])).toEqual([['earn', 'su', 250, 'posted']]);
      expect((await member(p.key, m.id)).balances.available_cents).toBe(250);
      expect((await app.http('POST', '/v1/members', { key: p.key, body: { email: m.email } })).status).toBe(200);
      expect(await ledger(p.key, m.id)).toHaveLength(1);
    });

    it('campaign: earns only between starts_at and ends_at and never beyond budget_cents in total', async () => {
      const day = 86_400_000;
      const p = await programme({ rules: [
        { id: 'camp', name: 'Spring', type: 'campaign', earn_rate_pct: 10, timing: 'immediate', starts_at: new Date(Date.now() - day).toISOString(), ends_at: new Date(Date.now() + day).toISOString(), budget_cents: 150 },
        { id: 'past', name: 'Old', type: 'campaign', earn_rate_pct: 10, timing: 'immediate', starts_at: new Date(Date.now() - 3 * day).toISOString(), ends_at: new Date(Date.now() - 2 * day).toISOString() },
      ] });
      const amounts: number[] = [];
      for (const ref of ['CA-1', 'CA-2', 'CA-3']) {
        const s = await send(p.key, { type: 'order.paid', order_ref: ref, gross_cents: 1_000, email: 'camp@example.com' });
        expect(s.status).toBe('completed');
      }
      const [m] = expectList(await app.http('GET', '/v1/members?email=camp%40example.com', { key: p.key }));
      for (const e of await ledger(p.key, m.id)) { expect(e.rule).toBe('camp'); amounts.push(e.amount_cents); }
      expect(amounts).toEqual([100, 50]);
    });

    it('expiry fixed_days: expiring_30d_cents counts what expires soon; the test clock expires each lot with an expire entry (parent = lot)', async () => {
      const p = await programme({ settings: { expiry: { policy: 'fixed_days', days: 20 } }, rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 1, timing: 'immediate' }] });
      const m = await enrol(p.testKey, { email: 'ex@example.com' });
      await send(p.testKey, { type: 'order.paid', order_ref: 'EX-1', gross_cents: 100_000, email: 'ex@example.com' });
      expect((await member(p.testKey, m.id)).expiring_30d_cents).toBe(1_000);
      const [earn] = await ledger(p.testKey, m.id);
      expect(Math.abs(Date.parse(earn.expires_at) - Date.parse(earn.created_at) - 20 * 86_400_000)).toBeLessThan(1_000);
      // spend part of the lot first: only the unspent remainder expires
      expect((await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.testKey, body: { amount_cents: 300, mode: 'direct', order_ref: 'EX-2' } })).status).toBe(201);
      expect((await member(p.testKey, m.id)).expiring_30d_cents).toBe(700);
      await advance(p.id, 21 * 86_400);
      await eventually(async () => {
        const entries = await ledger(p.testKey, m.id);
        const exp = entries.filter((e) => e.type === 'expire');
        expect(exp.map((e) => [e.amount_cents, e.parent_entry_id])).toEqual([[-700, earn.id]]);
      }, { timeoutMs: 10_000 });
      expect((await member(p.testKey, m.id)).balances).toMatchObject({ available_cents: 0, lifetime_earned_cents: 1_000, lifetime_redeemed_cents: 300 });
      expect((await member(p.testKey, m.id)).expiring_30d_cents).toBe(0);
    });

    it('migrations: 201 {batch_id, imported, members_created}; one adjust entry (reason migration) per member; DELETE reverses the batch', async () => {
      const p = await programme();
      const existing = await enrol(p.key);
      const r = await app.admin('POST', `/admin/v1/programs/${p.id}/migrations`, { mode: 'live', entries: [
        { email: existing.email, amount_cents: 700 }, { email: 'mig-new@example.com', amount_cents: 300, external_ref: 'mig-new' },
      ] });
      const d = expectDataNoRate(r, 201);
      expect(d).toMatchObject({ imported: 2, members_created: 1 });
      expect(typeof d.batch_id).toBe('string');
      expect((await ledger(p.key, existing.id)).map((e) => [e.type, e.reason_code, e.amount_cents])).toEqual([['adjust', 'migration', 700]]);
      const created = await member(p.key, 'ref:mig-new');
      expect(created.balances.available_cents).toBe(300);
      const rev = await app.admin('DELETE', `/admin/v1/migrations/${d.batch_id}`);
      expect(rev.status).toBe(200);
      expect((await member(p.key, existing.id)).balances.available_cents).toBe(0);
      expect((await member(p.key, created.id)).balances.available_cents).toBe(0);
      expect((await ledger(p.key, existing.id)).map((e) => e.type)).toEqual(['adjust', 'reverse']);
    });

    it('sandbox wipe empties the sandbox (members 404) and keeps live data and the keys', async () => {
      const p = await programme();
      const t = await enrol(p.testKey);
      const l = await enrol(p.key);
      expect((await app.admin('POST', `/admin/v1/programs/${p.id}/sandbox/wipe`, {})).status).toBe(200);
      expectProblem(await app.http('GET', `/v1/members/${t.id}`, { key: p.testKey }), 404, 'not-found');
      expect(expectList(await app.http('GET', '/v1/members', { key: p.testKey }))).toEqual([]);
      expect((await member(p.key, l.id)).id).toBe(l.id);
      expect((await app.http('GET', '/v1/ping', { key: p.testKey })).status).toBe(200);
    });

    it('test clock: live mode is refused or unaffected; only the sandbox moves', async () => {
      const p = await programme({ settings: { voucher_ttl_seconds: 60 } });
      const m = await enrol(p.key);
      await credit(p.key, m.id, 100);
      const v = expectData(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 50 } }), 201);
      await advance(p.id, 3_600);
      await new Promise((r) => setTimeout(r, 500));
      expect(expectData(await app.http('GET', `/v1/redemptions?code=${v.code}`, { key: p.key }), 200).status).toBe('created');
    });

    it("another programme's (or mode's) redemption, reservation, webhook endpoint and referral are 404", async () => {
      const p = await programme();
      const o = await programme();
      const m = await enrol(p.key);
      await credit(p.key, m.id, 1_000);
      const v = expectData(await app.http('POST', `/v1/members/${m.id}/redemptions`, { key: p.key, body: { amount_cents: 100 } }), 201);
      const rs = expectData(await app.http('POST', '/v1/redemption-reservations', { key: p.key, body: { member_id: m.id, amount_cents: 100, cart_ref: 'iso' } }), 201);
      const we = expectData(await app.http('POST', '/v1/webhook_endpoints', { key: p.key, body: { url: 'https://example.com/iso', events: ['member.enrolled'] } }), 201);
      for (const k of [o.key, p.testKey]) {
        expectProblem(await app.http('GET', `/v1/redemptions?code=${v.code}`, { key: k }), 404, 'not-found');
        expectProblem(await app.http('POST', `/v1/redemptions/${v.id}/void`, { key: k }), 404, 'not-found');
        expectProblem(await app.http('POST', `/v1/redemptions/${v.id}/confirm`, { key: k, body: { order_ref: 'x' } }), 404, 'not-found');
        expectProblem(await app.http('POST', `/v1/redemption-reservations/${rs.id}/release`, { key: k }), 404, 'not-found');
        expectProblem(await app.http('POST', `/v1/redemption-reservations/${rs.id}/confirm`, { key: k, body: { order_ref: 'x' } }), 404, 'not-found');
        expectProblem(await app.http('DELETE', `/v1/webhook_endpoints/${we.id}`, { key: k }), 404, 'not-found');
        expectProblem(await app.http('POST', `/v1/webhook_endpoints/${we.id}/test`, { key: k }), 404, 'not-found');
        expectProblem(await app.http('POST', '/v1/redemption-quotes', { key: k, body: { member_id: m.id, eligible_total_cents: 100 } }), 404, 'not-found');
        expectProblem(await app.http('POST', '/v1/referrals', { key: k, body: { code: m.referral_code, friend_member_id: m.id } }), 404, 'not-found');
        expect(expectData(await app.http('GET', '/v1/webhook_endpoints', { key: k }), 200)).toEqual([]);
      }
      expect((await member(p.key, m.id)).balances).toMatchObject({ available_cents: 900, reserved_cents: 100 });
    });
  });
});
