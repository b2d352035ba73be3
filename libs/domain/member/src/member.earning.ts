import type { ExpiryPolicy, LedgerEntryStatus, Rule } from '@loyalty/contracts';
import { EarnLine, addDaysUtc, refundTakeBack, signupBonus, splitTakeBack } from '@loyalty/domain-earning';
import type { EarnCopy, EntryData, MemberEvent } from './member.events';
import { expiresAtFor } from './member.expiry';
import { MemberAggregate, causesWithPrefix } from './member.state';
import { withinMoneyLimits } from './member.decider';

/**
 * Earning on a member's stream (decisions §5): what one commerce event does to the member: earn
 * entries from rule lines, releases of pending earns, refund take-backs, cancellation reversals,
 * tier activity, and the signup bonus. Pure: ids come from `entryId(cause)`, time from `at`.
 *
 * Every effect carries a cause, so a retried event (redelivery, a crash between the member and
 * the order stream) decides nothing new and reports the entries it wrote the first time.
 */

/** Why a member may not take part in an order event, or null. The event then ends `failed` with this error. */
export const earningRefusal = (s: MemberAggregate): string | null => {
  if (!s.exists) return 'member not found';
  switch (s.state) {
    case 'paused':
      return `member ${s.id} is paused: paused members neither earn nor have points taken back`;
    case 'suspended':
      return `member ${s.id} is suspended: suspended members neither earn nor have points taken back`;
    case 'deleted':
    case 'anonymised':
      return `member ${s.id} is deleted`;
    default:
      return null;
  }
};

/** Cause components are URI-encoded so that one order's or refund's prefix can never match another's. */
const k = (v: string): string => encodeURIComponent(v);

/** Causes recorded on entries and activity: the idempotency keys of an order's effects on a member. */
export const orderCauses = {
  earn: (orderRef: string, ruleId: string) => `earn:${k(orderRef)}:${k(ruleId)}`,
  earnPrefix: (orderRef: string) => `earn:${k(orderRef)}:`,
  earnActivity: (orderRef: string) => `activity:${k(orderRef)}:earn`,
  refundPrefix: (orderRef: string, refundRef: string) => `refund:${k(orderRef)}:${k(refundRef)}:`,
  /** every refund take-back of the order (all refunds, and the catch-up at the earn) */
  refundsPrefix: (orderRef: string) => `refund:${k(orderRef)}:`,
  refundActivity: (orderRef: string, refundRef: string) => `activity:${k(orderRef)}:refund:${k(refundRef)}`,
  /** refunds recorded before the order earned are taken back right after the earn (a bare '%' never appears encoded) */
  catchUpPrefix: (orderRef: string) => `refund:${k(orderRef)}:%:`,
  cancelPrefix: (orderRef: string) => `cancel:${k(orderRef)}:`,
  cancelActivity: (orderRef: string) => `activity:${k(orderRef)}:cancel`,
  signup: (memberId: string) => `signup:${memberId}`,
};

/**
 * What the order stream keeps of one of its earns (issue 13): the earn as last decided (status and
 * release_at as this order's last step saw them) and every take-back of it, [entry id, points], so
 * refunds and cancellations are decided exactly once the member's state has let the settled earn go.
 */
export interface OrderEarn { entry: EntryData; taken: [string, number][] }

/** What the order stream knows that the member's effects depend on. */
export interface OrderFacts {
  order_ref: string;
  /** earn entries this order wrote on the member before this event */
  earn_entry_ids: string[];
  /** the facts of those earns, by entry id (absent for orders recorded before issue 13) */
  earns?: ReadonlyMap<string, OrderEarn>;
  /** fulfilment time after this event (starts return windows), null while unfulfilled */
  fulfilled_at: string | null;
  /** delivered after this event */
  delivered: boolean;
}

