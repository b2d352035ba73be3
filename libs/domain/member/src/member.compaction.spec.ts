import { deserialize, serialize } from 'node:v8';
import fc from 'fast-check';
import type { ExpiryPolicy, Tier } from '@loyalty/contracts';
import type { EarnLine } from '@loyalty/domain-earning';
import type { MemberEvent } from './member.events';
import {
  MEMBER_RETENTION, MEMBER_SNAPSHOT_VERSION, MemberAggregate, balancesOf, evolveMember, initialMemberState, liveLots, memberEvolver, memberStateBytes,
} from './member.state';
import { decideAdjust, decideStateChange } from './member.decider';
import { decideMigrationReversal } from './member.lifecycle';
import { OrderEarn, OrderStepCommand, decideOrderStep, decideReviewEntry, orderCauses } from './member.earning';
import { decideSweep, expiringWithinDays } from './member.expiry';
import {
  decideConfirmRedemption, decideConfirmReservation, decideExpireRedemption, decideExpireReservation, decideIssueRedemption, decideOpenReservation,
  decideReleaseReservation, decideVoidRedemption, quoteRedemption, redemptionByCause, reservationByCause, spendingRules,
} from './member.spending';
import { decideTier } from './member.tiers';
import { memberSummaryOf } from './member.views';
import { encodeMemberSnapshot } from './member.snapshot';

/**
 * Issue 13: the member's decision state is compacted as it is folded (closed entries, spent lots,
 * causes and resolved vouchers/reservations past the retention, activity past the tier horizon are
 * dropped). The full fold (`evolveMember` alone, which forgets nothing) is the oracle: over random
 * histories spanning years, every decision the services make (orders, refunds, cancellations,
 * adjustments, migration reversals, vouchers, reservations, reviews, sweeps, tiers, quotes and the
 * member view) is the same on the compacted state as on the full one, at every step. The only
 * difference allowed is the documented one: a voucher, reservation or idempotency cause resolved
 * more than the retention ago is no longer in the compacted state (the services answer those from
 * the read models), and the test checks that this is the only reason anything is missing.
 */

const DAY = 86_400_000;
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

const tier = (over: Partial<Tier>): Tier => ({
  name: 'Tier', level: 1, threshold_type: 'spend', threshold_value: 0, criteria: [], criteria_mode: 'all', window: 'lifetime',
  window_days: null, earn_multiplier: 1, benefits: {}, ...over,
});
const TIERS: Tier[] = [
  tier({ name: 'Silver', level: 1, threshold_type: 'spend', threshold_value: 30_000, window: 'rolling_365' }),
  tier({ name: 'Gold', level: 2, threshold_type: 'orders', threshold_value: 6, window: 'calendar_year', earn_multiplier: 1.5 }),
  tier({ name: 'Custom', level: 3, threshold_type: 'points', threshold_value: 6_000, window: 'custom', window_days: 400, earn_multiplier: 2 }),
  tier({ name: 'Lifetime', level: 4, threshold_type: 'spend', threshold_value: 400_000, window: 'lifetime', earn_multiplier: 3 }),
];
const POLICIES: ExpiryPolicy[] = [{ policy: 'none' }, { policy: 'fixed_days', days: 90 }, { policy: 'inactivity', days: 120 }];
const RULES = spendingRules({ min_redeem_cents: 0, max_order_share_pct: 50 });

type Action =
  | { kind: 'wait'; days: number }
  | { kind: 'order'; gross: number; timing: EarnLine['timing']; months: number | null; two: boolean }
  | { kind: 'fulfil' | 'cancel'; pick: number }
  /** crash: the order stream's append is lost after the member's (kill -9 between them), and the event is redelivered */
  | { kind: 'refund'; pick: number; pct: number; crash: boolean }
  | { kind: 'adjust'; amount: number; migration: boolean }
  | { kind: 'migration-reverse'; pick: number }
  | { kind: 'voucher'; amount: number; direct: boolean }
  | { kind: 'use' | 'void' | 'expire-voucher' | 'confirm-res' | 'release-res' | 'expire-res'; pick: number }
  | { kind: 'reserve'; amount: number }
  | { kind: 'sweep' }
  | { kind: 'review'; pick: number; approve: boolean }
  | { kind: 'pause' };

