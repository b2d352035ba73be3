import fc from 'fast-check';
import type { EarnLine } from '@loyalty/domain-earning';
import type { Rule } from '@loyalty/contracts';
import type { MemberEvent } from './member.events';
import { MemberAggregate, balancesOf } from './member.state';
import { refold as fold } from './testing/member.builder';
import {
  OrderStepCommand, decideOrderStep, decideReviewEntry, decideSignupBonus, earningRefusal, initialEarnStatus, orderCauses,
} from './member.earning';

const T0 = '2030-01-01T00:00:00.000Z';
const T1 = '2030-01-02T00:00:00.000Z';


const member = (state: 'registered' | 'prospect' | 'paused' | 'suspended' | 'deleted' = 'registered'): MemberAggregate => {
  const events: MemberEvent[] = [
    { type: 'MemberCreated', data: { member_id: 'M-1', state: state === 'prospect' ? 'prospect' : 'registered', referral_code: 'ABCDEFGH', pii: { v: 1, kid: 'k', iv: '', tag: '', data: '' }, marketing_consent: false, accepted_terms_version: null, at: T0 } },
  ];
  if (state === 'paused' || state === 'suspended') events.push({ type: 'MemberStateChanged', data: { from: 'registered', to: state, reason: state, at: T0 } });
  if (state === 'deleted') events.push({ type: 'MemberErased', data: { at: T0 } });
  return fold(events);
};

const line = (over: Partial<EarnLine> = {}): EarnLine => ({
  rule_id: 'base', rule_name: 'Base', rule_type: 'base', rule_version: 1, amount_cents: 100, timing: 'paid', expiry_months: null, ...over,
});

const cmd = (over: Partial<OrderStepCommand> = {}): OrderStepCommand => ({
  order: { order_ref: 'O-1', earn_entry_ids: [], fulfilled_at: null, delivered: false },
  at: T0, expiry: { policy: 'none' }, return_window_days: 30, entryId: (cause) => `LE-${cause}`,
  earn: null, refund: null, cancel: false, activity: null, ...over,
});

/** Runs one order step and folds its events; returns the new state and the decision. */
const step = (s: MemberAggregate, c: OrderStepCommand) => {
  const d = decideOrderStep(s, c);
  return { s: fold(d.events, s), d };
};

/** available = Σ posted + reversed entries; pending = Σ pending + under_review entries (signed). */
const ledgerSums = (s: MemberAggregate) => {
  let available = 0;
  let pending = 0;
  for (const e of s.entries.values()) {
    if (e.status === 'posted' || e.status === 'reversed') available += e.amount_cents;
    if (e.status === 'pending' || e.status === 'under_review') pending += e.amount_cents;
  }
  return { available, pending };
};

