import { randomUUID } from 'node:crypto';
import { serialize } from 'node:v8';
import { EVENT_STORE_MIGRATIONS, PostgresEventStore, SNAPSHOT_MIGRATIONS, SnapshotStore, foldStream } from '@loyalty/event-store';
import type { EarnLine } from '@loyalty/domain-earning';
import {
  MEMBER_SNAPSHOT_VERSION, MemberAggregate, MemberEvent, balancesOf, decideIssueRedemption, decideOrderStep, evolveMember, initialMemberState, liveLots,
  memberEvolver, orderCauses, spendingRules,
} from '@loyalty/domain-member';
import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { MemberFold } from './member-fold';

/**
 * Issue 13: member snapshots across the change of the state's shape. A snapshot of the previous
 * format (member-2, the full history) is never read as the new state: under its own format key it
 * is not even looked at, and an old-shaped state stored under the new key is refused by the shape
 * check; either way the stream is folded from the start and the state is exactly the one a full
 * fold gives. A snapshot of the current format is used (only the tail is folded) and gives the same
 * state, for the command handler's load and for the ledger projections' fold alike.
 */
const DAY = 86_400_000;
const T0 = Date.parse('2029-01-01T00:00:00.000Z');

/** What decisions and read models look at, comparable across realms (V8-decoded Maps are the main realm's). */
const view = (s: MemberAggregate) => ({
  balances: balancesOf(s), state: s.state, tier: s.tier, debt: s.debt, lots: [...liveLots(s)].map((l) => [l.entry_id, l.remaining_cents, l.expires_at]),
  pending: [...s.pending_earns], vouchers: [...s.vouchers.values()].map((v) => [v.id, v.status]), entries: [...s.entries.keys()],
  causes: [...s.causes.keys()], activity: s.activity.map((a) => [a.ms, a.spend, a.points, a.orders]), sums: s.activity_sums,
});