const pick = fc.nat();
const action: fc.Arbitrary<Action> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('wait' as const), days: fc.integer({ min: 1, max: 120 }) }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('order' as const), gross: fc.integer({ min: 100, max: 40_000 }), timing: fc.constantFrom<EarnLine['timing']>('paid', 'paid', 'fulfilled', 'return_window', 'manual'), months: fc.option(fc.integer({ min: 1, max: 18 })), two: fc.boolean() }), weight: 6 },
  fc.record({ kind: fc.constantFrom('fulfil' as const, 'cancel' as const), pick }),
  { arbitrary: fc.record({ kind: fc.constant('refund' as const), pick, pct: fc.integer({ min: 1, max: 120 }), crash: fc.boolean() }), weight: 2 },
  fc.record({ kind: fc.constant('adjust' as const), amount: fc.integer({ min: -3_000, max: 5_000 }).filter((x) => x !== 0), migration: fc.boolean() }),
  fc.record({ kind: fc.constant('migration-reverse' as const), pick }),
  { arbitrary: fc.record({ kind: fc.constant('voucher' as const), amount: fc.integer({ min: 1, max: 2_000 }), direct: fc.boolean() }), weight: 2 },
  fc.record({ kind: fc.constantFrom('use' as const, 'void' as const, 'expire-voucher' as const, 'confirm-res' as const, 'release-res' as const, 'expire-res' as const), pick }),
  fc.record({ kind: fc.constant('reserve' as const), amount: fc.integer({ min: 1, max: 2_000 }) }),
  { arbitrary: fc.record({ kind: fc.constant('sweep' as const) }), weight: 2 },
  fc.record({ kind: fc.constant('review' as const), pick, approve: fc.boolean() }),
  { arbitrary: fc.record({ kind: fc.constant('pause' as const) }), weight: 1 },
);

/** An order as its stream keeps it: the earn ids and (issue 13) the facts of its earns, as the decisions left them. */
interface Order { ref: string; earn_entry_ids: string[]; earns: Map<string, OrderEarn>; gross: number; refunded: number; fulfilled_at: string | null; cancelled: boolean; refunds: number }

/** A decision's outcome, comparable: the events, or the refusal. */
const outcome = (f: () => unknown): unknown => {
  try {
    return { ok: f() };
  } catch (e) {
    return { error: (e as Error).message };
  }
};

/** A migration entry's reversal, as MigrationsService.reverse decides it (an entry the state no longer holds is fully taken back). */
const migrationReversal = (s: MemberAggregate, id: string, reverseId: string, at: string): { events: MemberEvent[]; reversed: boolean } =>
  decideMigrationReversal(s, { credit_entry_id: id, entryId: reverseId, batch_id: 'MB-TEST', at });

/** A state as a snapshot stores and gives it back (the evolver's packing, V8's serializer). */
const stored = (s: MemberAggregate): MemberAggregate => {
  const { encode, decode, accepts } = memberEvolver.snapshot;
  const back = decode(deserialize(serialize(encode(s)))) as MemberAggregate;
  expect(accepts(back)).toBe(true);
  return back;
};

class World {
  full = evolveMember(initialMemberState(), this.created());
  compact = memberEvolver.evolve(memberEvolver.initialState(), this.created());
  ms = T0;
  n = 0;
  orders: Order[] = [];
  vouchers: string[] = [];
  reservations: string[] = [];
  migrations: string[] = [];
  earns: string[] = [];
  constructor(readonly policy: ExpiryPolicy) {}

  created(): MemberEvent {
    return { type: 'MemberCreated', data: { member_id: 'M-C', state: 'registered', referral_code: 'ABCDEFGH', pii: { v: 1, kid: 'k', iv: '', tag: '', data: '' }, marketing_consent: false, accepted_terms_version: null, at: iso(T0) } };
  }

  get now(): string { return iso(this.ms); }
  id(prefix = 'LE'): string { return `${prefix}-${String(++this.n).padStart(8, '0')}`; }

