import type { OrderEvent as InboundOrderEvent } from '@loyalty/contracts';
import { OrderAggregate, checkOrderEvent, fulfilmentTime, orderEvolver, orderStepEvent, planOrderStep } from './order.decider';

const T0 = '2030-01-01T00:00:00.000Z';
const T1 = '2030-01-02T00:00:00.000Z';

const ev = (e: Partial<InboundOrderEvent> & { type: InboundOrderEvent['type'] }): InboundOrderEvent =>
  ({ order_ref: 'O-1', gross_cents: 10_000, ...e }) as InboundOrderEvent;

/** Applies inbound events as the service would (planned, recorded, folded), with no ledger entries. */
const applied = (events: InboundOrderEvent[], earnOn: 'order.paid' | 'order.placed' | 'order.fulfilled' = 'order.paid', at = T0): OrderAggregate => {
  let s = orderEvolver.initialState();
  events.forEach((e, i) => {
    const plan = planOrderStep(s, e, { earn_on: earnOn }, at);
    s = orderEvolver.evolve(s, orderStepEvent(e, { event_id: `EV-${i}`, member_id: 'M-1', at, plan, entry_ids: [], earn_entry_ids: [] }));
  });
  return s;
};

describe('order decider', () => {
  it('runs the rules on the earn_on event only, once', () => {
    expect(planOrderStep(orderEvolver.initialState(), ev({ type: 'order.placed' }), { earn_on: 'order.paid' }, T0).earn).toBeNull();
    expect(planOrderStep(orderEvolver.initialState(), ev({ type: 'order.paid' }), { earn_on: 'order.paid' }, T0).earn).toEqual({ gross_cents: 10_000, lines: null });
    expect(planOrderStep(orderEvolver.initialState(), ev({ type: 'order.placed' }), { earn_on: 'order.placed' }, T0).earn).not.toBeNull();
    expect(planOrderStep(orderEvolver.initialState(), ev({ type: 'order.delivered' }), { earn_on: 'order.fulfilled' }, T0).earn).not.toBeNull();
    const paid = applied([ev({ type: 'order.paid' })]);
    expect(paid.earned).toBe(true);
    expect(planOrderStep(paid, ev({ type: 'order.paid' }), { earn_on: 'order.paid' }, T0).earn).toBeNull();
  });

  it('remembers lines from an earlier event when the earning event has none', () => {
    const lines = [{ amount_cents: 4_000, quantity: 1, gift_card: false, tags: ['shoes'] }];
    const placed = applied([ev({ type: 'order.placed', lines } as Partial<InboundOrderEvent> & { type: 'order.placed' })]);
    expect(planOrderStep(placed, ev({ type: 'order.paid' }), { earn_on: 'order.paid' }, T0).earn).toEqual({ gross_cents: 10_000, lines });
  });

  it('refuses an older aggregate_version naming both versions, accepts an equal one', () => {
    const s = applied([ev({ type: 'order.paid', aggregate_version: 3 })]);
    expect(checkOrderEvent(s, 'O-1', 'EV-x', ev({ type: 'order.placed', aggregate_version: 2 }))).toEqual({
      kind: 'reject', error: 'aggregate_version 2 is older than version 3 already applied to order O-1; event ignored',
    });
    expect(checkOrderEvent(s, 'O-1', 'EV-x', ev({ type: 'order.fulfilled', aggregate_version: 3 }))).toEqual({ kind: 'new' });
    expect(checkOrderEvent(s, 'O-1', 'EV-x', ev({ type: 'order.fulfilled' }))).toEqual({ kind: 'new' });
    expect(s.version).toBe(3);
  });

  it('recognises replays: the same event id, the same refund_ref, a second cancellation', () => {
    const s = applied([ev({ type: 'order.paid' }), { type: 'order.refunded', order_ref: 'O-1', refund_ref: 'R1', refunded_cents: 100 }]);
    expect(checkOrderEvent(s, 'O-1', 'EV-0', ev({ type: 'order.paid' })).kind).toBe('replay');
    expect(checkOrderEvent(s, 'O-1', 'EV-new', { type: 'order.refunded', order_ref: 'O-1', refund_ref: 'R1', refunded_cents: 100 }).kind).toBe('replay');
    expect(checkOrderEvent(s, 'O-1', 'EV-new', { type: 'order.refunded', order_ref: 'O-1', refund_ref: 'R2', refunded_cents: 100 }).kind).toBe('new');
    const cancelled = applied([ev({ type: 'order.paid' }), { type: 'order.cancelled', order_ref: 'O-1' }]);
    expect(checkOrderEvent(cancelled, 'O-1', 'EV-new', { type: 'order.cancelled', order_ref: 'O-1' }).kind).toBe('replay');
    expect(checkOrderEvent(cancelled, 'O-1', 'EV-new', ev({ type: 'order.fulfilled' }))).toEqual({ kind: 'reject', error: 'order O-1 was cancelled; order.fulfilled ignored' });
    expect(checkOrderEvent(cancelled, 'O-1', 'EV-new', { type: 'order.refunded', order_ref: 'O-1', refund_ref: 'R9', refunded_cents: 1 }).kind).toBe('new');
  });

  it('reconciles tier activity: spend = paid gross minus refunds, orders = paid and not cancelled', () => {
    const earn = planOrderStep(orderEvolver.initialState(), ev({ type: 'order.paid' }), { earn_on: 'order.paid' }, T0);
    expect(earn.activity).toMatchObject({ spend_cents: 10_000, orders: 1 });
    const paid = applied([ev({ type: 'order.paid' })]);
    const refund = planOrderStep(paid, { type: 'order.refunded', order_ref: 'O-1', refund_ref: 'R1', refunded_cents: 12_000 }, { earn_on: 'order.paid' }, T0);
    expect(refund.activity).toMatchObject({ spend_cents: -10_000, orders: 0 });
    expect(refund.refund).toEqual({ refund_ref: 'R1', gross_cents: 10_000, cumulative_refunded_cents: 12_000 });
    const partly = applied([ev({ type: 'order.paid' }), { type: 'order.refunded', order_ref: 'O-1', refund_ref: 'R1', refunded_cents: 3_000 }]);
    expect(partly.spend_cents).toBe(7_000);
    const cancel = planOrderStep(partly, { type: 'order.cancelled', order_ref: 'O-1' }, { earn_on: 'order.paid' }, T0);
    expect(cancel).toMatchObject({ cancel: true, activity: { spend_cents: -7_000, orders: -1 } });
    // refunds before the earn are caught up at the earn
    const early = applied([{ type: 'order.refunded', order_ref: 'O-1', refund_ref: 'R1', refunded_cents: 2_500 }]);
    const late = planOrderStep(early, ev({ type: 'order.paid' }), { earn_on: 'order.paid' }, T0);
    expect(late.refund).toEqual({ refund_ref: null, gross_cents: 10_000, cumulative_refunded_cents: 2_500 });
    expect(late.activity).toMatchObject({ spend_cents: 7_500, orders: 1 });
  });

  it('dates fulfilment by occurred_at, never later than processing; delivery implies fulfilment', () => {
    expect(fulfilmentTime({ at: T1, occurred_at: T0 })).toBe(T0);
    expect(fulfilmentTime({ at: T0, occurred_at: T1 })).toBe(T0);
    expect(fulfilmentTime({ at: T0, occurred_at: null })).toBe(T0);
    const s = applied([ev({ type: 'order.paid' }), ev({ type: 'order.delivered' })], 'order.paid', T1);
    expect(s.fulfilled_at).toBe(T1);
    expect(s.delivered_at).toBe(T1);
  });

  it('keeps the facts of its earns as each step recorded them (issue 13), and records none when a step has none', () => {
    const entry = (status: 'posted' | 'reversed') => ({
      id: 'LE-1', type: 'earn' as const, status, amount_cents: 100, reason_code: 'base', rule: 'base', parent_entry_id: null, release_at: null,
      expires_at: null, created_at: T0, order_ref: 'O-1', cause: 'earn:O-1:base', release_on: null, order_facts: true,
    });
    let s = orderEvolver.initialState();
    const step = (e: InboundOrderEvent, i: number, earns: { entry: ReturnType<typeof entry>; taken: [string, number][] }[] | undefined) => {
      const plan = planOrderStep(s, e, { earn_on: 'order.paid' }, T0);
      const recorded = orderStepEvent(e, { event_id: `EV-${i}`, member_id: 'M-1', at: T0, plan, entry_ids: [], earn_entry_ids: ['LE-1'], earns });
      expect('earns' in recorded.data).toBe(!!earns?.length);
      s = orderEvolver.evolve(s, recorded);
    };
    step(ev({ type: 'order.paid' }), 0, [{ entry: entry('posted'), taken: [] }]);
    expect(s.earns.get('LE-1')).toEqual({ entry: entry('posted'), taken: [] });
    step(ev({ type: 'order.placed' }), 1, []);
    expect(s.earns.get('LE-1')?.taken).toEqual([]);
    step({ type: 'order.refunded', order_ref: 'O-1', refund_ref: 'R1', refunded_cents: 10_000 }, 2, [{ entry: entry('reversed'), taken: [['LE-r1', 100]] }]);
    expect(s.earns.get('LE-1')).toEqual({ entry: entry('reversed'), taken: [['LE-r1', 100]] });
  });
});
