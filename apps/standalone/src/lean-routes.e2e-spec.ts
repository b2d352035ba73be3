import { leanRoutesOf } from '@loyalty/gateway';
import { TestApp, startTestApp } from './testing/harness';

/**
 * The lean route executor (libs/gateway/src/http/lean-routes.ts) runs the routes whose decorators
 * it knows in place of Nest's handler. Which routes it took is checked here; that it answers as
 * Nest did is what every other end-to-end suite checks, since they run through it. This suite
 * pins the steps whose order shows: authentication before validation, the rate-limit headers on a
 * refused body, the status a route sets, an empty parameter, and a route it leaves to Nest.
 */
describe('lean route executor (e2e)', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await startTestApp();
    ({ liveKey: key } = await t.createProgram());
  });
  afterAll(async () => { await t?.close(); });

  it('runs the hot write and read routes lean, and leaves to Nest the routes using what it does not do', () => {
    const lean = leanRoutesOf(t.app!);
    for (const r of ['POST /v1/members', 'GET /v1/members/:id', 'POST /v1/members/:id/redemptions', 'POST /v1/redemption-reservations',
      'POST /v1/redemption-reservations/:id/confirm', 'POST /v1/events', 'POST /admin/v1/programs']) {
      expect(lean).toContain(r);
    }
    // @Header('Cache-Control') and a response the handler writes itself (CSV) stay with Nest
    expect(lean.has('GET /v1/tenant/liability')).toBe(false);
    expect(lean.has('GET /v1/ledger-entries')).toBe(false);
    expect(lean.size).toBeGreaterThan(40);
  });

  it('authenticates before it validates, and counts a refused body against the rate limit', async () => {
    const anon = await t.http('POST', '/v1/members', { body: { email: 12 } });
    expect(anon.status).toBe(401);
    expect(anon.body.type).toBe('https://loyalty.test/docs/api/errors#unauthenticated');
    const bad = await t.http('POST', '/v1/members', { key, body: { email: 12 } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].path).toBe('/email');
    expect(bad.headers.get('x-ratelimit-limit')).not.toBeNull();
    expect(bad.headers.get('x-request-id')).toBeTruthy();
  });

  it('answers with the route status, a replay with the first call\'s, and an empty id as an unknown route', async () => {
    const created = await t.http('POST', '/v1/members', { key, body: { email: 'lean@example.com' }, headers: { 'idempotency-key': 'lean-1' } });
    expect(created.status).toBe(201);
    const again = await t.http('POST', '/v1/members', { key, body: { email: 'lean@example.com' }, headers: { 'idempotency-key': 'lean-1' } });
    expect(again.status).toBe(201);
    expect(again.body.data.id).toBe(created.body.data.id);
    const got = await t.http('GET', `/v1/members/${created.body.data.id}`, { key });
    expect(got.status).toBe(200);
    expect(got.body.data.id).toBe(created.body.data.id);
    const empty = await t.http('POST', '/v1/members//redemptions', { key, body: { amount_cents: 1 } });
    expect(empty.status).toBe(404);
    expect(empty.body.type).toBe('https://loyalty.test/docs/api/errors#not-found');
  });

  it('still serves a route it leaves to Nest, with that route\'s own header', async () => {
    const r = await t.http('GET', '/v1/tenant/liability', { key });
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('max-age=30');
  });
});