  apply(events: MemberEvent[]): void {
    for (const e of events) {
      evolveMember(this.full, e);
      memberEvolver.evolve(this.compact, e);
    }
  }

  /** Decides on both states; they must agree; the events (if any) are applied to both. */
  decide(d: (s: MemberAggregate) => MemberEvent[]): MemberEvent[] {
    const n = this.n;
    const a = outcome(() => d(this.full));
    const afterFull = this.n;
    this.n = n; // ids drawn while deciding are drawn again in the same order
    const b = outcome(() => d(this.compact));
    expect(this.n).toBe(afterFull);
    expect(b).toEqual(a);
    const events = (a as { ok?: MemberEvent[] }).ok ?? [];
    this.apply(events);
    return events;
  }

  orderStep(o: Order, over: Partial<OrderStepCommand>, lost = false): MemberEvent[] {
    const command = (): OrderStepCommand => ({
      order: { order_ref: o.ref, earn_entry_ids: o.earn_entry_ids, earns: o.earns, fulfilled_at: o.fulfilled_at, delivered: false },
      at: this.now, expiry: this.policy, return_window_days: 14, entryId: (cause) => `LE-${cause}`, earn: null, refund: null, cancel: false, activity: null,
      ...over,
    });
    // the order stream records what the decision (the same on both states) says of its earns
    const seen: { earn_entry_ids: string[]; earns: OrderEarn[] }[] = [];
    const events = this.decide((s) => {
      const d = decideOrderStep(s, command());
      seen.push({ earn_entry_ids: d.earn_entry_ids, earns: d.earns });
      return d.events;
    });
    if (seen.length === 2) expect(seen[1]).toEqual(seen[0]);
    const [d] = seen;
    // the order stream records every step it applied (a step refused by the member records nothing)
    if (!d || lost) return events;
    if (over.earn) o.earn_entry_ids = d.earn_entry_ids;
    for (const f of d.earns) o.earns.set(f.entry.id, f);
    return events;
  }

