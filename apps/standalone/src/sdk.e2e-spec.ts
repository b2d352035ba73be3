import { createLoyaltyClient, problemSlug, type LoyaltyClient, type Member } from '@loyalty/sdk';
import { eventually } from '@loyalty/testing';
import { startTestApp, TestApp } from './testing/harness';
import { OpenApiResponseValidator } from './testing/openapi-validator';

/**
 * The generated SDK (libs/sdk) end to end, as a merchant's server would use it: enrol a member,
 * send an order, wait for it to be processed, read the ledger, redeem and confirm the voucher.
 * Every answer is also checked against the document by a middleware.
 */
describe('SDK (libs/sdk) against the running service', () => {
  let app: TestApp;
  let loyalty: LoyaltyClient;
  let admin: LoyaltyClient;
  let validator: OpenApiResponseValidator;
  const checked: string[] = [];

  beforeAll(async () => {
    app = await startTestApp();
    validator = new OpenApiResponseValidator((await app.http('GET', '/openapi.json')).body);
    const validate = {
      async onResponse({ schemaPath, request, response }: { schemaPath: string; request: Request; response: Response }) {
        const text = await response.clone().text();
        validator.check(request.method, schemaPath, { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null });
        checked.push(`${request.method} ${schemaPath} ${response.status}`);
        return undefined;
      },
    };
    admin = createLoyaltyClient({ baseUrl: app.url, apiKey: app.adminToken, middleware: [validate] });
    const { data: created } = await admin.POST('/admin/v1/programs', {
      body: { program_name: 'SDK Coffee', currency_name: 'beans', rules: [{ type: 'base', name: 'Base', earn_rate_pct: 10, timing: 'immediate' }] },
    });
    loyalty = createLoyaltyClient({ baseUrl: app.url, apiKey: created!.data.keys.test.key, middleware: [validate] });
  });
  afterAll(async () => { await app?.close(); });

  it('enrols, sends an order, reads the ledger and redeems', async () => {
    const ping = await loyalty.GET('/v1/ping');
    expect(ping.data?.data).toMatchObject({ pong: true, mode: 'test' });

    const enrolled = await loyalty.POST('/v1/members', {
      body: { email: 'grace@example.com', external_ref: 'cust_7' },
      params: { header: { 'Idempotency-Key': 'enrol-grace-1' } },
    });
    expect(enrolled.response.status).toBe(201);
    const member: Member = enrolled.data!.data;
    expect(member.state).toBe('registered');

    const sent = await loyalty.POST('/v1/events', { body: { type: 'order.paid', order_ref: 'ord_100', gross_cents: 12000, customer_ref: 'cust_7' } });
    expect(sent.response.status).toBe(202);
    const accepted = sent.data!.data;
    if (Array.isArray(accepted)) throw new Error('a single event answers with one EventAccepted');

    const processed = await eventually(async () => {
      const { data } = await loyalty.GET('/v1/events/{id}', { params: { path: { id: accepted.id } } });
      expect(data?.data.status).toBe('completed');
      return data!.data;
    }, { timeoutMs: 30_000 });
    expect(processed.ledger_entry_ids).toHaveLength(1);

    // read models follow the event store a moment later
    const ledger = await eventually(async () => {
      const page = await loyalty.GET('/v1/members/{id}/ledger', { params: { path: { id: 'ref:cust_7' }, query: { limit: 10 } } });
      expect(page.data!.data.map((e) => [e.type, e.status, e.amount_cents])).toEqual([['earn', 'posted', 1200]]);
      return page.data!;
    }, { timeoutMs: 30_000 });
    expect(ledger.pagination.cursor).toBeNull();

    const redeemed = await loyalty.POST('/v1/members/{id}/redemptions', { params: { path: { id: member.id } }, body: { amount_cents: 500 } });
    expect(redeemed.response.status).toBe(201);
    const voucher = redeemed.data!.data;
    expect(voucher).toMatchObject({ status: 'created', mode: 'voucher', amount_cents: 500 });
    expect(voucher.code).toMatch(/^RWD-[0-9A-Z]{4}-[0-9A-Z]{4}$/);

    const confirmed = await loyalty.POST('/v1/redemptions/{id}/confirm', { params: { path: { id: voucher.id } }, body: { order_ref: 'ord_101' } });
    expect(confirmed.data!.data.status).toBe('used');

    await eventually(async () => {
      const after = await loyalty.GET('/v1/members/{id}', { params: { path: { id: member.id } } });
      expect(after.data!.data.balances).toMatchObject({ available_cents: 700, spendable_cents: 700, lifetime_redeemed_cents: 500 });
    }, { timeoutMs: 30_000 });

    // a refusal comes back as a typed problem
    const refused = await loyalty.POST('/v1/members/{id}/redemptions', { params: { path: { id: member.id } }, body: { amount_cents: 100_000 } });
    expect(refused.response.status).toBe(422);
    expect(problemSlug(refused.error)).toBe('balance-insufficient');

    expect(checked.length).toBeGreaterThanOrEqual(10);
  });
});