export interface OrderStepCommand {
  order: OrderFacts;
  /** processing time (the programme clock) */
  at: string;
  expiry: ExpiryPolicy;
  return_window_days: number;
  /** the deterministic entry id of a cause */
  entryId: (cause: string) => string;
  /** present when this event runs the rules: the (budget-granted) rule lines */
  earn?: { lines: EarnLine[] } | null;
  /**
   * take back points for refunds: the gross the order earned on and the cumulative refunds after
   * this event; `refund_ref` null = refunds that arrived before the order earned (caught up at the earn)
   */
  refund?: { refund_ref: string | null; gross_cents: number; cumulative_refunded_cents: number } | null;
  /** the order is cancelled: reverse whatever remains of its earns */
  cancel?: boolean;
  /** tier activity delta this event records (spend = paid gross minus refunds, orders = paid not cancelled) */
  activity?: { spend_cents: number; orders: number; cause: string } | null;
}

export interface OrderStepDecision {
  events: MemberEvent[];
  /** ledger entries this event wrote (also when a retry finds them already written) */
  entry_ids: string[];
  /** earn entries of the order after this event */
  earn_entry_ids: string[];
  /** their facts after this event, for the order stream to keep */
  earns: OrderEarn[];
}

/** An earn of the order as this decision sees it (the state is never mutated while deciding). */
interface Slot {
  id: string; amount: number; reversed: number; status: LedgerEntryStatus; release_on: EntryData['release_on']; release_at: string | null; rule: string | null;
  /** the earn's data as recorded, and its take-backs (entry id → points) */
  data: EntryData; taken: Map<string, number>;
}

/** An earn's data, without what the member's state adds to an entry. */
const earnDataOf = (e: EntryData): EntryData => {
  const d: EntryData = {
    id: e.id, type: e.type, status: e.status, amount_cents: e.amount_cents, reason_code: e.reason_code, rule: e.rule, parent_entry_id: e.parent_entry_id,
    release_at: e.release_at, expires_at: e.expires_at, created_at: e.created_at, order_ref: e.order_ref, cause: e.cause, release_on: e.release_on ?? null,
  };
  if (e.order_facts) d.order_facts = true;
  return d;
};

/** The take-backs of an earn the member's state still records (their causes are within the retention). */
const recentTakeBacks = (s: MemberAggregate, ref: string, earnId: string): [string, number][] => {
  const out: [string, number][] = [];
  for (const prefix of [orderCauses.refundsPrefix(ref), orderCauses.cancelPrefix(ref)]) {
    for (const cause of causesWithPrefix(s, prefix)) {
      for (const id of s.causes.get(cause) ?? []) {
        const e = s.entries.get(id);
        if (e && e.type === 'reverse' && e.parent_entry_id === earnId) out.push([id, -e.amount_cents]);
      }
    }
  }
  return out;
};

/**
 * One earn of the order: from the member's state while it holds it (pending, recent, or recorded
 * before issue 13), else from the order stream's facts, settled (posted, or reversed once all is
 * taken back), with the take-backs the order counted plus any the member recorded that the order has
 * not yet (a crash between the two appends): every take-back once, by its entry id.
 */
const slotOf = (s: MemberAggregate, ref: string, id: string, earns: ReadonlyMap<string, OrderEarn> | undefined): Slot | null => {
  const f = earns?.get(id);
  const taken = new Map(f?.taken ?? []);
  for (const [tid, points] of recentTakeBacks(s, ref, id)) taken.set(tid, points);
  const e = s.entries.get(id);
  if (e) return { id, amount: e.amount_cents, reversed: e.reversed_cents, status: e.status, release_on: e.release_on ?? null, release_at: e.release_at, rule: e.rule, data: earnDataOf(e), taken };
  if (!f) return null;
  let reversed = 0;
  for (const points of taken.values()) reversed += points;
  const amount = f.entry.amount_cents;
  return { id, amount, reversed, status: reversed >= amount ? 'reversed' : 'posted', release_on: f.entry.release_on ?? null, release_at: f.entry.release_at, rule: f.entry.rule, data: f.entry, taken };
};

/** The earn as a take-back's decision sees it, for a state that has let it go (`EntryData.parent_earn`). */
const copyOf = (x: Slot): EarnCopy => ({ ...earnDataOf(x.data), status: x.status, release_at: x.release_at, reversed_cents: x.reversed });

/** What the order stream keeps of an earn after this decision. */
const factsOf = (x: Slot): OrderEarn => ({
  entry: { ...earnDataOf(x.data), status: x.status === 'posted' && x.reversed >= x.amount ? 'reversed' : x.status, release_at: x.release_at },
  taken: [...x.taken],
});