  act(x: Action): void {
    const at = this.now;
    const of = <T>(list: T[], i: number): T | undefined => (list.length ? list[i % list.length] : undefined);
    switch (x.kind) {
      case 'wait':
        this.ms += x.days * DAY;
        return;
      case 'order': {
        const o: Order = { ref: `O-${++this.n}`, earn_entry_ids: [], earns: new Map(), gross: x.gross, refunded: 0, fulfilled_at: null, cancelled: false, refunds: 0 };
        this.orders.push(o);
        const lines: EarnLine[] = [{ rule_id: 'base', rule_name: 'Base', rule_type: 'base', rule_version: 1, amount_cents: Math.floor(x.gross / 10), timing: x.timing, expiry_months: x.months }];
        if (x.two) lines.push({ rule_id: 'boost', rule_name: 'Boost', rule_type: 'category_boost', rule_version: 1, amount_cents: Math.floor(x.gross / 20) + 1, timing: 'paid', expiry_months: null });
        this.orderStep(o, { earn: { lines }, activity: { spend_cents: x.gross, orders: 1, cause: orderCauses.earnActivity(o.ref) } });
        this.earns.push(...o.earn_entry_ids);
        return;
      }
      case 'fulfil': {
        const o = of(this.orders, x.pick);
        if (!o || o.fulfilled_at || o.cancelled) return;
        o.fulfilled_at = at;
        this.orderStep(o, {});
        return;
      }
      case 'refund': {
        const o = of(this.orders, x.pick);
        if (!o || o.cancelled) return;
        const before = o.refunded;
        o.refunded = Math.min(o.gross * 2, o.refunded + Math.ceil((o.gross * x.pct) / 100));
        const ref = `R${++o.refunds}`;
        const step: Partial<OrderStepCommand> = {
          refund: { refund_ref: ref, gross_cents: o.gross, cumulative_refunded_cents: o.refunded },
          activity: { spend_cents: -(Math.min(o.refunded, o.gross) - Math.min(before, o.gross)), orders: 0, cause: orderCauses.refundActivity(o.ref, ref) },
        };
        // after a crash the redelivered event decides nothing new, and the order stream records the take-backs the member already has
        if (x.crash && this.orderStep(o, step, true).length) expect(this.orderStep(o, step)).toEqual([]);
        else this.orderStep(o, step);
        return;
      }
      case 'cancel': {
        const o = of(this.orders, x.pick);
        if (!o || o.cancelled) return;
        o.cancelled = true;
        this.orderStep(o, { cancel: true, activity: { spend_cents: -(o.gross - Math.min(o.refunded, o.gross)), orders: -1, cause: orderCauses.cancelActivity(o.ref) } });
        return;
      }
      case 'adjust': {
        const id = this.id();
        const batch = x.migration && x.amount > 0 ? `MB-${this.n}` : null;
        const events = this.decide((s) => decideAdjust(s, { entryId: id, amount_cents: x.amount, reason_code: batch ? 'migration' : 'goodwill', note: null, cause: `adjust:${id}`, actor: null, at, batch_id: batch }));
        if (batch && events.length) this.migrations.push(id);
        return;
      }
      case 'migration-reverse': {
        const id = of(this.migrations, x.pick);
        if (!id) return;
        const rid = this.id();
        this.decide((s) => migrationReversal(s, id, rid, at).events);
        return;
      }
      case 'voucher': {
        const rid = this.id('RD');
        const eid = this.id();
        const events = this.decide((s) => decideIssueRedemption(s, RULES, { redemption_id: rid, entry_id: eid, code: `C${rid}`, mode: x.direct ? 'direct' : 'voucher', amount_cents: x.amount, order_ref: x.direct ? 'O-direct' : null, expires_at: x.direct ? null : iso(this.ms + 3 * DAY), cause: `redeem:${rid}`, at }));
        if (events.length) this.vouchers.push(rid);
        return;
      }
      case 'use':
      case 'void':
      case 'expire-voucher': {
        const id = of(this.vouchers, x.pick);
        if (!id || !this.compact.vouchers.has(id)) return;
        const rev = this.id();
        this.decide((s) => (x.kind === 'use' ? decideConfirmRedemption(s, { redemption_id: id, order_ref: 'O-used', at })
          : x.kind === 'void' ? decideVoidRedemption(s, { redemption_id: id, reverse_entry_id: rev, at })
            : decideExpireRedemption(s, { redemption_id: id, reverse_entry_id: rev, at })));
        return;
      }
      case 'reserve': {
        const id = this.id('RS');
        const events = this.decide((s) => decideOpenReservation(s, RULES, { reservation_id: id, amount_cents: x.amount, cart_ref: null, eligible_total_cents: null, payment_method: null, expires_at: iso(this.ms + DAY), cause: `reserve:${id}`, at }));
        if (events.length) this.reservations.push(id);
        return;
      }
      case 'confirm-res':
      case 'release-res':
      case 'expire-res': {
        const id = of(this.reservations, x.pick);
        if (!id || !this.compact.reservations.has(id)) return;
        const eid = this.id();
        this.decide((s) => (x.kind === 'confirm-res' ? decideConfirmReservation(s, { reservation_id: id, order_ref: 'O-res', entry_id: eid, at })
          : x.kind === 'release-res' ? decideReleaseReservation(s, { reservation_id: id, at }) : decideExpireReservation(s, { reservation_id: id, at })));
        return;
      }
      case 'sweep':
        this.decide((s) => decideSweep(s, { tiers: TIERS, expiry: this.policy }, at, () => this.id()));
        return;
      case 'review': {
        const id = of(this.earns, x.pick);
        // an earn the compacted state let go is settled: the probe checks how review answers it
        if (!id || !this.compact.entries.has(id)) return;
        this.decide((s) => {
          const r = decideReviewEntry(s, { entry_id: id, action: x.approve ? 'approve' : 'reject', actor: null, at });
          if ('refusal' in r) throw new Error(r.refusal);
          return r.events;
        });
        return;
      }
      case 'pause':
        this.decide((s) => decideStateChange(s, s.state === 'paused' ? 'resume' : 'pause', at));
        return;
      default: {
        const never: never = x;
        throw new Error(`unknown action ${JSON.stringify(never)}`);
      }
    }
  }

