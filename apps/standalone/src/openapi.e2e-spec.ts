import { readFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { join } from 'node:path';
import { eventually } from '@loyalty/testing';
import { HttpResult, startTestApp, TestApp } from './testing/harness';
import { OpenApiResponseValidator } from './testing/openapi-validator';

/**
 * The OpenAPI document against the running service: every operation is called over real HTTP and
 * every answer (successes and the problems on the way) must match the document: a documented
 * status, content type and required headers, and a body that validates against the schema with
 * unknown fields refused. At the end, every documented operation must have answered a 2xx.
 */
describe('OpenAPI document matches the live API', () => {
  let app: TestApp;
  let v: OpenApiResponseValidator;
  let hook: Server;
  let hookUrl: string;

  beforeAll(async () => {
    app = await startTestApp();
    const served = await app.http('GET', '/openapi.json');
    v = new OpenApiResponseValidator(served.body);
    hook = createServer((_req, res) => { res.writeHead(200); res.end('ok'); });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
    hookUrl = `http://127.0.0.1:${(hook.address() as { port: number }).port}/hook`;
  });
  afterAll(async () => {
    await new Promise((r) => hook?.close(r));
    await app?.close();
  });

  /** Calls `METHOD template` with path params filled in, checks the answer against the document and returns it. */
  const call = async <T = any>(method: string, template: string, opts: {
    key?: string; params?: Record<string, string>; query?: string; body?: unknown; rawBody?: string; headers?: Record<string, string>; expect?: number;
  } = {}): Promise<HttpResult<T>> => {
    const path = template.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(opts.params?.[name] ?? ''));
    const res = await app.http<T>(method, path + (opts.query ? `?${opts.query}` : ''), opts);
    if (opts.expect !== undefined && res.status !== opts.expect) {
      throw new Error(`${method} ${path}: expected ${opts.expect}, got ${res.status} ${JSON.stringify(res.body)}`);
    }
    v.check(method, template, res);
    return res;
  };
  const admin = <T = any>(method: string, template: string, opts: Parameters<typeof call>[2] = {}) => call<T>(method, template, { key: app.adminToken, ...opts });

  it('serves the committed document (only `servers` differs)', async () => {
    const served = (await app.http('GET', '/openapi.json')).body;
    const committed = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'libs', 'sdk', 'openapi.json'), 'utf8'));
    expect(served.openapi).toBe('3.1.0');
    expect({ ...served, servers: null }).toEqual({ ...committed, servers: null });
    expect(served.servers).toEqual([{ url: 'https://loyalty.test', description: 'This service' }]);
  });

  it('/docs works offline: the page loads only this service\'s pinned bundle, and /docs/api/errors is the catalogue', async () => {
    const page = await app.http('GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = String(page.body);
    const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(urls).toEqual(['/docs/assets/api-reference.js']);
    expect(html).not.toMatch(/https?:\/\/(?!loyalty\.test)[a-z0-9.-]+\.[a-z]{2,}\//i);
    expect(html).toContain('/openapi.json');
    const pinned = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')).dependencies['@scalar/api-reference'];
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    const bundle = await fetch(`${app.url}/docs/assets/api-reference.js`);
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toMatch(/javascript/);
    expect((await bundle.text()).length).toBeGreaterThan(1_000_000);

    // a real problem's `type` leads to its entry in the catalogue
    const problem = await app.http('GET', '/v1/ping');
    expect(problem.body.type).toBe('https://loyalty.test/docs/api/errors#unauthenticated');
    const catalogue = await app.http('GET', new URL(problem.body.type).pathname);
    expect(catalogue.status).toBe(200);
    expect(catalogue.headers.get('content-type')).toMatch(/^text\/html/);
    const text = String(catalogue.body);
    expect(text).not.toMatch(/<script|https?:\/\/[a-z]/i);
    for (const slug of ['validation', 'malformed-json', 'unauthenticated', 'insufficient-scope', 'not-found', 'phone-conflict', 'invalid-state',
      'idempotency-key-reused', 'idempotency-in-progress', 'balance-insufficient', 'rule-ineligible', 'redemption-not-allowed',
      'payload-too-large', 'rate-limited', 'backlog', 'internal', 'unavailable']) {
      expect(text).toContain(`<section id="${slug}">`);
    }
    expect(text).toContain('What to do');
  });

  it('every operation answers as documented', async () => {
    // ---- admin: a programme with a base rule, a tier, a referral rule and a second one reviewing earns by hand ----
    const created = await admin('POST', '/admin/v1/programs', {
      expect: 201,
      body: {
        program_name: 'Docs Coffee', currency_name: 'beans',
        rules: [
          { id: 'base', type: 'base', name: 'Base', earn_rate_pct: 10, timing: 'immediate' },
          { id: 'ref', type: 'referral', name: 'Referral', amount_cents: 300, friend_amount_cents: 100 },
        ],
        tiers: [{ name: 'Gold', level: 1, threshold_type: 'spend', threshold_value: 1000000, earn_multiplier: 1.5, benefits: { lounge: true } }],
        settings: { referral_link_template: 'https://shop.example.com/r/{code}' },
      },
    });
    const pid: string = created.body.data.id;
    const live: string = created.body.data.keys.live.key;
    // the walk makes well over a default burst of calls: a sandbox key whose limit it cannot reach
    // (the rate limit itself is exercised by the slow key below and by the gateway suite)
    const walker = await admin('POST', '/admin/v1/programs/{pid}/keys', {
      params: { pid }, body: { mode: 'test', scopes: ['ingest', 'read', 'act', 'webhooks'], name: 'walker', rate_limit: { burst: 100000, per_second: 100000 } }, expect: 201,
    });
    const K: string = walker.body.data.key;
    await admin('GET', '/admin/v1/programs/{pid}', { params: { pid }, expect: 200 });
    await admin('PATCH', '/admin/v1/programs/{pid}', { params: { pid }, body: { settings: { min_redeem_cents: 0 } }, expect: 200 });
    await admin('PUT', '/admin/v1/programs/{pid}/rules', {
      params: { pid }, expect: 200,
      body: { rules: [{ id: 'base', type: 'base', name: 'Base', earn_rate_pct: 10, timing: 'immediate' }, { id: 'ref', type: 'referral', name: 'Referral', amount_cents: 300, friend_amount_cents: 100 }] },
    });
    await admin('PUT', '/admin/v1/programs/{pid}/tiers', {
      params: { pid }, expect: 200,
      body: { tiers: [{ name: 'Gold', level: 1, threshold_type: 'spend', threshold_value: 1000000, earn_multiplier: 1.5, benefits: { lounge: true } }] },
    });
    const readOnly = await admin('POST', '/admin/v1/programs/{pid}/keys', { params: { pid }, body: { mode: 'test', scopes: ['read'], name: 'reporting' }, expect: 201 });
    const slow = await admin('POST', '/admin/v1/programs/{pid}/keys', { params: { pid }, body: { mode: 'test', scopes: ['read'], rate_limit: { burst: 1, per_second: 1 } }, expect: 201 });
    await admin('GET', '/admin/v1/programs/{pid}/keys', { params: { pid }, expect: 200 });
    await admin('GET', '/admin/v1/programs/{pid}', { params: { pid }, key: 'wrong-token', expect: 401 });

    // ---- the key, the programme ----
    await call('GET', '/v1/ping', { key: K, expect: 200 });
    await call('GET', '/v1/ping', { expect: 401 });
    await call('GET', '/v1/programs', { key: K, expect: 200 });
    await call('GET', '/v1/programmes', { key: K, expect: 200 });
    await call('GET', '/v1/tenant/liability', { key: K, expect: 200 });
    // closing the books (decisions §9a)
    const period = `from=2020-01-01T00:00:00Z&to=${encodeURIComponent(new Date(Date.now() - 1000).toISOString())}`;
    await call('GET', '/v1/tenant/liability', { key: K, query: 'as_of=2020-01-01T00:00:00Z', expect: 200 });
    await call('GET', '/v1/tenant/liability/roll-forward', { key: K, query: period, expect: 200 });
    await call('GET', '/v1/ledger-entries', { key: K, query: `${period}&limit=10`, expect: 200 });
    await admin('GET', '/admin/v1/programs/{pid}/finance/roll-forward', { params: { pid }, query: `mode=live&${period}`, expect: 200 });

    // ---- members ----
    const enrol = { email: 'ada@example.com', phone: '+14155550100', external_ref: 'cust_42', accepted_terms_version: '2025-01', marketing_consent: true };
    const ada = await call('POST', '/v1/members', { key: K, body: enrol, headers: { 'idempotency-key': 'enrol-ada' }, expect: 201 });
    const replay = await call('POST', '/v1/members', { key: K, body: enrol, headers: { 'idempotency-key': 'enrol-ada' }, expect: 201 });
    expect(replay.headers.get('idempotent-replay')).toBe('true');
    await call('POST', '/v1/members', { key: K, body: { ...enrol, marketing_consent: false }, headers: { 'idempotency-key': 'enrol-ada' }, expect: 409 });
    await call('POST', '/v1/members', { key: K, body: enrol, expect: 200 });
    await call('POST', '/v1/members', { key: K, body: { email: 'bob@example.com', phone: '+14155550100' }, expect: 409 });
    await call('POST', '/v1/members', { key: K, body: { email: 'not-an-email' }, expect: 422 });
    await call('POST', '/v1/members', { key: K, rawBody: '{"email": ', expect: 400 });
    await call('POST', '/v1/members', { key: readOnly.body.data.key, body: enrol, expect: 403 });
    const adaId: string = ada.body.data.id;
    const prospect = await call('POST', '/v1/members/resolve', { key: K, body: { phone: '+14155550111' }, expect: 201 });
    await call('POST', '/v1/members/resolve', { key: K, body: { email: 'ada@example.com' }, expect: 200 });
    await call('GET', '/v1/members', { key: K, query: 'limit=1', expect: 200 });
    await call('GET', '/v1/members', { key: K, query: 'state=gone', expect: 422 });
    await call('GET', '/v1/members/{id}', { key: K, params: { id: adaId }, expect: 200 });
    await call('GET', '/v1/members/{id}', { key: K, params: { id: 'ref:cust_42' }, expect: 200 });
    await call('GET', '/v1/members/{id}', { key: K, params: { id: 'M-01JD8X3Q7R5V2M9K4T6W8Y0ZAB' }, expect: 404 });
    await call('PATCH', '/v1/members/{id}', { key: K, params: { id: adaId }, body: { marketing_consent: false }, expect: 200 });
    await call('PATCH', '/v1/members/{id}', { key: K, params: { id: adaId }, body: { email: 'other@example.com' }, expect: 422 });

    // ---- events: single, replay, batch, refusals, status ----
    const order = { type: 'order.paid', order_ref: 'ord_1', gross_cents: 12000, customer_ref: 'cust_42', lines: [{ amount_cents: 12000, product_ref: 'beans', quantity: 2, tags: ['coffee'] }] };
    const accepted = await call('POST', '/v1/events', { key: K, body: order, expect: 202 });
    await call('POST', '/v1/events', { key: K, body: order, expect: 200 });
    await call('POST', '/v1/events', { key: K, body: { events: [{ id: 'c-1', type: 'customer.created', email: 'cy@example.com' }, { id: 'o-2', type: 'order.placed', order_ref: 'ord_2', gross_cents: 500, email: 'cy@example.com' }] }, expect: 202 });
    await call('POST', '/v1/events', { key: K, body: { type: 'order.paid', order_ref: 'ord_x', gross_cents: 1.5 }, expect: 422 });
    await call('POST', '/v1/events', { key: readOnly.body.data.key, body: order, expect: 403 });
    const evId: string = accepted.body.data.id;
    await eventually(async () => {
      const st = await call('GET', '/v1/events/{id}', { key: K, params: { id: evId }, expect: 200 });
      expect(st.body.data.status).toBe('completed');
    }, { timeoutMs: 30_000 });
    await call('GET', '/v1/events/{id}', { key: K, params: { id: 'EV-01JD8X6F8A2B4C6D8E0F2G4H6J' }, expect: 404 });
    await call('GET', '/v1/events', { key: K, query: 'status=completed', expect: 200 });
    await call('GET', '/v1/members/{id}/ledger', { key: K, params: { id: adaId }, expect: 200 });
    await call('POST', '/v1/members/{id}/adjust', { key: K, params: { id: adaId }, body: { amount_cents: 500, reason_code: 'goodwill', note: 'late delivery' }, expect: 201 });

    // ---- redemptions ----
    const voucher = await call('POST', '/v1/members/{id}/redemptions', { key: K, params: { id: adaId }, body: { amount_cents: 300 }, headers: { 'idempotency-key': 'rd-1' }, expect: 201 });
    await call('GET', '/v1/redemptions', { key: K, query: `code=${voucher.body.data.code}`, expect: 200 });
    await call('GET', '/v1/redemptions', { key: K, query: 'code=RWD-0000-0000', expect: 404 });
    await call('GET', '/v1/redemptions/{id}', { key: K, params: { id: voucher.body.data.id }, expect: 200 });
    await call('POST', '/v1/redemptions/{id}/confirm', { key: K, params: { id: voucher.body.data.id }, body: { order_ref: 'ord_9' }, expect: 200 });
    await call('POST', '/v1/redemptions/{id}/void', { key: K, params: { id: voucher.body.data.id }, expect: 409 });
    const voucher2 = await call('POST', '/v1/members/{id}/redemptions', { key: K, params: { id: adaId }, body: { amount_cents: 100 }, expect: 201 });
    await call('POST', '/v1/redemptions/{id}/void', { key: K, params: { id: voucher2.body.data.id }, expect: 200 });
    await call('POST', '/v1/members/{id}/redemptions', { key: K, params: { id: adaId }, body: { amount_cents: 99_999_999 }, expect: 422 });
    await call('POST', '/v1/members/{id}/redemptions', { key: K, params: { id: prospect.body.data.id }, body: { amount_cents: 1 }, expect: 402 });
    await call('POST', '/v1/members/{id}/redemptions', { key: K, params: { id: adaId }, body: { amount_cents: 1, mode: 'direct' }, expect: 422 });

    // ---- checkout ----
    await call('POST', '/v1/redemption-quotes', { key: K, body: { member_id: 'ref:cust_42', eligible_total_cents: 4500, payment_method: 'card' }, expect: 200 });
    await call('POST', '/v1/redemption-quotes', { key: K, body: { member_id: 'ref:nobody', eligible_total_cents: 4500 }, expect: 404 });
    const rs = await call('POST', '/v1/redemption-reservations', { key: K, body: { member_id: adaId, amount_cents: 200, cart_ref: 'cart_1', eligible_total_cents: 4500 }, expect: 201 });
    await call('GET', '/v1/redemption-reservations/{id}', { key: K, params: { id: rs.body.data.id }, expect: 200 });
    await call('POST', '/v1/redemption-reservations/{id}/confirm', { key: K, params: { id: rs.body.data.id }, body: { order_ref: 'ord_10' }, expect: 200 });
    await call('POST', '/v1/redemption-reservations/{id}/release', { key: K, params: { id: rs.body.data.id }, expect: 409 });
    const rs2 = await call('POST', '/v1/redemption-reservations', { key: K, body: { member_id: adaId, amount_cents: 100 }, expect: 201 });
    await call('POST', '/v1/redemption-reservations/{id}/release', { key: K, params: { id: rs2.body.data.id }, expect: 200 });

    // ---- referrals: a pending one, and held ones for the admin to decide ----
    const details = await call('GET', '/v1/members/{id}/referral', { key: K, params: { id: adaId }, expect: 200 });
    const code: string = details.body.data.code;
    const friend = await call('POST', '/v1/members', { key: K, body: { email: 'friend@example.com' }, expect: 201 });
    const referral = await call('POST', '/v1/referrals', { key: K, body: { code, friend_member_id: friend.body.data.id }, expect: 201 });
    await call('POST', '/v1/referrals', { key: K, body: { code, friend_member_id: friend.body.data.id }, expect: 409 });
    await call('POST', '/v1/referrals', { key: K, body: { code, friend_member_id: adaId }, expect: 422 });
    await call('GET', '/v1/referrals/{id}', { key: K, params: { id: referral.body.data.id }, expect: 200 });
    const twin1 = await call('POST', '/v1/members', { key: K, body: { email: 'a.d.a+1@example.com' }, expect: 201 });
    const twin2 = await call('POST', '/v1/members', { key: K, body: { email: 'ada+2@example.com' }, expect: 201 });
    const held1 = await call('POST', '/v1/referrals', { key: K, body: { code, friend_member_id: twin1.body.data.id }, expect: 201 });
    const held2 = await call('POST', '/v1/referrals', { key: K, body: { code, friend_member_id: twin2.body.data.id }, expect: 201 });
    expect([held1.body.data.status, held2.body.data.status]).toEqual(['held', 'held']);
    await admin('POST', '/admin/v1/referrals/{id}/approve', { params: { id: held1.body.data.id }, expect: 200 });
    await admin('POST', '/admin/v1/referrals/{id}/reject', { params: { id: held2.body.data.id }, expect: 200 });
    await admin('POST', '/admin/v1/referrals/{id}/approve', { params: { id: held2.body.data.id }, expect: 409 });

    // ---- webhooks ----
    const we = await call('POST', '/v1/webhook_endpoints', { key: K, body: { url: hookUrl, events: ['balance.updated'] }, expect: 201 });
    await call('POST', '/v1/webhook_endpoints', { key: K, body: { url: 'ftp://example.com', events: ['balance.updated'] }, expect: 422 });
    await call('GET', '/v1/webhook_endpoints', { key: K, expect: 200 });
    await call('GET', '/v1/webhook_endpoints/{id}', { key: K, params: { id: we.body.data.id }, expect: 200 });
    await call('POST', '/v1/webhook_endpoints/{id}/test', { key: K, params: { id: we.body.data.id }, expect: 200 });
    await call('GET', '/v1/webhook_endpoints/{id}/deliveries', { key: K, params: { id: we.body.data.id }, expect: 200 });
    await call('DELETE', '/v1/webhook_endpoints/{id}', { key: K, params: { id: we.body.data.id }, expect: 204 });
    await call('GET', '/v1/webhook_endpoints/{id}', { key: K, params: { id: we.body.data.id }, expect: 404 });

    // ---- rate limit: a key with a bucket of one ----
    const burst = await Promise.all([1, 2, 3, 4, 5].map(() => call('GET', '/v1/ping', { key: slow.body.data.key })));
    const limited = burst.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(Number(limited[0].headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    // ---- admin: review, members, migrations, keys, clock, rejected calls, sandbox ----
    await admin('PUT', '/admin/v1/programs/{pid}/rules', { params: { pid }, body: { rules: [{ id: 'base', type: 'base', name: 'Base', earn_rate_pct: 10, timing: 'manual' }] }, expect: 200 });
    const enrolLive = await call('POST', '/v1/members', { key: live, body: { email: 'rev@example.com', external_ref: 'rev' }, expect: 201 });
    for (const ref of ['ord_r1', 'ord_r2']) await call('POST', '/v1/events', { key: live, body: { type: 'order.paid', order_ref: ref, gross_cents: 1000, customer_ref: 'rev' }, expect: 202 });
    const review = await eventually(async () => {
      const page = await call('GET', '/v1/members/{id}/ledger', { key: live, params: { id: enrolLive.body.data.id }, expect: 200 });
      const waiting = page.body.data.filter((e: { status: string }) => e.status === 'under_review');
      expect(waiting).toHaveLength(2);
      return waiting as { id: string }[];
    }, { timeoutMs: 30_000 });
    // the admin finds entries by id through its own index, which may lag the member's ledger a moment (404 meanwhile)
    await eventually(() => admin('POST', '/admin/v1/ledger-entries/{id}/approve', { params: { id: review[0].id }, expect: 200 }), { timeoutMs: 30_000 });
    await eventually(() => admin('POST', '/admin/v1/ledger-entries/{id}/reject', { params: { id: review[1].id }, expect: 200 }), { timeoutMs: 30_000 });
    await admin('POST', '/admin/v1/ledger-entries/{id}/approve', { params: { id: review[1].id }, expect: 409 });
    await admin('POST', '/admin/v1/members/{id}/{command}', { params: { id: enrolLive.body.data.id, command: 'suspend' }, body: {}, expect: 200 });
    await admin('POST', '/admin/v1/members/{id}/{command}', { params: { id: enrolLive.body.data.id, command: 'reinstate' }, body: {}, expect: 200 });
    const batch = await admin('POST', '/admin/v1/programs/{pid}/migrations', {
      params: { pid }, body: { mode: 'test', entries: [{ email: 'ada@example.com', amount_cents: 2500 }, { email: 'mig@example.com', amount_cents: 800 }] }, expect: 201,
    });
    await admin('DELETE', '/admin/v1/migrations/{batch_id}', { params: { batch_id: batch.body.data.batch_id }, expect: 200 });
    await admin('POST', '/admin/v1/keys/{kid}/rotate', { params: { kid: readOnly.body.data.id }, expect: 201 });
    await admin('DELETE', '/admin/v1/keys/{kid}', { params: { kid: slow.body.data.id }, expect: 200 });
    await admin('POST', '/admin/v1/programs/{pid}/test-clock/advance', { params: { pid }, body: { seconds: 3600 }, expect: 200 });
    await admin('GET', '/admin/v1/programs/{pid}/rejected-calls', { params: { pid }, expect: 200 });

    // ---- erasure, then the sandbox wipe ----
    await call('DELETE', '/v1/members/{id}', { key: K, params: { id: adaId }, expect: 200 });
    await admin('POST', '/admin/v1/programs/{pid}/sandbox/wipe', { params: { pid }, expect: 200 });

    const missing = v.operations().filter((op) => ![...(v.seen.get(op) ?? [])].some((s) => s >= 200 && s < 300));
    expect(missing).toEqual([]);
  });
});