const remaining = (x: Slot): number => (x.status === 'rejected' || x.status === 'reversed' ? 0 : Math.max(0, x.amount - x.reversed));
const isPending = (x: Slot): boolean => x.status === 'pending' || x.status === 'under_review';

const idsWithPrefix = (s: MemberAggregate, prefix: string): string[] => {
  const out: string[] = [];
  for (const cause of causesWithPrefix(s, prefix)) out.push(...(s.causes.get(cause) ?? []));
  return out;
};

const hasPrefix = (s: MemberAggregate, prefix: string): boolean => causesWithPrefix(s, prefix).length > 0;

/** Has this member already recorded the earn of this order (a retried event must not run the rules again)? */
export const orderEarnRecorded = (s: MemberAggregate, orderRef: string): boolean =>
  s.causes.has(orderCauses.earnActivity(orderRef)) || hasPrefix(s, orderCauses.earnPrefix(orderRef));

/** The status an earn line starts in, given the order's progress (decisions §5 "Timing"). */
export const initialEarnStatus = (
  line: Pick<EarnLine, 'timing'>, order: Pick<OrderFacts, 'fulfilled_at' | 'delivered'>, returnWindowDays: number,
): { status: LedgerEntryStatus; release_on: EntryData['release_on']; release_at: string | null } => {
  switch (line.timing) {
    case 'immediate':
    case 'paid':
      return { status: 'posted', release_on: null, release_at: null };
    case 'fulfilled':
      return order.fulfilled_at ? { status: 'posted', release_on: null, release_at: null } : { status: 'pending', release_on: 'fulfilled', release_at: null };
    case 'delivered':
      return order.delivered ? { status: 'posted', release_on: null, release_at: null } : { status: 'pending', release_on: 'delivered', release_at: null };
    case 'return_window':
      return { status: 'pending', release_on: 'return_window', release_at: order.fulfilled_at ? addDaysUtc(order.fulfilled_at, returnWindowDays) : null };
    case 'manual':
      return { status: 'under_review', release_on: 'manual', release_at: null };
    default: {
      const never: never = line.timing;
      throw new TypeError(`unknown timing ${String(never)}`);
    }
  }
};

const earnEntry = (line: EarnLine, p: { id: string; cause: string; order_ref: string | null; at: string; expiry: ExpiryPolicy; status: LedgerEntryStatus; release_on: EntryData['release_on']; release_at: string | null }): EntryData => ({
  id: p.id, type: 'earn', status: p.status, amount_cents: line.amount_cents, reason_code: line.rule_type, rule: line.rule_id,
  parent_entry_id: null, release_at: p.release_at, expires_at: expiresAtFor(p.expiry, line.expiry_months, p.at), created_at: p.at,
  order_ref: p.order_ref, cause: p.cause, release_on: p.release_on,
});

const reverseEntry = (parent: Slot, p: { id: string; amount: number; reason_code: string; cause: string; order_ref: string; at: string }): EntryData => ({
  id: p.id, type: 'reverse', status: isPending(parent) ? 'pending' : 'posted', amount_cents: -p.amount, reason_code: p.reason_code, rule: parent.rule,
  parent_entry_id: parent.id, release_at: null, expires_at: null, created_at: p.at, order_ref: p.order_ref, cause: p.cause, parent_earn: copyOf(parent),
});

/**
 * Takes `amount` back from the order's earns, pending ones first (decisions §5), each piece a
 * `reverse` entry whose parent is the earn it reduces.
 */
const takeBack = (slots: Slot[], amount: number, p: { causePrefix: string; reason_code: string; order_ref: string; at: string; entryId: (c: string) => string }): EntryData[] => {
  const pending = slots.filter((x) => isPending(x) && remaining(x) > 0);
  const posted = slots.filter((x) => x.status === 'posted' && remaining(x) > 0);
  const split = splitTakeBack(amount, pending.reduce((a, x) => a + remaining(x), 0), posted.reduce((a, x) => a + remaining(x), 0));
  const out: EntryData[] = [];
  const from = (group: Slot[], total: number) => {
    let left = total;
    for (const x of group) {
      if (left <= 0) break;
      const t = Math.min(remaining(x), left);
      if (t <= 0) continue;
      const cause = `${p.causePrefix}${x.id}`;
      const d = reverseEntry(x, { id: p.entryId(cause), amount: t, reason_code: p.reason_code, cause, order_ref: p.order_ref, at: p.at });
      out.push(d);
      x.reversed += t;
      x.taken.set(d.id, t);
      left -= t;
    }
    return left;
  };
  from(pending, split.fromPending);
  // Nothing can be left over: the take-back never exceeds what remains of the earns.
  from(posted, split.fromPosted);
  return out;
};