describe('member earning (decide + evolve)', () => {
  it('refuses paused, suspended and deleted members, with the reason', () => {
    expect(earningRefusal(member('registered'))).toBeNull();
    expect(earningRefusal(member('prospect'))).toBeNull();
    expect(earningRefusal(member('paused'))).toMatch(/paused/);
    expect(earningRefusal(member('suspended'))).toMatch(/suspended/);
    expect(earningRefusal(member('deleted'))).toMatch(/deleted/);
  });

  it('maps each timing to its starting status', () => {
    const unfulfilled = { fulfilled_at: null, delivered: false };
    expect(initialEarnStatus({ timing: 'immediate' }, unfulfilled, 30).status).toBe('posted');
    expect(initialEarnStatus({ timing: 'paid' }, unfulfilled, 30).status).toBe('posted');
    expect(initialEarnStatus({ timing: 'fulfilled' }, unfulfilled, 30)).toEqual({ status: 'pending', release_on: 'fulfilled', release_at: null });
    expect(initialEarnStatus({ timing: 'fulfilled' }, { fulfilled_at: T0, delivered: false }, 30).status).toBe('posted');
    expect(initialEarnStatus({ timing: 'delivered' }, { fulfilled_at: T0, delivered: false }, 30).status).toBe('pending');
    expect(initialEarnStatus({ timing: 'return_window' }, unfulfilled, 30)).toEqual({ status: 'pending', release_on: 'return_window', release_at: null });
    expect(initialEarnStatus({ timing: 'return_window' }, { fulfilled_at: T0, delivered: false }, 30).release_at).toBe('2030-01-31T00:00:00.000Z');
    expect(initialEarnStatus({ timing: 'manual' }, unfulfilled, 30).status).toBe('under_review');
  });

  it('an order is one member event: its last entry carries the tier activity, folded as the separate event was', () => {
    const activity = { spend_cents: 10_000, orders: 1, cause: orderCauses.earnActivity('O-1') };
    const merged = step(member(), cmd({ earn: { lines: [line()] }, activity }));
    expect(merged.d.events.map((e) => e.type)).toEqual(['EntryRecorded']);
    expect(merged.d.events[0].data).toMatchObject({ activity });
    // the same state as the entry and its OrderActivityRecorded (how orders were recorded before)
    const { activity: _carried, ...entry } = merged.d.events[0].data as { activity?: unknown };
    const separate = fold([
      { type: 'EntryRecorded', data: entry } as MemberEvent,
      { type: 'OrderActivityRecorded', data: { order_ref: 'O-1', at: T0, ...activity } },
    ], member());
    expect(merged.s.activity).toEqual(separate.activity);
    expect(merged.s.last_activity_at).toBe(separate.last_activity_at);
    expect(merged.s.causes.get(activity.cause)).toEqual([]);
    // the entry itself does not hold the activity
    expect(merged.s.entries.get(merged.d.entry_ids[0])).not.toHaveProperty('activity');
    expect(merged.s.entries.get(merged.d.entry_ids[0])).toEqual(separate.entries.get(merged.d.entry_ids[0]));
    // a retry decides nothing: the carried cause marks the activity recorded
    expect(decideOrderStep(merged.s, cmd({ earn: { lines: [line()] }, activity })).events).toEqual([]);
    // an order that earns nothing records its activity on its own
    const none = decideOrderStep(member(), cmd({ order: { order_ref: 'O-2', earn_entry_ids: [], fulfilled_at: null, delivered: false }, earn: { lines: [line({ amount_cents: 0 })] }, activity: { ...activity, cause: orderCauses.earnActivity('O-2') } }));
    expect(none.events.map((e) => e.type)).toEqual(['OrderActivityRecorded']);
  });

  it('earns once per order: the same step again decides nothing and reports the same entries', () => {
    const first = step(member(), cmd({ earn: { lines: [line(), line({ rule_id: 'boost', rule_type: 'category_boost', amount_cents: 20 })] }, activity: { spend_cents: 10_000, orders: 1, cause: orderCauses.earnActivity('O-1') } }));
    expect(first.d.entry_ids).toHaveLength(2);
    expect(balancesOf(first.s).available_cents).toBe(120);
    expect(first.s.entries.get(first.d.entry_ids[0])).toMatchObject({ type: 'earn', status: 'posted', rule: 'base', reason_code: 'base', order_ref: 'O-1' });
    const again = decideOrderStep(first.s, cmd({ earn: { lines: [line(), line({ rule_id: 'boost', amount_cents: 20 })] }, activity: { spend_cents: 10_000, orders: 1, cause: orderCauses.earnActivity('O-1') } }));
    expect(again.events).toEqual([]);
    expect(again.entry_ids.sort()).toEqual([...first.d.entry_ids].sort());
  });

  it('keeps fulfilled earns pending until fulfilment, and starts the return window at fulfilment', () => {
    const earned = step(member(), cmd({ earn: { lines: [line({ rule_id: 'f', timing: 'fulfilled', amount_cents: 50 }), line({ rule_id: 'rw', timing: 'return_window', amount_cents: 70 })] } }));
    expect(balancesOf(earned.s)).toMatchObject({ available_cents: 0, pending_cents: 120 });
    const ids = earned.d.earn_entry_ids;
    const fulfilled = step(earned.s, cmd({ order: { order_ref: 'O-1', earn_entry_ids: ids, fulfilled_at: T1, delivered: false } }));
    expect(fulfilled.d.events.map((e) => e.type).sort()).toEqual(['EntryReleaseScheduled', 'EntryReleased']);
    expect(balancesOf(fulfilled.s)).toMatchObject({ available_cents: 50, pending_cents: 70 });
    expect(fulfilled.s.entries.get(ids[1])!.release_at).toBe('2030-02-01T00:00:00.000Z');
    // a second fulfilment changes nothing
    expect(decideOrderStep(fulfilled.s, cmd({ order: { order_ref: 'O-1', earn_entry_ids: ids, fulfilled_at: T1, delivered: true } })).events).toEqual([]);
  });

  it('takes refunds back cumulatively, pending first, each reverse naming its earn', () => {
    const earned = step(member(), cmd({ earn: { lines: [line({ rule_id: 'now', amount_cents: 100 }), line({ rule_id: 'later', timing: 'fulfilled', amount_cents: 100 })] } }));
    const ids = earned.d.earn_entry_ids;
    const order = { order_ref: 'O-1', earn_entry_ids: ids, fulfilled_at: null, delivered: false };
    // refund 25 % of 10 000: floor(200 × 2500 / 10000) = 50, all from the pending earn
    const r1 = step(earned.s, cmd({ order, refund: { refund_ref: 'R1', gross_cents: 10_000, cumulative_refunded_cents: 2_500 } }));
    expect(r1.d.entry_ids).toHaveLength(1);
    const rev = r1.s.entries.get(r1.d.entry_ids[0])!;
    expect(rev).toMatchObject({ type: 'reverse', amount_cents: -50, parent_entry_id: ids[1], status: 'pending', reason_code: 'refund' });
    expect(balancesOf(r1.s)).toMatchObject({ available_cents: 100, pending_cents: 50 });
    // refund 75 % more (cumulative 100 %): 150 more, 50 from pending then 100 from posted
    const r2 = step(r1.s, cmd({ order, refund: { refund_ref: 'R2', gross_cents: 10_000, cumulative_refunded_cents: 10_000 } }));
    expect(r2.d.entry_ids.map((id) => r2.s.entries.get(id)!.amount_cents).sort()).toEqual([-100, -50]);
    expect(balancesOf(r2.s)).toMatchObject({ available_cents: 0, pending_cents: 0 });
    expect(r2.s.entries.get(ids[0])!.status).toBe('reversed');
    expect(r2.s.entries.get(ids[1])!.status).toBe('reversed');
    expect(ledgerSums(r2.s)).toEqual({ available: 0, pending: 0 });
    // beyond gross: nothing more
    expect(decideOrderStep(r2.s, cmd({ order, refund: { refund_ref: 'R3', gross_cents: 10_000, cumulative_refunded_cents: 15_000 } })).events).toEqual([]);
    // the same refund again: no events, the same entries
    const replay = decideOrderStep(r2.s, cmd({ order, refund: { refund_ref: 'R2', gross_cents: 10_000, cumulative_refunded_cents: 10_000 } }));
    expect(replay.events).toEqual([]);
    expect(replay.entry_ids.sort()).toEqual([...r2.d.entry_ids].sort());
  });

  it('a pending take-back follows its earn: posted on release, reversed with it when the earn is fully taken back', () => {
    const earned = step(member(), cmd({ earn: { lines: [line({ rule_id: 'f', timing: 'fulfilled', amount_cents: 100 }), line({ rule_id: 'm', timing: 'manual', amount_cents: 100 })] } }));
    const ids = earned.d.earn_entry_ids;
    const order = { order_ref: 'O-1', earn_entry_ids: ids, fulfilled_at: null, delivered: false };
    // 25 % refunded while both wait: 50 taken from the first pending earn
    const r1 = step(earned.s, cmd({ order, refund: { refund_ref: 'R1', gross_cents: 1000, cumulative_refunded_cents: 250 } }));
    expect(r1.s.entries.get(r1.d.entry_ids[0])).toMatchObject({ parent_entry_id: ids[0], status: 'pending', amount_cents: -50 });
    const released = step(r1.s, cmd({ order: { ...order, fulfilled_at: T1 } }));
    expect(released.s.entries.get(r1.d.entry_ids[0])!.status).toBe('posted');
    expect(balancesOf(released.s)).toMatchObject({ available_cents: 50, pending_cents: 100 });
    // 75 % in all: 100 more, pending first (the earn under review)
    const r2 = step(released.s, cmd({ order: { ...order, fulfilled_at: T1 }, refund: { refund_ref: 'R2', gross_cents: 1000, cumulative_refunded_cents: 750 } }));
    expect(r2.s.entries.get(r2.d.entry_ids[0])).toMatchObject({ parent_entry_id: ids[1], amount_cents: -100 });
    expect(r2.s.entries.get(ids[1])!.status).toBe('reversed');
    expect(r2.s.entries.get(r2.d.entry_ids[0])!.status).toBe('reversed');
    expect(balancesOf(r2.s)).toMatchObject({ available_cents: 50, pending_cents: 0 });
    expect(ledgerSums(r2.s)).toEqual({ available: 50, pending: 0 });
  });

  it('a pending take-back of a rejected earn is rejected with it', () => {
    const earned = step(member(), cmd({ earn: { lines: [line({ rule_id: 'm', timing: 'manual', amount_cents: 100 })] } }));
    const ids = earned.d.earn_entry_ids;
    const order = { order_ref: 'O-1', earn_entry_ids: ids, fulfilled_at: null, delivered: false };
    const r1 = step(earned.s, cmd({ order, refund: { refund_ref: 'R1', gross_cents: 1000, cumulative_refunded_cents: 400 } }));
    expect(balancesOf(r1.s).pending_cents).toBe(60);
    const review = decideReviewEntry(r1.s, { entry_id: ids[0], action: 'reject', actor: 'admin', at: T1 });
    const done = fold('events' in review ? review.events : [], r1.s);
    expect(done.entries.get(r1.d.entry_ids[0])!.status).toBe('rejected');
    expect(balancesOf(done)).toMatchObject({ available_cents: 0, pending_cents: 0 });
    expect(ledgerSums(done)).toEqual({ available: 0, pending: 0 });
  });

  it('cancellation reverses whatever remains of every earn of the order', () => {
    const earned = step(member(), cmd({ earn: { lines: [line({ amount_cents: 300 }), line({ rule_id: 'rw', timing: 'return_window', amount_cents: 200 })] } }));
    const ids = earned.d.earn_entry_ids;
    const order = { order_ref: 'O-1', earn_entry_ids: ids, fulfilled_at: null, delivered: false };
    const refunded = step(earned.s, cmd({ order, refund: { refund_ref: 'R1', gross_cents: 1000, cumulative_refunded_cents: 100 } }));
    const cancelled = step(refunded.s, cmd({ order, cancel: true, activity: { spend_cents: -900, orders: -1, cause: orderCauses.cancelActivity('O-1') } }));
    expect(balancesOf(cancelled.s)).toMatchObject({ available_cents: 0, pending_cents: 0 });
    for (const id of ids) expect(cancelled.s.entries.get(id)!.status).toBe('reversed');
    expect(cancelled.d.entry_ids.every((id) => cancelled.s.entries.get(id)!.type === 'reverse')).toBe(true);
    expect(ledgerSums(cancelled.s)).toEqual({ available: 0, pending: 0 });
    expect(decideOrderStep(cancelled.s, cmd({ order, cancel: true, activity: { spend_cents: -900, orders: -1, cause: orderCauses.cancelActivity('O-1') } })).events).toEqual([]);
  });

  it('property: any refund sequence takes back exactly floor(earned × min(refunded, gross) / gross), ledger sums match balances', () => {
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 1, max: 50_000 }), fc.integer({ min: 0, max: 50_000 }),
      fc.array(fc.integer({ min: 1, max: 400_000 }), { minLength: 1, maxLength: 8 }),
      (gross, postedAmount, pendingAmount, refunds) => {
        const lines = [line({ rule_id: 'a', amount_cents: postedAmount })];
        if (pendingAmount > 0) lines.push(line({ rule_id: 'b', timing: 'delivered', amount_cents: pendingAmount }));
        let { s, d } = step(member(), cmd({ earn: { lines } }));
        const earned = postedAmount + pendingAmount;
        const order = { order_ref: 'O-1', earn_entry_ids: d.earn_entry_ids, fulfilled_at: null, delivered: false };
        let cum = 0;
        refunds.forEach((r, i) => {
          cum += r;
          ({ s } = step(s, cmd({ order, refund: { refund_ref: `R${i}`, gross_cents: gross, cumulative_refunded_cents: cum } })));
          const expected = cum >= gross ? earned : Math.floor((earned * cum) / gross);
          const b = balancesOf(s);
          expect(earned - (b.available_cents + b.pending_cents)).toBe(expected);
          expect(ledgerSums(s)).toEqual({ available: b.available_cents, pending: b.pending_cents });
        });
      },
    ), { numRuns: 200 });
  });

  it('pays the signup bonus once per member ever; manual bonuses wait for review', () => {
    const rules: Rule[] = [
      { id: 'welcome', name: 'Welcome', type: 'signup_bonus', version: 1, earn_rate_pct: 0, timing: 'immediate', tags: null, min_order_cents: null, cap_per_order_cents: null, expiry_months: 12, amount_cents: 500 },
      { id: 'checked', name: 'Checked', type: 'signup_bonus', version: 1, earn_rate_pct: 0, timing: 'manual', tags: null, min_order_cents: null, cap_per_order_cents: null, expiry_months: null, amount_cents: 300 },
    ];
    const s = member();
    const events = decideSignupBonus(s, { member_id: 'M-1', rules, expiry: { policy: 'none' }, at: T0, entryId: (c, r) => `LE-${c}-${r}` });
    const after = fold(events, s);
    expect(balancesOf(after)).toMatchObject({ available_cents: 500, pending_cents: 300 });
    const bonus = after.entries.get('LE-signup:M-1-welcome')!;
    expect(bonus).toMatchObject({ type: 'earn', status: 'posted', rule: 'welcome', reason_code: 'signup_bonus', expires_at: '2031-01-01T00:00:00.000Z' });
    expect(decideSignupBonus(after, { member_id: 'M-1', rules, expiry: { policy: 'none' }, at: T1, entryId: (c, r) => `LE-x-${c}-${r}` })).toEqual([]);
  });

  it('reviews only entries under review; the same decision again is a no-op', () => {
    const earned = step(member(), cmd({ earn: { lines: [line({ rule_id: 'm', timing: 'manual' }), line({ rule_id: 'p' })] } }));
    const [manual, posted] = earned.d.earn_entry_ids;
    const approve = decideReviewEntry(earned.s, { entry_id: manual, action: 'approve', actor: null, at: T1 });
    const approved = fold('events' in approve ? approve.events : [], earned.s);
    expect(approved.entries.get(manual)!.status).toBe('posted');
    expect(decideReviewEntry(approved, { entry_id: manual, action: 'approve', actor: null, at: T1 })).toEqual({ events: [] });
    expect(decideReviewEntry(approved, { entry_id: manual, action: 'reject', actor: null, at: T1 })).toEqual({ refusal: expect.stringMatching(/not under review/) });
    expect(decideReviewEntry(approved, { entry_id: posted, action: 'approve', actor: null, at: T1 })).toEqual({ refusal: expect.stringMatching(/posted, not under review/) });
    expect(decideReviewEntry(approved, { entry_id: 'LE-nope', action: 'approve', actor: null, at: T1 })).toEqual({ refusal: 'not-found' });
  });

  it('keeps causes of different orders and refunds apart, whatever characters the refs contain', () => {
    expect(orderCauses.refundPrefix('O:1', 'a')).not.toBe(orderCauses.refundPrefix('O', '1:a'));
    expect(orderCauses.refundPrefix('O', 'a:b').startsWith(orderCauses.refundPrefix('O', 'a'))).toBe(false);
    expect(orderCauses.earn('O:x', 'r').startsWith(orderCauses.earnPrefix('O'))).toBe(false);
  });
});
