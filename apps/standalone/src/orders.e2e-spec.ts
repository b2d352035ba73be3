import { eventually } from '@loyalty/testing';
import { TestApp, startTestApp } from './testing/harness';

/**
 * Orders over HTTP: commerce events in through POST /v1/events (ingest → ledger), the outcome
 * read back through GET /v1/events/{id}, the member, its ledger and the liability.
 */
const fast = { burst: 10_000, per_second: 10_000 };

const RULES = [
  { id: 'base', name: 'Base 1 %', type: 'base', earn_rate_pct: 1, timing: 'paid' },
  { id: 'rw', name: 'After returns', type: 'base', earn_rate_pct: 2, timing: 'return_window' },
  { id: 'review', name: 'Reviewed', type: 'base', earn_rate_pct: 3, timing: 'manual', min_order_cents: 50_000 },
];

describe('orders over HTTP (standalone)', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => app?.close());

  /** A fresh programme (liability is cached 30 s per programme) and a key without practical rate limits. */
  const programme = async (body: Record<string, unknown> = {}) => {
    const p = await app.createProgram({ rules: RULES, ...body });
    const mint = async (mode: 'live' | 'test') => {
      const r = await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode, scopes: ['ingest', 'read', 'act'], rate_limit: fast });
      expect(r.status).toBe(201);
      return r.body.data.key as string;
    };
    return { id: p.programId, key: await mint('live'), testKey: await mint('test') };
  };

  const post = async (key: string, event: Record<string, unknown>, headers: Record<string, string> = {}): Promise<string> => {
    const r = await app.http('POST', '/v1/events', { key, body: event, headers });
    expect([200, 202]).toContain(r.status);
    return r.body.data.id;
  };

  const settled = (key: string, id: string) =>
    eventually(async () => {
      const r = await app.http('GET', `/v1/events/${id}`, { key });
      expect(r.status).toBe(200);
      expect(['completed', 'failed']).toContain(r.body.data.status);
      return r.body.data as { status: string; error: string | null; ledger_entry_ids: string[]; processed_at: string | null };
    }, { timeoutMs: 20_000, intervalMs: 25 });

  const send = async (key: string, event: Record<string, unknown>, headers: Record<string, string> = {}) => settled(key, await post(key, event, headers));

  const memberByEmail = async (key: string, email: string) => {
    const r = await app.http('GET', `/v1/members?email=${encodeURIComponent(email)}`, { key });
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(1);
    return r.body.data[0] as { id: string; state: string; balances: Record<string, number> };
  };
  const member = async (key: string, id: string) => (await app.http('GET', `/v1/members/${id}`, { key })).body.data;
  const ledger = async (key: string, id: string) => {
    const r = await app.http('GET', `/v1/members/${id}/ledger?limit=200`, { key });
    expect(r.status).toBe(200);
    return r.body.data as { id: string; type: string; status: string; amount_cents: number; rule: string | null; parent_entry_id: string | null; release_at: string | null; order_ref?: string }[];
  };

  /** The ledger explains the balances (statuses: posted/reversed count in available, pending/under_review in pending). */
  const expectExplained = async (key: string, id: string) => {
    const [m, entries] = await Promise.all([member(key, id), ledger(key, id)]);
    const sum = (s: string[]) => entries.filter((e) => s.includes(e.status)).reduce((a, e) => a + e.amount_cents, 0);
    expect(sum(['posted', 'reversed'])).toBe(m.balances.available_cents);
    expect(sum(['pending', 'under_review'])).toBe(m.balances.pending_cents);
    return m;
  };

  it('order.paid for a new customer: a prospect earns; the event, member and ledger agree', async () => {
    const p = await programme();
    const ev = await send(p.key, { type: 'order.paid', order_ref: 'A-1', gross_cents: 10_000, email: 'ada@example.com' });
    expect(ev).toMatchObject({ status: 'completed', error: null });
    expect(ev.ledger_entry_ids).toHaveLength(2);
    const m = await memberByEmail(p.key, 'ada@example.com');
    expect(m.state).toBe('prospect');
    expect(m.balances).toMatchObject({ available_cents: 100, pending_cents: 200 });
    const entries = await ledger(p.key, m.id);
    expect(entries.map((e) => e.id)).toEqual(ev.ledger_entry_ids);
    expect(entries.map((e) => [e.rule, e.type, e.status, e.amount_cents, e.release_at])).toEqual([
      ['base', 'earn', 'posted', 100, null],
      ['rw', 'earn', 'pending', 200, null],
    ]);
    await expectExplained(p.key, m.id);
  });

  it.each([1, 2, 10])('the same order.paid sent %i times (replayed keys and fresh keys) credits exactly once', async (n) => {
    const p = await programme();
    const event = { type: 'order.paid', order_ref: `B-${n}`, gross_cents: 20_000, customer_ref: `cust-${n}` };
    // the derived key replays at the edge; fresh Idempotency-Keys reach the ledger as distinct events
    const ids = await Promise.all(Array.from({ length: n }, (_, i) => post(p.key, event, i % 2 ? { 'Idempotency-Key': `k-${n}-${i}` } : {})));
    const outcomes = await Promise.all(ids.map((id) => settled(p.key, id)));
    expect(outcomes.every((o) => o.status === 'completed')).toBe(true);
    const m = await member(p.key, `ref:cust-${n}`);
    expect(m.balances).toMatchObject({ available_cents: 200, pending_cents: 400, lifetime_earned_cents: 200 });
    expect((await ledger(p.key, m.id)).filter((e) => e.type === 'earn')).toHaveLength(2);
  });

  it('an older aggregate_version fails naming both versions and changes nothing', async () => {
    const p = await programme();
    await send(p.key, { type: 'order.paid', order_ref: 'C-1', gross_cents: 10_000, email: 'cy@example.com', aggregate_version: 5 });
    const m = await memberByEmail(p.key, 'cy@example.com');
    const before = await ledger(p.key, m.id);
    const old = await send(p.key, { type: 'order.fulfilled', order_ref: 'C-1', gross_cents: 10_000, aggregate_version: 4 });
    expect(old.status).toBe('failed');
    expect(old.error).toMatch(/aggregate_version 4 .*version 5/);
    expect(await ledger(p.key, m.id)).toEqual(before);
    // the failed event is listed with its reason
    const failed = await app.http('GET', '/v1/events?status=failed&order_ref=C-1', { key: p.key });
    expect(failed.body.data.map((e: { error: string }) => e.error)).toEqual([old.error]);
    // (the derived key `order.fulfilled:C-1` is taken by the failed event: the caller names the newer one)
    const newer = await send(p.key, { type: 'order.fulfilled', order_ref: 'C-1', gross_cents: 10_000, aggregate_version: 6 }, { 'Idempotency-Key': 'C-1-fulfilled-v6' });
    expect(newer.status).toBe('completed');
    expect((await ledger(p.key, m.id)).find((e) => e.rule === 'rw')!.release_at).not.toBeNull();
  });

  it('partial refunds take back proportionally, pending first; cancellation reverses the rest; liability is the sum over members', async () => {
    const p = await programme();
    await send(p.key, { type: 'order.paid', order_ref: 'D-1', gross_cents: 33_333, email: 'di@example.com' });
    await send(p.key, { type: 'order.paid', order_ref: 'D-2', gross_cents: 12_345, email: 'dan@example.com' });
    const di = await memberByEmail(p.key, 'di@example.com');
    // earned 333 (posted) + 666 (pending) = 999
    const r1 = await send(p.key, { type: 'order.refunded', order_ref: 'D-1', refund_ref: 'R1', refunded_cents: 10_000 });
    expect(r1.status).toBe('completed');
    const entries = await ledger(p.key, di.id);
    const rev = entries.filter((e) => r1.ledger_entry_ids.includes(e.id));
    expect(rev.map((e) => [e.type, e.amount_cents, e.parent_entry_id])).toEqual([['reverse', -299, entries.find((e) => e.rule === 'rw')!.id]]);
    await send(p.key, { type: 'order.refunded', order_ref: 'D-1', refund_ref: 'R2', refunded_cents: 5_000 });
    // cumulative 15 000 of 33 333: floor(999 × 15000 / 33333) = 449 taken back
    let m = await expectExplained(p.key, di.id);
    expect(m.balances.available_cents + m.balances.pending_cents).toBe(999 - 449);
    const cancel = await send(p.key, { type: 'order.cancelled', order_ref: 'D-1' });
    expect(cancel.status).toBe('completed');
    m = await expectExplained(p.key, di.id);
    expect(m.balances).toMatchObject({ available_cents: 0, pending_cents: 0 });
    expect((await ledger(p.key, di.id)).filter((e) => e.type === 'earn').map((e) => e.status)).toEqual(['reversed', 'reversed']);
    const dan = await expectExplained(p.key, (await memberByEmail(p.key, 'dan@example.com')).id);
    const liability = await app.http('GET', '/v1/tenant/liability', { key: p.key });
    expect(liability.status).toBe(200);
    expect(liability.body.data).toMatchObject({
      available_cents: dan.balances.available_cents, pending_cents: dan.balances.pending_cents,
      outstanding_cents: dan.balances.available_cents + dan.balances.pending_cents, members: 2,
    });
  });

  it('a paused member fails with the reason and earns nothing; an unmatched customer fails', async () => {
    const p = await programme();
    const enrolled = await app.http('POST', '/v1/members', { key: p.key, body: { email: 'pa@example.com' } });
    expect(enrolled.status).toBe(201);
    expect((await app.admin('POST', `/admin/v1/members/${enrolled.body.data.id}/pause`, {})).status).toBe(200);
    const paused = await send(p.key, { type: 'order.paid', order_ref: 'E-1', gross_cents: 10_000, email: 'pa@example.com' });
    expect(paused).toMatchObject({ status: 'failed', ledger_entry_ids: [] });
    expect(paused.error).toMatch(/paused/);
    expect(await ledger(p.key, enrolled.body.data.id)).toEqual([]);
    const unmatched = await send(p.key, { type: 'order.paid', order_ref: 'E-2', gross_cents: 10_000 });
    expect(unmatched.status).toBe('failed');
    expect(unmatched.error).toMatch(/unmatched/);
  });

  it('manual earns wait for review: admin approve / reject, 409 when not under review, 404 unknown', async () => {
    const p = await programme();
    await send(p.key, { type: 'order.paid', order_ref: 'F-1', gross_cents: 100_000, email: 'fi@example.com' });
    await send(p.key, { type: 'order.paid', order_ref: 'F-2', gross_cents: 50_000, email: 'fi@example.com' });
    const m = await memberByEmail(p.key, 'fi@example.com');
    const reviewed = (await ledger(p.key, m.id)).filter((e) => e.rule === 'review');
    expect(reviewed.map((e) => [e.status, e.amount_cents])).toEqual([['under_review', 3_000], ['under_review', 1_500]]);
    expect((await app.http('POST', `/admin/v1/ledger-entries/${reviewed[0].id}/approve`, { key: p.key })).status).toBe(401);
    const approve = await app.admin('POST', `/admin/v1/ledger-entries/${reviewed[0].id}/approve`);
    expect(approve.status).toBe(200);
    expect(approve.body.data).toMatchObject({ id: reviewed[0].id, status: 'posted', amount_cents: 3_000, member_id: m.id });
    const reject = await app.admin('POST', `/admin/v1/ledger-entries/${reviewed[1].id}/reject`);
    expect(reject.status).toBe(200);
    expect(reject.body.data.status).toBe('rejected');
    const conflict = await app.admin('POST', `/admin/v1/ledger-entries/${reviewed[1].id}/approve`);
    expect(conflict.status).toBe(409);
    expect(conflict.body.type).toMatch(/#invalid-state$/);
    expect((await app.admin('POST', '/admin/v1/ledger-entries/LE-01ARZ3NDEKTSV4RRFFQ69G5FAV/approve')).status).toBe(404);
    const after = await expectExplained(p.key, m.id);
    expect(after.balances.available_cents).toBe(1_000 + 500 + 3_000);
  });

  it('sandbox: the return window releases when the test clock passes release_at', async () => {
    const p = await programme({ settings: { return_window_days: 10 } });
    await send(p.testKey, { type: 'order.paid', order_ref: 'G-1', gross_cents: 10_000, email: 'gi@example.com' });
    await send(p.testKey, { type: 'order.fulfilled', order_ref: 'G-1', gross_cents: 10_000 });
    const m = await memberByEmail(p.testKey, 'gi@example.com');
    const rw = (await ledger(p.testKey, m.id)).find((e) => e.rule === 'rw')!;
    expect(rw.status).toBe('pending');
    expect(Date.parse(rw.release_at!)).toBeGreaterThan(Date.now() + 9 * 86_400_000);
    // live never sees the sandbox member
    expect((await app.http('GET', `/v1/members/${m.id}`, { key: p.key })).status).toBe(404);
    expect((await app.admin('POST', `/admin/v1/programs/${p.id}/test-clock/advance`, { seconds: 11 * 86_400 })).status).toBe(200);
    await eventually(async () => {
      const e = (await ledger(p.testKey, m.id)).find((x) => x.id === rw.id)!;
      expect(e.status).toBe('posted');
    }, { timeoutMs: 10_000 });
    expect((await expectExplained(p.testKey, m.id)).balances).toMatchObject({ available_cents: 300, pending_cents: 0 });
  });
});