/**
 * The effects of one order event on its member. Callers check `earningRefusal` first; the only
 * refusal left is an earn that would make the member's money inexact (MemberRuleError, member.limits).
 */
export const decideOrderStep = (s: MemberAggregate, cmd: OrderStepCommand): OrderStepDecision => {
  const ref = cmd.order.order_ref;
  const events: MemberEvent[] = [];
  const entryIds: string[] = [];
  const slots: Slot[] = [];
  for (const id of cmd.order.earn_entry_ids) {
    const x = slotOf(s, ref, id, cmd.order.earns);
    if (x) slots.push(x);
  }
  const record = (d: EntryData) => {
    events.push({ type: 'EntryRecorded', data: d });
    entryIds.push(d.id);
  };

  // 1. earn (once per order: the earn activity marks it done)
  if (cmd.earn) {
    if (orderEarnRecorded(s, ref)) {
      for (const id of idsWithPrefix(s, orderCauses.earnPrefix(ref))) {
        entryIds.push(id);
        const x = slots.some((y) => y.id === id) ? null : slotOf(s, ref, id, cmd.order.earns);
        if (x) slots.push(x);
      }
    } else {
      const seen = new Map<string, number>();
      for (const line of cmd.earn.lines) {
        if (line.amount_cents <= 0) continue;
        // a rule listed twice (a configuration slip) still gets distinct causes and ids
        const n = (seen.get(line.rule_id) ?? 0) + 1;
        seen.set(line.rule_id, n);
        const cause = orderCauses.earn(ref, line.rule_id) + (n > 1 ? `#${n}` : '');
        const timing = initialEarnStatus(line, cmd.order, cmd.return_window_days);
        const d: EntryData = { ...earnEntry(line, { id: cmd.entryId(cause), cause, order_ref: ref, at: cmd.at, expiry: cmd.expiry, ...timing }), order_facts: true };
        record(d);
        slots.push({ id: d.id, amount: d.amount_cents, reversed: 0, status: d.status, release_on: d.release_on ?? null, release_at: d.release_at, rule: d.rule, data: d, taken: new Map() });
      }
    }
  }

  // 2. releases that the order's progress allows (idempotent: only entries still pending move)
  for (const x of slots) {
    if (x.status !== 'pending' || remaining(x) <= 0) continue;
    if ((x.release_on === 'fulfilled' && cmd.order.fulfilled_at) || (x.release_on === 'delivered' && cmd.order.delivered)) {
      events.push({ type: 'EntryReleased', data: { entry_id: x.id, at: cmd.at } });
      x.status = 'posted';
    } else if (x.release_on === 'return_window' && x.release_at === null && cmd.order.fulfilled_at) {
      x.release_at = addDaysUtc(cmd.order.fulfilled_at, cmd.return_window_days);
      events.push({ type: 'EntryReleaseScheduled', data: { entry_id: x.id, release_at: x.release_at, at: cmd.at } });
    }
  }

  // 3. refund take-back: cumulative floor(earned × refunded / gross), the difference now
  if (cmd.refund) {
    const r = cmd.refund;
    const prefix = r.refund_ref === null ? orderCauses.catchUpPrefix(ref) : orderCauses.refundPrefix(ref, r.refund_ref);
    const done = hasPrefix(s, prefix) || (r.refund_ref !== null && s.causes.has(orderCauses.refundActivity(ref, r.refund_ref)));
    if (done) entryIds.push(...idsWithPrefix(s, prefix));
    else {
      const live = slots.filter((x) => x.status !== 'rejected');
      const earned = live.reduce((a, x) => a + x.amount, 0);
      const taken = live.reduce((a, x) => a + Math.min(x.amount, x.reversed), 0);
      const amount = refundTakeBack(earned, r.cumulative_refunded_cents, r.gross_cents, taken);
      if (amount > 0) for (const d of takeBack(slots, amount, { causePrefix: prefix, reason_code: 'refund', order_ref: ref, at: cmd.at, entryId: cmd.entryId })) record(d);
    }
  }

  // 4. cancellation: every earn of the order, whatever remains of it
  if (cmd.cancel) {
    const prefix = orderCauses.cancelPrefix(ref);
    if (hasPrefix(s, prefix)) entryIds.push(...idsWithPrefix(s, prefix));
    const total = slots.reduce((a, x) => a + remaining(x), 0);
    if (total > 0) for (const d of takeBack(slots, total, { causePrefix: prefix, reason_code: 'order_cancelled', order_ref: ref, at: cmd.at, entryId: cmd.entryId })) record(d);
  }

  // 5. tier activity, once per cause
  //    carried by the step's last entry when it records one (one event fewer per order), else an event of its own
  if (cmd.activity && !s.causes.has(cmd.activity.cause) && (cmd.activity.spend_cents !== 0 || cmd.activity.orders !== 0)) {
    const activity = { spend_cents: cmd.activity.spend_cents, orders: cmd.activity.orders, cause: cmd.activity.cause };
    const last = events.length - 1;
    const carrier = events[last];
    if (carrier?.type === 'EntryRecorded' && carrier.data.created_at === cmd.at) events[last] = { type: 'EntryRecorded', data: { ...carrier.data, activity } };
    else events.push({ type: 'OrderActivityRecorded', data: { order_ref: ref, at: cmd.at, ...activity } });
  }

  // an earn that would take the member past 2^53 − 1 fails the event with this refusal, recording nothing
  return { events: withinMoneyLimits(s, events), entry_ids: [...new Set(entryIds)], earn_entry_ids: slots.map((x) => x.id), earns: slots.map(factsOf) };
};