  /** Decisions and views that change nothing, probed on both states. */
  probe(): void {
    const { full, compact } = this;
    const same = (f: (s: MemberAggregate) => unknown) => {
      const n = this.n;
      const a = outcome(() => f(full));
      this.n = n;
      expect(outcome(() => f(compact))).toEqual(a);
    };
    for (const later of [0, 29 * DAY, 200 * DAY]) {
      const t = iso(this.ms + later);
      same((s) => decideSweep(s, { tiers: TIERS, expiry: this.policy }, t, () => this.id()));
      same((s) => decideTier(s, TIERS, t));
      same((s) => memberSummaryOf(s, t, this.policy));
      same((s) => expiringWithinDays(s, this.policy, t, 90));
    }
    same((s) => [balancesOf(s), s.state, s.tier, s.debt, s.last_activity_at, [...liveLots(s)].map((l) => [l.entry_id, l.remaining_cents, l.expired])]);
    same((s) => quoteRedemption(s, RULES, 10_000, null));
    same((s) => decideAdjust(s, { entryId: 'LE-probe', amount_cents: -(balancesOf(s).available_cents + 1), reason_code: 'x', note: null, cause: 'adjust:probe', actor: null, at: this.now }));
    same((s) => decideIssueRedemption(s, RULES, { redemption_id: 'RD-probe', entry_id: 'LE-probe', code: 'C', mode: 'voucher', amount_cents: Math.max(1, balancesOf(s).spendable_cents), order_ref: null, expires_at: null, cause: 'redeem:probe', at: this.now }));
    for (const o of this.orders) {
      same((s) => decideOrderStep(s, { order: { order_ref: o.ref, earn_entry_ids: o.earn_entry_ids, earns: o.earns, fulfilled_at: o.fulfilled_at, delivered: false }, at: this.now, expiry: this.policy, return_window_days: 14, entryId: (c) => `LE-${c}`, refund: { refund_ref: 'probe', gross_cents: o.gross, cumulative_refunded_cents: o.refunded + Math.ceil(o.gross / 3) } }));
      // a second cancellation never reaches the member (the order stream answers it as a replay)
      if (!o.cancelled) same((s) => decideOrderStep(s, { order: { order_ref: o.ref, earn_entry_ids: o.earn_entry_ids, earns: o.earns, fulfilled_at: o.fulfilled_at ?? this.now, delivered: false }, at: this.now, expiry: this.policy, return_window_days: 14, entryId: (c) => `LE-${c}`, cancel: true }));
    }
    const cutoff = compact.clock_ms - MEMBER_RETENTION.closedDays * DAY;
    for (const id of this.earns) {
      if (!compact.entries.has(id)) {
        // the only reason an earn may be missing: an order's, settled (the order stream keeps its facts), more than the retention ago;
        // review answers "not under review" (409) for it, as for any entry it no longer holds
        const e = full.entries.get(id)!;
        expect(e.bucket).toBe('available');
        expect(e.order_facts).toBe(true);
        expect(Date.parse(e.settled_at ?? e.created_at)).toBeLessThan(cutoff);
        expect(decideReviewEntry(compact, { entry_id: id, action: 'approve', actor: null, at: this.now })).toEqual({ refusal: 'not-found' });
        continue;
      }
      same((s) => decideReviewEntry(s, { entry_id: id, action: 'approve', actor: null, at: this.now }));
      same((s) => decideReviewEntry(s, { entry_id: id, action: 'reject', actor: null, at: this.now }));
    }
    for (const id of this.migrations) same((s) => migrationReversal(s, id, 'LE-probe', this.now));
    for (const id of this.vouchers) {
      if (!compact.vouchers.has(id)) {
        // the only reason a voucher may be missing: resolved, and created before the retention
        const v = full.vouchers.get(id)!;
        expect(v.status).not.toBe('created');
        expect(Date.parse(v.created_at)).toBeLessThan(cutoff);
        continue;
      }
      same((s) => decideConfirmRedemption(s, { redemption_id: id, order_ref: 'O-used', at: this.now }));
      same((s) => decideVoidRedemption(s, { redemption_id: id, reverse_entry_id: 'LE-probe', at: this.now }));
      if ((full.cause_at.get(`redeem:${id}`) ?? 0) >= cutoff) same((s) => redemptionByCause(s, `redeem:${id}`));
    }
    for (const id of this.reservations) {
      if (!compact.reservations.has(id)) {
        const r = full.reservations.get(id)!;
        expect(r.status).not.toBe('open');
        expect(Date.parse(r.created_at)).toBeLessThan(cutoff);
        continue;
      }
      same((s) => decideConfirmReservation(s, { reservation_id: id, order_ref: 'O-res', entry_id: 'LE-probe', at: this.now }));
      same((s) => decideReleaseReservation(s, { reservation_id: id, at: this.now }));
      if ((full.cause_at.get(`reserve:${id}`) ?? 0) >= cutoff) same((s) => reservationByCause(s, `reserve:${id}`));
    }
    // idempotency causes: the same answer for every cause recorded within the retention; older ones only if kept
    for (const [cause, ms] of full.cause_at) {
      if (ms >= cutoff || compact.causes.has(cause)) expect(compact.causes.get(cause) ?? null).toEqual(full.causes.get(cause) ?? null);
      else expect(cause.startsWith('signup:')).toBe(false);
    }
  }
}

