import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { MemberEvent, balancesOf, memberEvolver, spendableOf } from '@loyalty/domain-member';
import type { EventStore } from '@loyalty/event-store';
import { EVENT_STORE } from '@loyalty/platform';
import { startStandalone } from './start';
import { TestApp, freshDatabaseUrl, httpClient, startTestApp } from './testing/harness';

/** Spending points over real HTTP on the standalone app and a fresh PostgreSQL database (decisions §6). */
describe('redemptions, quotes and reservations over HTTP (standalone)', () => {
  let app: TestApp;
  let pid: string;
  let key: string;
  let testKey: string;
  let otherKey: string;

  const sql = async <R extends Record<string, unknown>>(text: string, params: unknown[] = []): Promise<R[]> => {
    const c = new Client({ connectionString: app.databaseUrl });
    await c.connect();
    try {
      return (await c.query<R>(text, params)).rows;
    } finally {
      await c.end();
    }
  };

  const highRateKey = async (programId: string, mode: 'live' | 'test'): Promise<string> => {
    const r = await app.admin('POST', `/admin/v1/programs/${programId}/keys`, { mode, scopes: ['read', 'act', 'ingest', 'webhooks'], rate_limit: { burst: 10000, per_second: 10000 } });
    expect(r.status).toBe(201);
    return r.body.data.key;
  };

  /** Enrols a member and credits `cents` with an adjustment; returns the member id. */
  const memberWith = async (cents: number, k = key, extra: Record<string, unknown> = {}): Promise<string> => {
    const m = await app.http('POST', '/v1/members', { key: k, body: { email: `m-${randomUUID()}@example.com`, ...extra } });
    expect(m.status).toBe(201);
    if (cents) {
      const adj = await app.http('POST', `/v1/members/${m.body.data.id}/adjust`, { key: k, body: { amount_cents: cents, reason_code: 'seed' } });
      expect(adj.status).toBe(201);
    }
    return m.body.data.id;
  };

  const balances = async (id: string, k = key) => (await app.http('GET', `/v1/members/${id}`, { key: k })).body.data.balances;
  const ledger = async (id: string, k = key): Promise<{ id: string; type: string; status: string; amount_cents: number; reason_code: string | null; parent_entry_id: string | null; order_ref?: string | null }[]> =>
    (await app.http('GET', `/v1/members/${id}/ledger?limit=200`, { key: k })).body.data;
  const redeem = (id: string, body: Record<string, unknown>, k = key, headers?: Record<string, string>) =>
    app.http('POST', `/v1/members/${encodeURIComponent(id)}/redemptions`, { key: k, body, headers });
  const reserve = (body: Record<string, unknown>, k = key, headers?: Record<string, string>) =>
    app.http('POST', '/v1/redemption-reservations', { key: k, body, headers });

  beforeAll(async () => {
    app = await startTestApp({ sweepIntervalMs: 200 });
    const p = await app.createProgram();
    pid = p.programId;
    key = await highRateKey(pid, 'live');
    testKey = p.testKey;
    otherKey = (await app.createProgram()).liveKey;
  });
  afterAll(async () => app?.close());

  describe('vouchers', () => {
    it('creates a voucher (201): debited at once, a posted redeem entry, lifetime_redeemed rises; the code looks it up', async () => {
      const id = await memberWith(1000);
      const r = await redeem(id, { amount_cents: 300 });
      expect(r.status).toBe(201);
      const d = r.body.data;
      expect(d).toMatchObject({ status: 'created', mode: 'voucher', amount_cents: 300, order_ref: null, member_id: id });
      expect(d.id).toMatch(/^RD-[0-9A-Z]{26}$/);
      expect(d.code).toMatch(/^RWD-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/);
      expect(d.ledger_entry_id).toMatch(/^LE-/);
      expect(Date.parse(d.expires_at) - Date.parse(d.created_at)).toBe(259_200_000);
      expect(await balances(id)).toMatchObject({ available_cents: 700, spendable_cents: 700, lifetime_redeemed_cents: 300 });
      const entries = await ledger(id);
      expect(entries.find((e) => e.id === d.ledger_entry_id)).toMatchObject({ type: 'redeem', status: 'posted', amount_cents: -300, reason_code: 'voucher' });

      const byCode = await app.http('GET', `/v1/redemptions?code=${d.code}`, { key });
      expect(byCode.status).toBe(200);
      expect(byCode.body.data).toMatchObject({ id: d.id, code: d.code, amount_cents: 300, status: 'created', member_id: id, valid: true });
      expect((await app.http('GET', `/v1/redemptions?code=${d.code.toLowerCase()}`, { key })).body.data.id).toBe(d.id);
      expect((await app.http('GET', '/v1/redemptions?code=RWD-0000-0000', { key })).status).toBe(404);
      expect((await app.http('GET', `/v1/redemptions?code=${d.code}`, { key: otherKey })).status).toBe(404);
      expect((await app.http('GET', '/v1/redemptions', { key })).status).toBe(422);
      const byId = await app.http('GET', `/v1/redemptions/${d.id}`, { key });
      expect(byId.status).toBe(200);
      expect(byId.body.data).toEqual(d);
    });

    it('confirm → used (200); the same order_ref again is 200; another order_ref, or void, is 409 invalid-state', async () => {
      const id = await memberWith(1000);
      const v = (await redeem(id, { amount_cents: 200 })).body.data;
      const c = await app.http('POST', `/v1/redemptions/${v.id}/confirm`, { key, body: { order_ref: 'O-1' } });
      expect(c.status).toBe(200);
      expect(c.body.data).toMatchObject({ id: v.id, status: 'used', order_ref: 'O-1', member_id: id });
      const again = await app.http('POST', `/v1/redemptions/${v.id}/confirm`, { key, body: { order_ref: 'O-1' } });
      expect(again.status).toBe(200);
      expect(again.body.data.status).toBe('used');
      const other = await app.http('POST', `/v1/redemptions/${v.id}/confirm`, { key, body: { order_ref: 'O-2' } });
      expect(other.status).toBe(409);
      expect(other.body.type).toMatch(/#invalid-state$/);
      expect((await app.http('POST', `/v1/redemptions/${v.id}/void`, { key })).status).toBe(409);
      expect((await app.http('POST', `/v1/redemptions/${v.id}/confirm`, { key, body: {} })).status).toBe(422);
      expect((await app.http('GET', `/v1/redemptions?code=${v.code}`, { key })).body.data.valid).toBe(false);
      expect(await balances(id)).toMatchObject({ available_cents: 800, lifetime_redeemed_cents: 200 });
    });

    it('void → restored (200) with a reverse entry of the redeem entry; again 200; confirm after it 409; lifetime_redeemed falls back', async () => {
      const id = await memberWith(1000);
      const v = (await redeem(id, { amount_cents: 400 })).body.data;
      const r = await app.http('POST', `/v1/redemptions/${v.id}/void`, { key });
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ id: v.id, status: 'restored' });
      expect((await app.http('POST', `/v1/redemptions/${v.id}/void`, { key })).body.data.status).toBe('restored');
      expect((await app.http('POST', `/v1/redemptions/${v.id}/confirm`, { key, body: { order_ref: 'O-1' } })).status).toBe(409);
      expect(await balances(id)).toMatchObject({ available_cents: 1000, spendable_cents: 1000, lifetime_redeemed_cents: 0 });
      const entries = await ledger(id);
      expect(entries.map((e) => e.type)).toEqual(['adjust', 'redeem', 'reverse']);
      expect(entries[1]).toMatchObject({ id: v.ledger_entry_id, status: 'reversed', amount_cents: -400 });
      expect(entries[2]).toMatchObject({ amount_cents: 400, parent_entry_id: v.ledger_entry_id, reason_code: 'voucher_voided', status: 'posted' });
    });

    it('direct: needs an order_ref, is used at once with no expiry, and cannot be voided', async () => {
      const id = await memberWith(1000);
      const bad = await redeem(id, { amount_cents: 100, mode: 'direct' });
      expect(bad.status).toBe(422);
      expect(bad.body.errors.map((e: { path: string }) => e.path)).toContain('/order_ref');
      const r = await redeem(id, { amount_cents: 100, mode: 'direct', order_ref: 'POS-7' });
      expect(r.status).toBe(201);
      expect(r.body.data).toMatchObject({ status: 'used', mode: 'direct', order_ref: 'POS-7', expires_at: null });
      expect((await app.http('POST', `/v1/redemptions/${r.body.data.id}/confirm`, { key, body: { order_ref: 'POS-7' } })).status).toBe(200);
      expect((await app.http('POST', `/v1/redemptions/${r.body.data.id}/void`, { key })).status).toBe(409);
      expect((await ledger(id)).find((e) => e.type === 'redeem')).toMatchObject({ amount_cents: -100, reason_code: 'direct', order_ref: 'POS-7' });
    });

    it('refuses: 404 unknown member or redemption, 402 for states that may not spend, 422 balance, rules and validation', async () => {
      // a well-formed member id nobody holds: refused by the decision on its (empty) stream, as the ledger's look-up refused it
      const unknown = await redeem('M-00000000000000000000000000', { amount_cents: 1 });
      expect([unknown.status, unknown.body.type, unknown.body.detail]).toEqual([404, expect.stringMatching(/not-found$/), 'member not found']);
      expect((await redeem('ref:nobody', { amount_cents: 1 })).status).toBe(404);
      expect((await app.http('POST', '/v1/redemptions/RD-00000000000000000000000000/confirm', { key, body: { order_ref: 'x' } })).status).toBe(404);
      expect((await app.http('POST', '/v1/redemptions/RD-00000000000000000000000000/void', { key })).status).toBe(404);

      const id = await memberWith(500, key, { external_ref: `cust-${randomUUID()}` });
      const member = (await app.http('GET', `/v1/members/${id}`, { key })).body.data;
      const low = await redeem(id, { amount_cents: 501 });
      expect(low.status).toBe(422);
      expect(low.body.type).toMatch(/#balance-insufficient$/);
      expect((await redeem(`ref:${member.external_ref}`, { amount_cents: 500 })).status).toBe(201);
      for (const body of [{}, { amount_cents: 0 }, { amount_cents: 1.5 }, { amount_cents: '5' }, { amount_cents: 5, mode: 'cash' }, { amount_cents: 5, extra: 1 }, { amount_cents: 5, order_ref: 'x'.repeat(129) }]) {
        const r = await redeem(id, body);
        expect(r.status).toBe(422);
        expect(r.body.type).toMatch(/#validation$/);
      }

      const prospect = await app.http('POST', '/v1/members/resolve', { key, body: { phone: '+14155550199' } });
      expect(prospect.body.data.state).toBe('prospect');
      await app.http('POST', `/v1/members/${prospect.body.data.id}/adjust`, { key, body: { amount_cents: 1000, reason_code: 'seed' } });
      const p402 = await redeem(prospect.body.data.id, { amount_cents: 100 });
      expect(p402.status).toBe(402);
      expect(p402.body.type).toMatch(/#redemption-not-allowed$/);

      const suspended = await memberWith(1000);
      expect((await app.admin('POST', `/admin/v1/members/${suspended}/suspend`, {})).status).toBe(200);
      expect((await redeem(suspended, { amount_cents: 100 })).status).toBe(402);
      expect((await reserve({ member_id: suspended, amount_cents: 100, cart_ref: 'c', eligible_total_cents: 1000, payment_method: 'card' })).status).toBe(402);

      const deleted = await memberWith(1000);
      expect((await app.http('DELETE', `/v1/members/${deleted}`, { key })).status).toBe(200);
      expect((await redeem(deleted, { amount_cents: 100 })).status).toBe(402);

      const v = (await redeem(await memberWith(100), { amount_cents: 100 })).body.data;
      expect((await app.http('POST', `/v1/redemptions/${v.id}/void`, { key: otherKey })).status).toBe(404);
      expect((await app.http('GET', `/v1/redemptions/${v.id}`, { key: otherKey })).status).toBe(404);
    });

    it('rule-ineligible below the programme minimum', async () => {
      const p = await app.createProgram({ settings: { min_redeem_cents: 500 } });
      const id = await memberWith(1000, p.liveKey);
      const r = await redeem(id, { amount_cents: 499 }, p.liveKey);
      expect(r.status).toBe(422);
      expect(r.body.type).toMatch(/#rule-ineligible$/);
      expect((await redeem(id, { amount_cents: 500 }, p.liveKey)).status).toBe(201);
    });
  });

  describe('quotes', () => {
    it('maximum = min(spendable, floor(eligible × share)); 0 below the minimum or for a blocked tender', async () => {
      const p = await app.createProgram({ settings: { min_redeem_cents: 200, max_order_share_pct: 50, blocked_payment_methods: ['gift_card'] } });
      const id = await memberWith(1000, p.liveKey);
      const q = (body: Record<string, unknown>) => app.http('POST', '/v1/redemption-quotes', { key: p.liveKey, body: { member_id: id, ...body } });
      const a = await q({ eligible_total_cents: 1001, payment_method: 'card' });
      expect(a.status).toBe(200);
      expect(a.body.data).toEqual({ spendable_cents: 1000, minimum_cents: 200, maximum_cents: 500, tender_blocked: false });
      expect((await q({ eligible_total_cents: 5000, payment_method: 'card' })).body.data.maximum_cents).toBe(1000);
      expect((await q({ eligible_total_cents: 399, payment_method: 'card' })).body.data.maximum_cents).toBe(0);
      expect((await q({ eligible_total_cents: 5000, payment_method: 'gift_card' })).body.data).toEqual({ spendable_cents: 1000, minimum_cents: 200, maximum_cents: 0, tender_blocked: true });
      expect((await q({ eligible_total_cents: -1, payment_method: 'card' })).status).toBe(422);
      expect((await q({ payment_method: 'card' })).status).toBe(422);
      expect((await app.http('POST', '/v1/redemption-quotes', { key: p.liveKey, body: { member_id: 'M-00000000000000000000000000', eligible_total_cents: 1, payment_method: 'card' } })).status).toBe(404);
      const noReserve = await app.http('POST', '/v1/redemption-reservations', { key: p.liveKey, body: { member_id: 'M-00000000000000000000000000', amount_cents: 100 } });
      expect([noReserve.status, noReserve.body.detail]).toEqual([404, 'member not found']);
      // a quote holds nothing
      expect(await balances(id, p.liveKey)).toMatchObject({ reserved_cents: 0, spendable_cents: 1000 });
    });
  });

  describe('reservations', () => {
    it('holds points (201), confirm debits them once (200), repeats are 200, cross-state calls 409', async () => {
      const id = await memberWith(1000);
      const r = await reserve({ member_id: id, amount_cents: 300, cart_ref: 'cart-1', eligible_total_cents: 2000, payment_method: 'card' });
      expect(r.status).toBe(201);
      const d = r.body.data;
      expect(d).toMatchObject({ status: 'open', member_id: id, amount_cents: 300, cart_ref: 'cart-1', order_ref: null, ledger_entry_id: null });
      expect(d.id).toMatch(/^RS-[0-9A-Z]{26}$/);
      expect(Date.parse(d.expires_at) - Date.parse(d.created_at)).toBe(900_000);
      expect(await balances(id)).toMatchObject({ available_cents: 1000, reserved_cents: 300, spendable_cents: 700, lifetime_redeemed_cents: 0 });
      expect((await app.http('GET', `/v1/redemption-reservations/${d.id}`, { key })).body.data).toEqual(d);

      const c = await app.http('POST', `/v1/redemption-reservations/${d.id}/confirm`, { key, body: { order_ref: 'O-100' } });
      expect(c.status).toBe(200);
      expect(c.body.data).toMatchObject({ id: d.id, status: 'confirmed', order_ref: 'O-100' });
      expect(c.body.data.ledger_entry_id).toMatch(/^LE-/);
      expect(await balances(id)).toMatchObject({ available_cents: 700, reserved_cents: 0, spendable_cents: 700, lifetime_redeemed_cents: 300 });
      expect((await ledger(id)).find((e) => e.id === c.body.data.ledger_entry_id)).toMatchObject({ type: 'redeem', amount_cents: -300, reason_code: 'reservation', order_ref: 'O-100' });
      const again = await app.http('POST', `/v1/redemption-reservations/${d.id}/confirm`, { key, body: { order_ref: 'O-100' } });
      expect(again.status).toBe(200);
      expect(again.body.data.ledger_entry_id).toBe(c.body.data.ledger_entry_id);
      expect((await app.http('POST', `/v1/redemption-reservations/${d.id}/confirm`, { key, body: { order_ref: 'O-101' } })).status).toBe(409);
      const rel = await app.http('POST', `/v1/redemption-reservations/${d.id}/release`, { key });
      expect(rel.status).toBe(409);
      expect(rel.body.type).toMatch(/#invalid-state$/);
      expect((await ledger(id)).filter((e) => e.type === 'redeem')).toHaveLength(1);
    });

    it('release frees the hold (200), again 200, confirm after it 409; 404 for unknown or another programme', async () => {
      const id = await memberWith(1000);
      const d = (await reserve({ member_id: id, amount_cents: 600, cart_ref: 'cart-2', eligible_total_cents: 2000, payment_method: 'card' })).body.data;
      expect((await app.http('POST', `/v1/redemption-reservations/${d.id}/release`, { key: otherKey })).status).toBe(404);
      const rel = await app.http('POST', `/v1/redemption-reservations/${d.id}/release`, { key });
      expect(rel.status).toBe(200);
      expect(rel.body.data.status).toBe('released');
      expect((await app.http('POST', `/v1/redemption-reservations/${d.id}/release`, { key })).body.data.status).toBe('released');
      expect((await app.http('POST', `/v1/redemption-reservations/${d.id}/confirm`, { key, body: { order_ref: 'O' } })).status).toBe(409);
      expect(await balances(id)).toMatchObject({ available_cents: 1000, reserved_cents: 0, spendable_cents: 1000 });
      expect((await app.http('POST', '/v1/redemption-reservations/RS-00000000000000000000000000/release', { key })).status).toBe(404);
      expect((await app.http('GET', '/v1/redemption-reservations/RS-00000000000000000000000000', { key })).status).toBe(404);
    });

    it('rule-ineligible below the minimum, above the share of the order and for a blocked tender; then balance-insufficient; 402 for a prospect', async () => {
      const p = await app.createProgram({ settings: { min_redeem_cents: 100, max_order_share_pct: 25, blocked_payment_methods: ['cash'] } });
      const id = await memberWith(1000, p.liveKey);
      const res = (body: Record<string, unknown>) => reserve({ member_id: id, cart_ref: 'c', payment_method: 'card', ...body }, p.liveKey);
      for (const body of [{ amount_cents: 99, eligible_total_cents: 4000 }, { amount_cents: 251, eligible_total_cents: 1000 }, { amount_cents: 200, eligible_total_cents: 4000, payment_method: 'cash' }]) {
        const r = await res(body);
        expect(r.status).toBe(422);
        expect(r.body.type).toMatch(/#rule-ineligible$/);
      }
      expect((await res({ amount_cents: 250, eligible_total_cents: 1000 })).status).toBe(201);
      const low = await res({ amount_cents: 751, eligible_total_cents: 10_000 });
      expect(low.status).toBe(422);
      expect(low.body.type).toMatch(/#balance-insufficient$/);
      expect((await res({ amount_cents: 0, eligible_total_cents: 10 })).status).toBe(422);
      expect((await res({ member_id: undefined, amount_cents: 100, eligible_total_cents: 1000 })).status).toBe(422);
      const prospect = await app.http('POST', '/v1/members/resolve', { key: p.liveKey, body: { phone: '+14155550142' } });
      expect(prospect.body.data.state).toBe('prospect');
      const r402 = await reserve({ member_id: 'phone:+14155550142', amount_cents: 100, cart_ref: 'c', eligible_total_cents: 1000, payment_method: 'card' }, p.liveKey);
      expect(r402.status).toBe(402);
      expect(r402.body.type).toMatch(/#redemption-not-allowed$/);
    });
  });

  describe('idempotency', () => {
    it('the same Idempotency-Key replays the original response and debits once: the command keeps the key (the gateway has no record of it)', async () => {
      const id = await memberWith(1000);
      const k = `redeem-${randomUUID()}`;
      const first = await redeem(id, { amount_cents: 250 }, key, { 'idempotency-key': k });
      expect(first.status).toBe(201);
      const replay = await redeem(id, { amount_cents: 250 }, key, { 'idempotency-key': k });
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replay')).toBe('true');
      expect(replay.body).toEqual(first.body);
      // recorded on the member stream and claimed with its append: no gateway record before, during or after the call
      expect(await sql('select key from gateway.idempotency where key = $1', [k])).toEqual([]);
      expect(await sql(`select stream_id from es.claims where name like '%:' || $1`, [k])).toEqual([{ stream_id: expect.stringContaining(id) }]);
      expect((await ledger(id)).filter((e) => e.type === 'redeem')).toHaveLength(1);
      expect(await balances(id)).toMatchObject({ available_cents: 750 });
      // the key reused for a different redemption is refused
      expect((await redeem(id, { amount_cents: 251 }, key, { 'idempotency-key': k })).body.type).toMatch(/#idempotency-key-reused$/);

      const rk = `reserve-${randomUUID()}`;
      const body = { member_id: id, amount_cents: 100, cart_ref: 'cart-i', eligible_total_cents: 1000, payment_method: 'card' };
      const r1 = await reserve(body, key, { 'idempotency-key': rk });
      expect(r1.status).toBe(201);
      const r2 = await reserve(body, key, { 'idempotency-key': rk });
      expect(r2.status).toBe(201);
      expect(r2.headers.get('idempotent-replay')).toBe('true');
      expect(r2.body).toEqual(r1.body);
      expect(await sql('select key from gateway.idempotency where key = $1', [rk])).toEqual([]);
      expect(await balances(id)).toMatchObject({ reserved_cents: 100, spendable_cents: 650 });
      // one key, two routes: the reservation's key is taken for a redemption too
      expect((await redeem(id, { amount_cents: 250 }, key, { 'idempotency-key': rk })).body.type).toMatch(/#idempotency-key-reused$/);
    });
  });

  describe('concurrency', () => {
    it('200 concurrent redemptions and reservations against a balance for exactly 10: exactly 10 succeed, spendable never below zero', async () => {
      const id = await memberWith(1000);
      const calls = Array.from({ length: 200 }, (_, i) => (i % 2 === 0
        ? redeem(id, { amount_cents: 100 })
        : reserve({ member_id: id, amount_cents: 100, cart_ref: `cart-${i}`, eligible_total_cents: 10_000, payment_method: 'card' })));
      const results = await Promise.all(calls);
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).toHaveLength(10);
      expect(statuses.filter((s) => s === 422)).toHaveLength(190);
      expect(results.filter((r) => r.status === 422).every((r) => /#balance-insufficient$/.test(r.body.type))).toBe(true);
      const vouchers = results.filter((r, i) => r.status === 201 && i % 2 === 0).length;
      const b = await balances(id);
      expect(b).toMatchObject({ spendable_cents: 0, available_cents: 1000 - vouchers * 100, reserved_cents: (10 - vouchers) * 100, lifetime_redeemed_cents: vouchers * 100 });
      const entries = await ledger(id);
      expect(entries.reduce((sum, e) => sum + e.amount_cents, 0)).toBe(b.available_cents);

      // replay the member's stream: spendable is never below zero after any event
      const rows = await sql<{ type: string; data: unknown }>(
        'select type, data from es.events where stream_id = $1 order by stream_revision', [`member-${pid}-${id}`]);
      let s = memberEvolver.initialState();
      for (const row of rows) {
        s = memberEvolver.evolve(s, { type: row.type, data: row.data } as MemberEvent);
        expect(spendableOf(s)).toBeGreaterThanOrEqual(0);
      }
      expect(balancesOf(s)).toEqual(b);
    });

    it('confirm and void racing on one voucher: exactly one outcome wins, the others answer 200 with it or 409', async () => {
      const id = await memberWith(1000);
      const v = (await redeem(id, { amount_cents: 500 })).body.data;
      const calls = Array.from({ length: 20 }, (_, i) => (i % 2 === 0
        ? app.http('POST', `/v1/redemptions/${v.id}/confirm`, { key, body: { order_ref: 'O-race' } })
        : app.http('POST', `/v1/redemptions/${v.id}/void`, { key })));
      const results = await Promise.all(calls);
      const final = (await app.http('GET', `/v1/redemptions/${v.id}`, { key })).body.data.status;
      expect(['used', 'restored']).toContain(final);
      for (const [i, r] of results.entries()) {
        const wins = (i % 2 === 0) === (final === 'used');
        expect(r.status).toBe(wins ? 200 : 409);
        if (wins) expect(r.body.data.status).toBe(final);
      }
      const entries = await ledger(id);
      expect(entries.filter((e) => e.type === 'reverse')).toHaveLength(final === 'restored' ? 1 : 0);
      expect((await balances(id)).available_cents).toBe(final === 'restored' ? 1000 : 500);
    });

    it('confirm and release racing on one reservation: exactly one outcome wins', async () => {
      const id = await memberWith(1000);
      const r = (await reserve({ member_id: id, amount_cents: 400, cart_ref: 'c', eligible_total_cents: 1000, payment_method: 'card' })).body.data;
      const calls = Array.from({ length: 20 }, (_, i) => (i % 2 === 0
        ? app.http('POST', `/v1/redemption-reservations/${r.id}/confirm`, { key, body: { order_ref: 'O-race' } })
        : app.http('POST', `/v1/redemption-reservations/${r.id}/release`, { key })));
      const results = await Promise.all(calls);
      const final = (await app.http('GET', `/v1/redemption-reservations/${r.id}`, { key })).body.data.status;
      expect(['confirmed', 'released']).toContain(final);
      for (const [i, res] of results.entries()) {
        const wins = (i % 2 === 0) === (final === 'confirmed');
        expect(res.status).toBe(wins ? 200 : 409);
      }
      expect((await ledger(id)).filter((e) => e.type === 'redeem')).toHaveLength(final === 'confirmed' ? 1 : 0);
      expect(await balances(id)).toMatchObject({ reserved_cents: 0, available_cents: final === 'confirmed' ? 600 : 1000 });
    });
  });

  describe('expiry', () => {
    it('the sandbox test clock expires vouchers and reservations at once: points back, lifetime_redeemed falls, the ledger shows each step', async () => {
      const id = await memberWith(1000, testKey);
      const v = (await redeem(id, { amount_cents: 300 }, testKey)).body.data;
      const r = (await reserve({ member_id: id, amount_cents: 200, cart_ref: 'c', eligible_total_cents: 5000, payment_method: 'card' }, testKey)).body.data;
      expect(await balances(id, testKey)).toMatchObject({ available_cents: 700, reserved_cents: 200, spendable_cents: 500, lifetime_redeemed_cents: 300 });

      // past the reservation's 15 minutes, not the voucher's 72 hours
      expect((await app.admin('POST', `/admin/v1/programs/${pid}/test-clock/advance`, { seconds: 901 })).status).toBe(200);
      expect((await app.http('GET', `/v1/redemption-reservations/${r.id}`, { key: testKey })).body.data.status).toBe('expired');
      expect((await app.http('GET', `/v1/redemptions/${v.id}`, { key: testKey })).body.data.status).toBe('created');
      expect(await balances(id, testKey)).toMatchObject({ available_cents: 700, reserved_cents: 0, spendable_cents: 700 });
      expect((await app.http('POST', `/v1/redemption-reservations/${r.id}/confirm`, { key: testKey, body: { order_ref: 'late' } })).status).toBe(409);
      expect((await app.http('POST', `/v1/redemption-reservations/${r.id}/release`, { key: testKey })).status).toBe(409);

      expect((await app.admin('POST', `/admin/v1/programs/${pid}/test-clock/advance`, { seconds: 259_201 })).status).toBe(200);
      const after = (await app.http('GET', `/v1/redemptions/${v.id}`, { key: testKey })).body.data;
      expect(after.status).toBe('expired');
      expect(await balances(id, testKey)).toMatchObject({ available_cents: 1000, spendable_cents: 1000, lifetime_redeemed_cents: 0 });
      expect((await app.http('GET', `/v1/redemptions?code=${v.code}`, { key: testKey })).body.data).toMatchObject({ status: 'expired', valid: false });
      expect((await app.http('POST', `/v1/redemptions/${v.id}/void`, { key: testKey })).status).toBe(409);
      expect((await app.http('POST', `/v1/redemptions/${v.id}/confirm`, { key: testKey, body: { order_ref: 'late' } })).status).toBe(409);
      const entries = await ledger(id, testKey);
      expect(entries.map((e) => [e.type, e.amount_cents, e.reason_code])).toEqual([['adjust', 1000, 'seed'], ['redeem', -300, 'voucher'], ['reverse', 300, 'voucher_expired']]);
      expect(entries[2].parent_entry_id).toBe(v.ledger_entry_id);
      // the live programme's clock did not move
      const live = await memberWith(500);
      expect((await redeem(live, { amount_cents: 100 })).body.data.status).toBe('created');
    });

    it('a voucher past its expiry but not yet swept cannot be confirmed', async () => {
      const p = await app.createProgram({ settings: { voucher_ttl_seconds: 3600 } });
      const id = await memberWith(1000, p.testKey);
      const v = (await redeem(id, { amount_cents: 100 }, p.testKey)).body.data;
      // the clock moves without the admin plane's sweep (the periodic one may or may not have run yet)
      await sql('insert into program.test_clocks (program_id, offset_ms) values ($1, 3601000)', [p.programId]);
      const c = await app.http('POST', `/v1/redemptions/${v.id}/confirm`, { key: p.testKey, body: { order_ref: 'O' } });
      expect(c.status).toBe(409);
      expect((await app.http('GET', `/v1/redemptions?code=${v.code}`, { key: p.testKey })).body.data.valid).toBe(false);
    });

    it('the periodic sweep expires due vouchers and reservations without any call', async () => {
      const p = await app.createProgram({ settings: { voucher_ttl_seconds: 1, reservation_ttl_seconds: 1 } });
      const id = await memberWith(1000, p.liveKey);
      const v = (await redeem(id, { amount_cents: 300 }, p.liveKey)).body.data;
      const r = (await reserve({ member_id: id, amount_cents: 200, cart_ref: 'c', eligible_total_cents: 5000, payment_method: 'card' }, p.liveKey)).body.data;
      const deadline = Date.now() + 10_000;
      let b = await balances(id, p.liveKey);
      while (Date.now() < deadline && (b.available_cents !== 1000 || b.reserved_cents !== 0)) {
        await new Promise((res) => setTimeout(res, 100));
        b = await balances(id, p.liveKey);
      }
      expect(b).toMatchObject({ available_cents: 1000, reserved_cents: 0, spendable_cents: 1000, lifetime_redeemed_cents: 0 });
      expect((await app.http('GET', `/v1/redemptions/${v.id}`, { key: p.liveKey })).body.data.status).toBe('expired');
      expect((await app.http('GET', `/v1/redemption-reservations/${r.id}`, { key: p.liveKey })).body.data.status).toBe('expired');
    });

    it('expiry racing confirm and void on a sandbox voucher: one outcome, at most one reverse entry', async () => {
      const p = await app.createProgram();
      const k = await highRateKey(p.programId, 'test');
      const id = await memberWith(1000, k);
      const v = (await redeem(id, { amount_cents: 500 }, k)).body.data;
      const results = await Promise.all([
        app.admin('POST', `/admin/v1/programs/${p.programId}/test-clock/advance`, { seconds: 259_201 }),
        ...Array.from({ length: 6 }, (_, i) => (i % 2 === 0
          ? app.http('POST', `/v1/redemptions/${v.id}/confirm`, { key: k, body: { order_ref: 'O' } })
          : app.http('POST', `/v1/redemptions/${v.id}/void`, { key: k }))),
      ]);
      expect(results[0].status).toBe(200);
      const final = (await app.http('GET', `/v1/redemptions/${v.id}`, { key: k })).body.data.status;
      expect(['used', 'restored', 'expired']).toContain(final);
      for (const r of results.slice(1)) {
        expect([200, 409]).toContain(r.status);
        if (r.status === 200) expect(r.body.data.status).toBe(final);
      }
      const reverses = (await ledger(id, k)).filter((e) => e.type === 'reverse');
      expect(reverses).toHaveLength(final === 'used' ? 0 : 1);
      expect((await balances(id, k)).available_cents).toBe(final === 'used' ? 500 : 1000);
    });

    it('expiry racing confirm and release on a sandbox reservation: one outcome, the hold resolved once', async () => {
      const p = await app.createProgram();
      const k = await highRateKey(p.programId, 'test');
      const id = await memberWith(1000, k);
      const r = (await reserve({ member_id: id, amount_cents: 400, cart_ref: 'c', eligible_total_cents: 1000, payment_method: 'card' }, k)).body.data;
      const results = await Promise.all([
        app.admin('POST', `/admin/v1/programs/${p.programId}/test-clock/advance`, { seconds: 901 }),
        ...Array.from({ length: 6 }, (_, i) => (i % 2 === 0
          ? app.http('POST', `/v1/redemption-reservations/${r.id}/confirm`, { key: k, body: { order_ref: 'O' } })
          : app.http('POST', `/v1/redemption-reservations/${r.id}/release`, { key: k }))),
      ]);
      expect(results[0].status).toBe(200);
      const final = (await app.http('GET', `/v1/redemption-reservations/${r.id}`, { key: k })).body.data.status;
      expect(['confirmed', 'released', 'expired']).toContain(final);
      for (const res of results.slice(1)) {
        expect([200, 409]).toContain(res.status);
        if (res.status === 200) expect(res.body.data.status).toBe(final);
      }
      expect((await ledger(id, k)).filter((e) => e.type === 'redeem')).toHaveLength(final === 'confirmed' ? 1 : 0);
      expect(await balances(id, k)).toMatchObject({ reserved_cents: 0, available_cents: final === 'confirmed' ? 600 : 1000 });
    });
  });
});

/**
 * A crash between the event-store append and the reply: the append is made, then the call fails
 * as if the process had died (the gateway forgets a failed call's key). The retry with the same
 * Idempotency-Key must find what the first call recorded: one debit, the response it would have given.
 */
describe('a crash between the append and the reply (standalone)', () => {
  let close: () => Promise<void>;
  let http: ReturnType<typeof httpClient>;
  let key: string;
  let crashNextMemberAppend = false;

  beforeAll(async () => {
    const db = await freshDatabaseUrl('crash');
    const adminToken = `adm_${randomUUID()}`;
    const started = await startStandalone({ databaseUrl: db.url, port: 0, adminToken, adminTokenGenerated: false, baseUrl: 'https://loyalty.test' }, false);
    close = async () => { await started.app.close(); await db.drop(); };
    const store = started.app.get<EventStore>(EVENT_STORE, { strict: false });
    const append = store.append.bind(store);
    store.append = async (streamId, events, expected, options) => {
      const result = await append(streamId, events, expected, options);
      if (crashNextMemberAppend && streamId.startsWith('member-')) {
        crashNextMemberAppend = false;
        throw new Error('the process died after the append, before the reply');
      }
      return result;
    };
    http = httpClient(started.url);
    const p = await http('POST', '/admin/v1/programs', { key: adminToken, body: { program_name: 'Crash', currency_name: 'points' } });
    key = p.body.data.keys.live.key;
  });
  afterAll(async () => close?.());

  it('redemption and reservation: the retry with the same key debits or holds once and answers as the first call', async () => {
    const m = await http('POST', '/v1/members', { key, body: { email: `crash-${randomUUID()}@example.com` } });
    expect(m.status).toBe(201);
    const id = m.body.data.id;
    await http('POST', `/v1/members/${id}/adjust`, { key, body: { amount_cents: 1000, reason_code: 'seed' } });

    const k = `crash-${randomUUID()}`;
    crashNextMemberAppend = true;
    const lost = await http('POST', `/v1/members/${id}/redemptions`, { key, body: { amount_cents: 300 }, headers: { 'idempotency-key': k } });
    expect(lost.status).toBe(500);
    const retry = await http('POST', `/v1/members/${id}/redemptions`, { key, body: { amount_cents: 300 }, headers: { 'idempotency-key': k } });
    expect(retry.status).toBe(201);
    expect(retry.body.data).toMatchObject({ status: 'created', amount_cents: 300, member_id: id });
    const entries = (await http('GET', `/v1/members/${id}/ledger`, { key })).body.data as { id: string; type: string }[];
    const redeems = entries.filter((e) => e.type === 'redeem');
    expect(redeems).toHaveLength(1);
    expect(redeems[0].id).toBe(retry.body.data.ledger_entry_id);
    expect((await http('GET', `/v1/members/${id}`, { key })).body.data.balances).toMatchObject({ available_cents: 700, lifetime_redeemed_cents: 300 });
    const again = await http('POST', `/v1/members/${id}/redemptions`, { key, body: { amount_cents: 300 }, headers: { 'idempotency-key': k } });
    expect(again.body).toEqual(retry.body);
    // the redemption is found by id and by code right after the retry answered
    expect((await http('GET', `/v1/redemptions?code=${retry.body.data.code}`, { key })).body.data).toMatchObject({ id: retry.body.data.id, valid: true });
    expect((await http('POST', `/v1/redemptions/${retry.body.data.id}/void`, { key })).body.data.status).toBe('restored');

    const rk = `crash-${randomUUID()}`;
    const body = { member_id: id, amount_cents: 200, cart_ref: 'cart-crash', eligible_total_cents: 5000, payment_method: 'card' };
    crashNextMemberAppend = true;
    expect((await http('POST', '/v1/redemption-reservations', { key, body, headers: { 'idempotency-key': rk } })).status).toBe(500);
    const held = await http('POST', '/v1/redemption-reservations', { key, body, headers: { 'idempotency-key': rk } });
    expect(held.status).toBe(201);
    expect(held.body.data).toMatchObject({ status: 'open', amount_cents: 200, cart_ref: 'cart-crash' });
    expect((await http('GET', `/v1/members/${id}`, { key })).body.data.balances).toMatchObject({ available_cents: 1000, reserved_cents: 200, spendable_cents: 800 });
    expect((await http('POST', `/v1/redemption-reservations/${held.body.data.id}/release`, { key })).body.data.status).toBe('released');
  });
});