/**
 * The signup bonus (decisions §5): once per member ever, on enrolment. Manual-timing rules wait
 * for review; every other timing posts at once (there is no order to wait for).
 */
export const decideSignupBonus = (s: MemberAggregate, cmd: { member_id: string; rules: readonly Rule[]; expiry: ExpiryPolicy; at: string; entryId: (cause: string, ruleId: string) => string }): MemberEvent[] => {
  const cause = orderCauses.signup(cmd.member_id);
  if (s.causes.has(cause)) return [];
  return withinMoneyLimits(s, signupBonus(cmd.rules, cmd.at).map((line): MemberEvent => {
    const manual = line.timing === 'manual';
    return {
      type: 'EntryRecorded',
      data: earnEntry(line, {
        id: cmd.entryId(cause, line.rule_id), cause, order_ref: null, at: cmd.at, expiry: cmd.expiry,
        status: manual ? 'under_review' : 'posted', release_on: manual ? 'manual' : null, release_at: null,
      }),
    };
  }));
};

/** Admin review of an `under_review` earn (POST /admin/v1/ledger-entries/{id}/approve|reject). */
export type ReviewOutcome = { events: MemberEvent[] } | { refusal: string };

export const decideReviewEntry = (s: MemberAggregate, cmd: { entry_id: string; action: 'approve' | 'reject'; actor: string | null; at: string }): ReviewOutcome => {
  const e = s.entries.get(cmd.entry_id);
  if (!e) return { refusal: 'not-found' };
  // the same decision again is an idempotent no-op (decisions §6 treats repeated terminal calls so)
  if (cmd.action === 'approve' && e.release_on === 'manual' && e.bucket === 'available') return { events: [] };
  if (cmd.action === 'reject' && e.status === 'rejected') return { events: [] };
  if (e.status !== 'under_review') return { refusal: `ledger entry ${e.id} is ${e.status}, not under review` };
  return cmd.action === 'approve'
    ? { events: [{ type: 'EntryReleased', data: { entry_id: e.id, at: cmd.at } }] }
    : { events: [{ type: 'EntryRejected', data: { entry_id: e.id, at: cmd.at, actor: cmd.actor } }] };
};