describe('the compacted member state decides exactly as the full history does (issue 13)', () => {
  it('over random multi-year histories, at every step', () => {
    const dropped = { entries: 0, earns: 0, causes: 0, activity: 0, vouchers: 0 };
    // a fixed seed (FC_SEED explores others): the coverage checks at the end must not depend on the draw
    fc.assert(fc.property(fc.constantFrom(...POLICIES), fc.array(action, { minLength: 40, maxLength: 160 }), (policy, actions) => {
      const w = new World(policy);
      for (const x of actions) {
        w.act(x);
        w.probe();
      }
      dropped.entries += w.full.entries.size - w.compact.entries.size;
      dropped.earns += w.earns.filter((id) => !w.compact.entries.has(id)).length;
      dropped.causes += w.full.causes.size - w.compact.causes.size;
      dropped.activity += w.full.activity.length - w.compact.activity.length;
      dropped.vouchers += w.full.vouchers.size - w.compact.vouchers.size;
    }), { numRuns: Number(process.env.FC_RUNS ?? 20), seed: Number(process.env.FC_SEED ?? 20261126), endOnFailure: true });
    process.stdout.write(`dropped over the runs: ${JSON.stringify(dropped)}\n`);
    // the histories were long enough for compaction to have dropped every kind of item
    expect(dropped.entries).toBeGreaterThan(0);
    expect(dropped.earns).toBeGreaterThan(0);
    expect(dropped.causes).toBeGreaterThan(0);
    expect(dropped.activity).toBeGreaterThan(0);
    expect(dropped.vouchers).toBeGreaterThan(0);
  });

  it('a state restored from a snapshot (packed, V8) keeps deciding like the full fold', () => {
    fc.assert(fc.property(fc.array(action, { minLength: 30, maxLength: 100 }), fc.nat(), (actions, cut) => {
      const w = new World(POLICIES[1]);
      const at = cut % actions.length;
      for (const [i, x] of actions.entries()) {
        if (i === at) w.compact = stored(w.compact);
        w.act(x);
      }
      w.probe();
    }), { numRuns: 20, endOnFailure: true });
  });

  it('stays small: a member with years of history holds its open items and the recent window, not its history', () => {
    const w = new World({ policy: 'fixed_days', days: 365 });
    // four years of a daily coffee: an order a day, a voucher a month used at once, a refund now and then
    for (let day = 0; day < 1_500; day++) {
      w.act({ kind: 'order', gross: 450, timing: 'paid', months: null, two: false });
      if (day % 30 === 29) {
        w.act({ kind: 'voucher', amount: 500, direct: false });
        w.act({ kind: 'use', pick: w.vouchers.length - 1 });
      }
      if (day % 97 === 0) w.act({ kind: 'refund', pick: w.orders.length - 1, pct: 100, crash: day % 2 === 0 });
      if (day % 30 === 6) w.act({ kind: 'sweep' });
      w.act({ kind: 'wait', days: 1 });
    }
    w.probe();
    // the retention plus what one compaction interval (16 events, about two weeks here) leaves behind
    const closed = MEMBER_RETENTION.closedDays + 16;
    // a settled earn of an order goes too (its order stream keeps its facts): entries only within the retention
    expect(w.compact.vouchers.size).toBeLessThanOrEqual(closed / 30 + 2);
    expect(w.compact.entries.size).toBeLessThanOrEqual(closed * 1.5);
    expect(w.compact.causes.size).toBeLessThanOrEqual(closed * 2 + 10);
    // an order's spend and its earn share an instant, so one item a day, for the tier horizon
    expect(w.compact.activity.length).toBeLessThanOrEqual(MEMBER_RETENTION.activityDays + 40);
    expect(w.compact.lots.length).toBeLessThanOrEqual(400);
    expect(w.full.entries.size).toBeGreaterThan(1_500);
    const fullBytes = serialize(w.full).length;
    const compactBytes = serialize(memberEvolver.snapshot.encode(w.compact)).length;
    process.stdout.write(`four years of daily orders: full state ${fullBytes} bytes, compacted ${compactBytes} bytes (V8)\n`);
    expect(compactBytes * 10).toBeLessThan(fullBytes);
    expect(memberStateBytes(w.compact)).toBeLessThan(memberStateBytes(w.full));
  });

  it('names its snapshot format and refuses a decoded state of another shape', () => {
    expect(memberEvolver.snapshot.version).toBe(MEMBER_SNAPSHOT_VERSION);
    const accepts = memberEvolver.snapshot.accepts;
    const w = new World({ policy: 'none' });
    w.act({ kind: 'order', gross: 1_000, timing: 'paid', months: null, two: false });
    expect(accepts(stored(w.compact))).toBe(true);
    // a member-2 state (before issue 13): `order` and `orders`, no clock, no cause times
    const { clock_ms: _c, cause_at: _a, since_compaction: _s, ...old } = w.full;
    expect(accepts(deserialize(serialize({ ...old, order: [...w.full.entries.keys()], orders: new Map() })))).toBe(false);
    expect(accepts(null)).toBe(false);
    expect(accepts({ points: 1 })).toBe(false);
  });

  it('never reads a member-3 snapshot (lots unpacked, earns without facts) as a member-4 state', () => {
    const { decode, accepts } = memberEvolver.snapshot;
    const w = new World({ policy: 'fixed_days', days: 90 });
    for (let i = 0; i < 40; i++) w.act({ kind: 'order', gross: 1_000 + i, timing: 'paid', months: null, two: i % 3 === 0 });
    // what member-3 stored: the state itself, its entries packed as entries-2, lots as objects
    const current = encodeMemberSnapshot(w.compact) as { state: { entries: object } };
    const member3 = { ...w.compact, entries: { ...current.state.entries, packed: 'entries-2' } };
    expect(decode(deserialize(serialize(member3)))).toBeNull();
    expect(accepts(decode(deserialize(serialize(member3))))).toBe(false);
    // a raw state (no payload) is not decoded either, nor a payload of another version
    expect(decode(deserialize(serialize(w.compact)))).toBeNull();
    expect(decode(deserialize(serialize({ ...current, payload: 'member-3' })))).toBeNull();
    // the current payload is
    const back = decode(deserialize(serialize(current))) as MemberAggregate;
    expect(accepts(back)).toBe(true);
    expect([...liveLots(back)]).toEqual([...liveLots(w.compact)]);
    expect([...back.lot_by_id.keys()]).toEqual([...w.compact.lot_by_id.keys()]);
    expect(back.dated_lots.map((l) => l.entry_id)).toEqual(w.compact.dated_lots.map((l) => l.entry_id));
    expect(back.lot_by_id.get(back.lots[0].entry_id)).toBe(back.lots[0]); // one object, indexed
  });
});
