import { TestApp, startTestApp } from './testing/harness';

/** The admin plane (decisions §10) and the public programme view (§9) through real HTTP. */

const BASE = 'https://loyalty.test';
const ULID = '[0-9A-HJKMNP-TV-Z]{26}';

const expectProblem = (r: { status: number; headers: Headers; body: any }, status: number, slug: string) => {
  expect({ status: r.status, type: r.body?.type }).toEqual({ status, type: `${BASE}/docs/api/errors#${slug}` });
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
};
const paths = (r: { body: any }) => (r.body.errors ?? []).map((e: { path: string }) => e.path).sort();

describe('admin plane over HTTP (standalone)', () => {
  let app: TestApp;
  beforeAll(async () => { app = await startTestApp(); });
  afterAll(async () => app.close());

  describe('authentication', () => {
    it('refuses every admin route without the admin token with 401', async () => {
      const p = await app.createProgram();
      const routes: [string, string, unknown?][] = [
        ['POST', '/admin/v1/programs', { program_name: 'x', currency_name: 'y' }],
        ['GET', `/admin/v1/programs/${p.programId}`],
        ['PATCH', `/admin/v1/programs/${p.programId}`, { program_name: 'z' }],
        ['PUT', `/admin/v1/programs/${p.programId}/rules`, { rules: [] }],
        ['POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'live' }],
        ['POST', `/admin/v1/keys/${p.liveKeyId}/rotate`],
        ['DELETE', `/admin/v1/keys/${p.liveKeyId}`],
        ['GET', `/admin/v1/programs/${p.programId}/rejected-calls`],
        ['POST', '/admin/v1/members/M-00000000000000000000000000/suspend'],
      ];
      for (const [method, path, body] of routes) {
        for (const key of [undefined, 'wrong-token', p.liveKey, `${app.adminToken}x`]) {
          const r = await app.http(method, path, { key, body });
          expect({ method, path, key, status: r.status }).toEqual({ method, path, key, status: 401 });
          expectProblem(r, 401, 'unauthenticated');
        }
      }
      // nothing above took effect: the live key still works and the programme kept its name
      expect((await app.http('GET', '/v1/ping', { key: p.liveKey })).status).toBe(200);
      expect((await app.admin('GET', `/admin/v1/programs/${p.programId}`)).body.data.program_name).toBe('Test programme');
    });

    it('does not accept the admin token as an API key', async () => {
      expectProblem(await app.http('GET', '/v1/ping', { key: app.adminToken }), 401, 'unauthenticated');
    });
  });

  describe('programmes', () => {
    it('creates a programme with a live and a test key (all scopes, shown once)', async () => {
      const r = await app.admin('POST', '/admin/v1/programs', {
        program_name: 'Coffee club', currency_name: 'beans',
        settings: { return_window_days: 14, expiry: { policy: 'fixed_days', days: 365 } },
        rules: [{ id: 'base', type: 'base', earn_rate_pct: 2.5 }],
        tiers: [{ name: 'Gold', level: 2, threshold_type: 'spend', threshold_value: 100000, earn_multiplier: 1.5, benefits: { free_shipping: true } }, { name: 'Silver', level: 1 }],
      });
      expect(r.status).toBe(201);
      const d = r.body.data;
      expect(d.id).toMatch(new RegExp(`^P-${ULID}$`));
      expect(d).toMatchObject({ program_name: 'Coffee club', currency_name: 'beans' });
      expect(d.keys.live.key).toMatch(/^svc_live_[0-9A-Za-z]{32}$/);
      expect(d.keys.test.key).toMatch(/^svc_test_[0-9A-Za-z]{32}$/);
      expect(d.keys.live.key).not.toBe(d.keys.test.key);
      expect([...d.keys.live.scopes].sort()).toEqual(['act', 'ingest', 'read', 'webhooks']);
      expect([...d.keys.test.scopes].sort()).toEqual(['act', 'ingest', 'read', 'webhooks']);
      expect(d.settings).toMatchObject({ return_window_days: 14, expiry: { policy: 'fixed_days', days: 365 }, earn_on: 'order.paid', voucher_ttl_seconds: 259200 });
      expect(d.rules).toEqual([expect.objectContaining({ id: 'base', type: 'base', version: 1, earn_rate_pct: 2.5, timing: 'immediate' })]);
      expect(d.tiers.map((t: { name: string }) => t.name)).toEqual(['Silver', 'Gold']);

      // the keys are live at once, in their modes
      expect((await app.http('GET', '/v1/ping', { key: d.keys.live.key })).body.data.mode).toBe('live');
      expect((await app.http('GET', '/v1/ping', { key: d.keys.test.key })).body.data.mode).toBe('test');

      // GET shows the programme and its keys, never the keys' secrets
      const g = await app.admin('GET', `/admin/v1/programs/${d.id}`);
      expect(g.status).toBe(200);
      expect(g.body.data).toMatchObject({ id: d.id, program_name: 'Coffee club', currency_name: 'beans' });
      expect(g.body.data.keys.map((k: { id: string }) => k.id).sort()).toEqual([d.keys.live.id, d.keys.test.id].sort());
      expect(JSON.stringify(g.body)).not.toContain(d.keys.live.key);
      expect(JSON.stringify(g.body)).not.toContain(d.keys.test.key);
    });

    it('refuses invalid programmes with 422 and JSON-pointer paths', async () => {
      expect(paths(await app.admin('POST', '/admin/v1/programs', {}))).toEqual(['/currency_name', '/program_name']);
      expect(paths(await app.admin('POST', '/admin/v1/programs', { program_name: 'x', currency_name: 'y', rules: [{ type: 'base', earn_rate_pct: 1.234 }] }))).toEqual(['/rules/0/earn_rate_pct']);
      expect(paths(await app.admin('POST', '/admin/v1/programs', { program_name: 'x', currency_name: 'y', settings: { earn_on: 'order.shipped', bogus: 1 } }))).toEqual(['/settings/bogus', '/settings/earn_on']);
      expect(paths(await app.admin('POST', '/admin/v1/programs', { program_name: 'x', currency_name: 'y', settings: { expiry: { policy: 'sometimes' } } }))).toEqual(['/settings/expiry/policy']);
      expect(paths(await app.admin('POST', '/admin/v1/programs', { program_name: 'x', currency_name: 'y', rules: [{ id: 'a', type: 'base' }, { id: 'a', type: 'base' }] }))).toEqual(['/rules/1/id']);
      expect(paths(await app.admin('POST', '/admin/v1/programs', { program_name: 'x', currency_name: 'y', rules: [{ type: 'campaign', starts_at: 'tomorrow' }] }))).toEqual(['/rules/0/starts_at']);
      expect(paths(await app.admin('POST', '/admin/v1/programs', { program_name: 'x', currency_name: 'y', tiers: [{ name: 'G', level: 1, earn_multiplier: 1.23456 }] }))).toEqual(['/tiers/0/earn_multiplier']);
    });

    it('PATCHes a programme: name, currency and settings merge; unknown programme 404', async () => {
      const p = await app.createProgram({ settings: { return_window_days: 10, min_redeem_cents: 500 } });
      const r = await app.admin('PATCH', `/admin/v1/programs/${p.programId}`, { currency_name: 'stars', settings: { max_order_share_pct: 50 } });
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ program_name: 'Test programme', currency_name: 'stars' });
      // the settings not named in the PATCH keep their values
      expect(r.body.data.settings).toMatchObject({ return_window_days: 10, min_redeem_cents: 500, max_order_share_pct: 50 });
      const g = await app.admin('GET', `/admin/v1/programs/${p.programId}`);
      expect(g.body.data.settings).toMatchObject({ return_window_days: 10, min_redeem_cents: 500, max_order_share_pct: 50 });
      expect(paths(await app.admin('PATCH', `/admin/v1/programs/${p.programId}`, { settings: { max_order_share_pct: 101 } }))).toEqual(['/settings/max_order_share_pct']);
      expect(paths(await app.admin('PATCH', `/admin/v1/programs/${p.programId}`, { rules: [] }))).toEqual(['/rules']);
      expectProblem(await app.admin('PATCH', '/admin/v1/programs/P-00000000000000000000000000', { program_name: 'x' }), 404, 'not-found');
      expectProblem(await app.admin('GET', '/admin/v1/programs/P-00000000000000000000000000'), 404, 'not-found');
    });

    it('PUT rules bumps the version of a changed rule and keeps an unchanged one', async () => {
      const p = await app.createProgram({ rules: [
        { id: 'base', type: 'base', earn_rate_pct: 1 },
        { id: 'shoes', type: 'category_boost', earn_rate_pct: 2, tags: ['shoes'] },
      ] });
      const first = (await app.http('GET', '/v1/programs', { key: p.liveKey })).body.data.rules;
      expect(first.map((r: any) => [r.id, r.version])).toEqual([['base', 1], ['shoes', 1]]);
      const put = await app.admin('PUT', `/admin/v1/programs/${p.programId}/rules`, { rules: [
        { id: 'base', type: 'base', earn_rate_pct: 1.5 },
        { id: 'shoes', type: 'category_boost', earn_rate_pct: 2, tags: ['shoes'] },
        { id: 'welcome', type: 'signup_bonus', amount_cents: 500 },
      ] });
      expect(put.status).toBe(200);
      const byId = Object.fromEntries(put.body.data.rules.map((r: any) => [r.id, r]));
      expect(byId.base).toMatchObject({ version: 2, earn_rate_pct: 1.5 });
      expect(byId.shoes).toMatchObject({ version: 1 });
      expect(byId.welcome).toMatchObject({ version: 1, type: 'signup_bonus', amount_cents: 500 });
      // the same PUT again changes no version; a second change bumps again
      const same = await app.admin('PUT', `/admin/v1/programs/${p.programId}/rules`, { rules: [
        { id: 'base', type: 'base', earn_rate_pct: 1.5 },
        { id: 'shoes', type: 'category_boost', earn_rate_pct: 2, tags: ['shoes'] },
        { id: 'welcome', type: 'signup_bonus', amount_cents: 500 },
      ] });
      expect(same.body.data.rules.map((r: any) => r.version)).toEqual([2, 1, 1]);
      const again = await app.admin('PUT', `/admin/v1/programs/${p.programId}/rules`, { rules: [{ id: 'base', type: 'base', earn_rate_pct: 1.5, timing: 'manual' }] });
      expect(again.body.data.rules).toEqual([expect.objectContaining({ id: 'base', version: 3, timing: 'manual' })]);
      // the public view follows, for both modes
      for (const key of [p.liveKey, p.testKey]) {
        expect((await app.http('GET', '/v1/programs', { key })).body.data.rules).toEqual([expect.objectContaining({ id: 'base', version: 3 })]);
      }
      expectProblem(await app.admin('PUT', '/admin/v1/programs/P-00000000000000000000000000/rules', { rules: [] }), 404, 'not-found');
    });

    it('PUT tiers replaces the tiers, ordered by level', async () => {
      const p = await app.createProgram();
      const r = await app.admin('PUT', `/admin/v1/programs/${p.programId}/tiers`, { tiers: [
        { name: 'Gold', level: 2, threshold_type: 'points', threshold_value: 5000, criteria: [{ metric: 'orders', threshold: 3 }], criteria_mode: 'any', window: 'rolling_365', earn_multiplier: 2, benefits: { lounge: 'yes' } },
        { name: 'Blue', level: 1 },
      ] });
      expect(r.status).toBe(200);
      expect(r.body.data.tiers).toEqual([
        expect.objectContaining({ name: 'Blue', level: 1, threshold_type: 'spend', threshold_value: 0, criteria: [], criteria_mode: 'all', window: 'lifetime', earn_multiplier: 1, benefits: {} }),
        expect.objectContaining({ name: 'Gold', level: 2, threshold_type: 'points', threshold_value: 5000, criteria: [{ metric: 'orders', threshold: 3 }], criteria_mode: 'any', window: 'rolling_365', window_days: null, earn_multiplier: 2, benefits: { lounge: 'yes' } }),
      ]);
    });

    it('shows rules, tiers and settings at GET /v1/programs and /v1/programmes (read scope)', async () => {
      const p = await app.createProgram({ program_name: 'Shoe club', currency_name: 'soles', rules: [{ id: 'base', type: 'base', earn_rate_pct: 3 }], tiers: [{ name: 'Gold', level: 1, threshold_value: 1000 }] });
      const a = await app.http('GET', '/v1/programs', { key: p.liveKey });
      const b = await app.http('GET', '/v1/programmes', { key: p.liveKey });
      const t = await app.http('GET', '/v1/programs', { key: p.testKey });
      expect(a.status).toBe(200);
      expect(b.body).toEqual(a.body);
      expect(t.body).toEqual(a.body);
      expect(a.body.data).toMatchObject({ program_name: 'Shoe club', currency_name: 'soles', rules: [expect.objectContaining({ id: 'base', name: 'base', type: 'base', version: 1, earn_rate_pct: 3, timing: 'immediate', tags: null, min_order_cents: null, cap_per_order_cents: null, expiry_months: null })] });
      expect(a.body.data.tiers).toEqual([expect.objectContaining({ name: 'Gold', level: 1, threshold_value: 1000 })]);
      for (const s of ['earn_on', 'return_window_days', 'expiry', 'min_redeem_cents', 'max_order_share_pct', 'voucher_ttl_seconds', 'reservation_ttl_seconds']) {
        expect(a.body.data.settings).toHaveProperty(s);
      }
      const noRead = (await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'live', scopes: ['ingest'] })).body.data.key;
      expectProblem(await app.http('GET', '/v1/programs', { key: noRead }), 403, 'insufficient-scope');
    });
  });

  describe('keys', () => {
    it('creates keys with chosen scopes, name and rate limit; refuses bad input', async () => {
      const p = await app.createProgram();
      const r = await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'test', scopes: ['read', 'act'], name: 'till 3', rate_limit: { burst: 5, per_second: 2 } });
      expect(r.status).toBe(201);
      expect(r.body.data).toMatchObject({ mode: 'test', scopes: ['read', 'act'], name: 'till 3', rate_limit: { burst: 5, per_second: 2 } });
      expect(r.body.data.key).toMatch(/^svc_test_[0-9A-Za-z]{32}$/);
      const ping = await app.http('GET', '/v1/ping', { key: r.body.data.key });
      expect(ping.body.data).toMatchObject({ mode: 'test', scopes: ['read', 'act'] });
      expect(ping.headers.get('x-ratelimit-limit')).toBe('5');
      expect(paths(await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'prod' }))).toEqual(['/mode']);
      expect(paths(await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'live', scopes: ['admin'] }))).toEqual(['/scopes']);
      expect(paths(await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'live', rate_limit: { burst: 0, per_second: 1 } }))).toEqual(['/rate_limit/burst']);
      expectProblem(await app.admin('POST', '/admin/v1/programs/P-00000000000000000000000000/keys', { mode: 'live' }), 404, 'not-found');
      const listed = await app.admin('GET', `/admin/v1/programs/${p.programId}/keys`);
      expect(listed.body.data).toHaveLength(3);
      expect(listed.body.data.find((k: { id: string }) => k.id === r.body.data.id)).toMatchObject({ name: 'till 3', prefix: r.body.data.key.slice(0, 12), revoked_at: null });
    });
  });

  describe('member state commands', () => {
    it('suspends, reinstates, pauses and resumes a member', async () => {
      const p = await app.createProgram();
      const m = (await app.http('POST', '/v1/members', { key: p.liveKey, body: { email: 'state@example.com' } })).body.data;
      const cmd = (c: string, id = m.id) => app.admin('POST', `/admin/v1/members/${id}/${c}`);
      const state = async () => (await app.http('GET', `/v1/members/${m.id}`, { key: p.liveKey })).body.data.state;

      const s = await cmd('suspend');
      expect(s.status).toBe(200);
      expect(s.body.data).toMatchObject({ id: m.id, state: 'suspended' });
      expect(await state()).toBe('suspended');
      expect((await app.http('GET', '/v1/members?state=suspended', { key: p.liveKey })).body.data.map((x: { id: string }) => x.id)).toEqual([m.id]);
      expectProblem(await cmd('pause'), 409, 'invalid-state');
      expect((await cmd('reinstate')).body.data.state).toBe('registered');
      expect(await state()).toBe('registered');
      expect((await cmd('pause')).body.data.state).toBe('paused');
      expect(await state()).toBe('paused');
      expectProblem(await cmd('reinstate'), 409, 'invalid-state');
      expect((await cmd('resume')).body.data.state).toBe('registered');
      expect(await state()).toBe('registered');
      const t0 = Date.now();
      expectProblem(await cmd('resume'), 409, 'invalid-state');
      expect(Date.now() - t0).toBeLessThan(500);
      expectProblem(await cmd('explode'), 404, 'not-found');
      expectProblem(await cmd('suspend', 'M-00000000000000000000000000'), 404, 'not-found');
    });

    it('works on sandbox members too', async () => {
      const p = await app.createProgram();
      const m = (await app.http('POST', '/v1/members', { key: p.testKey, body: { email: 'sandbox-state@example.com' } })).body.data;
      expect((await app.admin('POST', `/admin/v1/members/${m.id}/suspend`, { mode: 'test' })).body.data.state).toBe('suspended');
      expect((await app.http('GET', `/v1/members/${m.id}`, { key: p.testKey })).body.data.state).toBe('suspended');
    });
  });

  describe('rejected calls', () => {
    it('lists the recent 4xx calls of the programme, newest first, without personal data', async () => {
      const p = await app.createProgram();
      const other = await app.createProgram();
      const readOnly = (await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'live', scopes: ['read'] })).body.data;
      await app.http('POST', '/v1/members', { key: p.liveKey, body: { email: 'bad' }, headers: { 'x-request-id': 'rej-1' } });
      await app.http('GET', '/v1/members/ref:secret-customer-ref', { key: p.liveKey, headers: { 'x-request-id': 'rej-2' } });
      await app.http('POST', '/v1/members', { key: readOnly.key, body: { email: 'scope@example.com' }, headers: { 'x-request-id': 'rej-3' } });
      await app.http('GET', '/v1/members?email=private@example.com&limit=0', { key: p.testKey, headers: { 'x-request-id': 'rej-4' } });
      await app.http('GET', '/v1/members', { key: p.liveKey, headers: { 'x-request-id': 'ok-1' } });
      await app.http('POST', '/v1/members', { key: other.liveKey, body: { email: 'bad' }, headers: { 'x-request-id': 'rej-other' } });
      await new Promise((r) => setTimeout(r, 200)); // the log is written after the response

      const r = await app.admin('GET', `/admin/v1/programs/${p.programId}/rejected-calls`);
      expect(r.status).toBe(200);
      expect(r.body.data.map((c: { request_id: string }) => c.request_id)).toEqual(['rej-4', 'rej-3', 'rej-2', 'rej-1']);
      const [four, three, two, one] = r.body.data;
      expect(one).toMatchObject({ method: 'POST', path: '/v1/members', status: 422, slug: 'validation', mode: 'live', key_id: p.liveKeyId });
      expect(two).toMatchObject({ method: 'GET', status: 404, slug: 'not-found' });
      expect(three).toMatchObject({ status: 403, slug: 'insufficient-scope', key_id: readOnly.id });
      expect(four).toMatchObject({ status: 422, mode: 'test' });
      expect(Number.isNaN(Date.parse(one.at))).toBe(false);
      expect(JSON.stringify(r.body)).not.toContain('secret-customer-ref');
      expect(JSON.stringify(r.body)).not.toContain('private@example.com');
      expect((await app.admin('GET', `/admin/v1/programs/${other.programId}/rejected-calls`)).body.data.map((c: { request_id: string }) => c.request_id)).toEqual(['rej-other']);
      expect((await app.admin('GET', `/admin/v1/programs/${p.programId}/rejected-calls?limit=1`)).body.data).toHaveLength(1);
      expectProblem(await app.admin('GET', '/admin/v1/programs/P-00000000000000000000000000/rejected-calls'), 404, 'not-found');
    });
  });
});