describe('member snapshots across formats (PostgreSQL)', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let snapshots: SnapshotStore;
  const stream = `member-P-SNAP-M-${randomUUID().replace(/-/g, '').slice(0, 26).toUpperCase()}`;
  let events: MemberEvent[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('member_snapshots', { migrations: [...EVENT_STORE_MIGRATIONS, ...SNAPSHOT_MIGRATIONS] });
    store = new PostgresEventStore(db.pool, 50);
    snapshots = new SnapshotStore(db.pool);
    // 600 events over two years: orders earning, vouchers, refunds (enough for compaction to drop things)
    let s = memberEvolver.initialState();
    const add = (list: MemberEvent[]) => { for (const e of list) { s = memberEvolver.evolve(s, e); events.push(e); } };
    add([{ type: 'MemberCreated', data: { member_id: 'M-SNAP', state: 'registered', referral_code: 'ABCDEFGH', pii: { v: 1, kid: 'k', iv: '', tag: '', data: '' }, marketing_consent: false, accepted_terms_version: null, at: new Date(T0).toISOString() } }]);
    for (let i = 0; events.length < 600; i++) {
      const at = new Date(T0 + i * 2 * DAY).toISOString();
      const ref = `o${i}`;
      const lines: EarnLine[] = [{ rule_id: 'base', rule_name: 'Base', rule_type: 'base', rule_version: 1, amount_cents: 50 + (i % 7), timing: 'paid', expiry_months: 6 }];
      const d = decideOrderStep(s, { order: { order_ref: ref, earn_entry_ids: [], fulfilled_at: null, delivered: false }, at, expiry: { policy: 'none' }, return_window_days: 30, entryId: (c) => `LE-${c}`, earn: { lines }, activity: { spend_cents: 500, orders: 1, cause: orderCauses.earnActivity(ref) } });
      add(d.events);
      if (i % 9 === 8) add(decideIssueRedemption(s, spendingRules({}), { redemption_id: `RD-${i}`, entry_id: `LE-r${i}`, code: `C${i}`, mode: 'direct', amount_cents: 60, order_ref: ref, expires_at: null, cause: `redeem:${i}`, at }));
      if (i % 13 === 12) add(decideOrderStep(s, { order: { order_ref: ref, earn_entry_ids: d.earn_entry_ids, fulfilled_at: at, delivered: false }, at, expiry: { policy: 'none' }, return_window_days: 30, entryId: (c) => `LE-${c}`, refund: { refund_ref: 'r', gross_cents: 500, cumulative_refunded_cents: 250 } }).events);
    }
    await store.append(stream, events.map((e) => ({ id: randomUUID(), type: e.type, data: e.data })), 'no_stream');
  });
  afterAll(async () => {
    await store.close();
    await db.drop();
  });

  const full = () => events.reduce((s, e) => memberEvolver.evolve(s, e), memberEvolver.initialState());
  const eventAt = async (revision: bigint) => (await store.readStream(stream, revision, 1))[0];

  it('an old-format snapshot (member-2, full history) is not read; the fold starts over and equals a full fold', async () => {
    // the previous shape: every entry in `order`, an `orders` index, no clock or cause times
    const old = events.slice(0, 400).reduce((s, e) => evolveMember(s, e), initialMemberState());
    const { clock_ms: _c, cause_at: _a, since_compaction: _s, ...shape } = old;
    const oldState = { ...shape, order: [...old.entries.keys()], orders: new Map() };
    const at = await eventAt(399n);
    const v8 = process.versions.v8;
    await db.pool.query('insert into es.snapshots (stream_id, format, revision, event_id, state) values ($1, $2, 399, $3, $4)',
      [stream, `member-2|v8-${v8}`, at.id, serialize(oldState)]);
    // the same old state under the new format key (a collision, a hand-made copy): refused by the shape check
    await db.pool.query('insert into es.snapshots (stream_id, format, revision, event_id, state) values ($1, $2, 399, $3, $4)',
      [stream, SnapshotStore.format(memberEvolver.snapshot), at.id, serialize(oldState)]);
    expect(SnapshotStore.format(memberEvolver.snapshot)).toContain(MEMBER_SNAPSHOT_VERSION);

    const loaded = await foldStream(store, snapshots, stream, memberEvolver);
    expect(loaded.folded).toBe(events.length); // from the start: neither snapshot was used
    expect(view(loaded.state)).toEqual(view(full()));
    expect(loaded.state.entries.size).toBeLessThan(events.filter((e) => e.type === 'EntryRecorded').length); // compacted
  });

  it('a current-format snapshot is used (only the tail is folded) and gives the same state to loads and to the ledger fold', async () => {
    await new Promise((r) => setTimeout(r, 300)); // the full fold above stores its snapshot in the background
    await db.pool.query('delete from es.snapshots where stream_id = $1', [stream]);
    // a fold of 450 events stores a snapshot (policy: every 250)
    await foldStream(store, snapshots, stream, memberEvolver, 449n);
    await new Promise((r) => setTimeout(r, 300));
    const { rows } = await db.pool.query<{ revision: string; format: string; bytes: number }>('select revision, format, length(state) as bytes from es.snapshots where stream_id = $1', [stream]);
    expect(rows).toEqual([{ revision: '449', format: SnapshotStore.format(memberEvolver.snapshot), bytes: expect.any(Number) }]);

    const loaded = await foldStream(store, snapshots, stream, memberEvolver);
    expect(loaded.folded).toBe(events.length - 450);
    expect(view(loaded.state)).toEqual(view(full()));

    // the ledger projections' fold: cold at the last event, from the snapshot, then one evolve
    const fold = new MemberFold(store, 1024 * 1024, snapshots);
    const last = await eventAt(BigInt(events.length - 1));
    const { state, cold } = await fold.advance(last);
    expect(cold).toBe(true);
    expect(view(state)).toEqual(view(full()));
  });
});
