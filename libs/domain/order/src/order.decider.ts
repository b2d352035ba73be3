import type { InboundEvent, OrderEvent as InboundOrderEvent, OrderLine, ProgramSettings } from '@loyalty/contracts';
import { OrderEarn, orderCauses } from '@loyalty/domain-member';

/**
 * The order stream `order-<tenant>-<orderRef>` (architecture.md "Streams"): one event per commerce
 * event the ledger applied, with what it did, so refunds and cancellations know exactly what to
 * take back and a redelivered event is recognised. Pure decide/evolve; no I/O.
 */

export type OrderStep = 'placed' | 'paid' | 'fulfilled' | 'delivered' | 'cancelled' | 'refunded';

export interface OrderStepData {
  /** the EventStatus id (`EV-…`) of the inbound event */
  event_id: string;
  member_id: string;
  /** processing time (programme clock) */
  at: string;
  occurred_at: string | null;
  aggregate_version: number | null;
  gross_cents: number | null;
  lines: OrderLine[] | null;
  payment_method: string | null;
  currency: string | null;
  reservation_id: string | null;
  /** ledger entries this event wrote */
  entry_ids: string[];
  /** present when this event ran the earning rules */
  earned: { gross_cents: number; entry_ids: string[] } | null;
  /** the facts of the order's earns after this event (issue 13; absent on events recorded before it) */
  earns?: OrderEarn[];
  /** tier activity this event recorded on the member (deltas) */
  spend_cents: number;
  orders: number;
  refund_ref?: string | null;
  refunded_cents?: number | null;
}

export type OrderStreamEvent =
  | { type: 'OrderPlaced'; data: OrderStepData }
  | { type: 'OrderPaid'; data: OrderStepData }
  | { type: 'OrderFulfilled'; data: OrderStepData }
  | { type: 'OrderDelivered'; data: OrderStepData }
  | { type: 'OrderCancelled'; data: OrderStepData }
  | { type: 'OrderRefunded'; data: OrderStepData & { refund_ref: string; refunded_cents: number } };

export const ORDER_EVENT_TYPE: Record<OrderStep, OrderStreamEvent['type']> = {
  placed: 'OrderPlaced', paid: 'OrderPaid', fulfilled: 'OrderFulfilled', delivered: 'OrderDelivered', cancelled: 'OrderCancelled', refunded: 'OrderRefunded',
};

export interface OrderAggregate {
  exists: boolean;
  member_id: string | null;
  placed_at: string | null;
  paid_at: string | null;
  /** fulfilment time: starts return windows */
  fulfilled_at: string | null;
  delivered_at: string | null;
  cancelled_at: string | null;
  gross_cents: number | null;
  lines: OrderLine[] | null;
  payment_method: string | null;
  earned: boolean;
  /** the gross the rules ran on (refund proportions use it) */
  earn_gross_cents: number | null;
  earn_entry_ids: string[];
  /** what the order keeps of its earns (issue 13): refunds and cancellations of earns the member's state let go are decided on these */
  earns: Map<string, OrderEarn>;
  refunded_cents: number;
  refunds: Map<string, { event_id: string; refunded_cents: number; entry_ids: string[] }>;
  /** net tier activity recorded on the member for this order */
  spend_cents: number;
  orders: number;
  /** highest aggregate_version applied */
  version: number | null;
  /** event id → the ledger entries it wrote */
  processed: Map<string, { step: OrderStep; entry_ids: string[] }>;
  cancel_entry_ids: string[];
}

export const initialOrderState = (): OrderAggregate => ({
  exists: false, member_id: null, placed_at: null, paid_at: null, fulfilled_at: null, delivered_at: null, cancelled_at: null,
  gross_cents: null, lines: null, payment_method: null, earned: false, earn_gross_cents: null, earn_entry_ids: [], earns: new Map(),
  refunded_cents: 0, refunds: new Map(), spend_cents: 0, orders: 0, version: null, processed: new Map(), cancel_entry_ids: [],
});

const stepOf = (type: OrderStreamEvent['type']): OrderStep => {
  switch (type) {
    case 'OrderPlaced': return 'placed';
    case 'OrderPaid': return 'paid';
    case 'OrderFulfilled': return 'fulfilled';
    case 'OrderDelivered': return 'delivered';
    case 'OrderCancelled': return 'cancelled';
    case 'OrderRefunded': return 'refunded';
    default: {
      const never: never = type;
      throw new TypeError(`unknown order event ${String(never)}`);
    }
  }
};

/** When the order counts as fulfilled: the event's occurred_at (never later than processing), else processing time. */
export const fulfilmentTime = (d: Pick<OrderStepData, 'at' | 'occurred_at'>): string => {
  if (d.occurred_at) {
    const o = Date.parse(d.occurred_at);
    if (Number.isFinite(o) && o <= Date.parse(d.at)) return new Date(o).toISOString();
  }
  return d.at;
};

export const evolveOrder = (s: OrderAggregate, event: OrderStreamEvent): OrderAggregate => {
  const d = event.data;
  const step = stepOf(event.type);
  s.exists = true;
  s.member_id = s.member_id ?? d.member_id;
  if (d.aggregate_version !== null && (s.version === null || d.aggregate_version > s.version)) s.version = d.aggregate_version;
  if (d.gross_cents !== null && step !== 'refunded' && step !== 'cancelled') s.gross_cents = d.gross_cents;
  if (d.lines) s.lines = d.lines;
  if (d.payment_method) s.payment_method = d.payment_method;
  s.processed.set(d.event_id, { step, entry_ids: d.entry_ids });
  if (d.earned) {
    s.earned = true;
    s.earn_gross_cents = d.earned.gross_cents;
    for (const id of d.earned.entry_ids) if (!s.earn_entry_ids.includes(id)) s.earn_entry_ids.push(id);
  }
  for (const f of d.earns ?? []) s.earns.set(f.entry.id, f);
  s.spend_cents += d.spend_cents;
  s.orders += d.orders;
  switch (event.type) {
    case 'OrderPlaced':
      s.placed_at = s.placed_at ?? d.at;
      return s;
    case 'OrderPaid':
      s.paid_at = s.paid_at ?? d.at;
      return s;
    case 'OrderFulfilled':
      s.fulfilled_at = s.fulfilled_at ?? fulfilmentTime(d);
      return s;
    case 'OrderDelivered':
      // delivery implies fulfilment
      s.fulfilled_at = s.fulfilled_at ?? fulfilmentTime(d);
      s.delivered_at = s.delivered_at ?? d.at;
      return s;
    case 'OrderCancelled':
      s.cancelled_at = s.cancelled_at ?? d.at;
      s.cancel_entry_ids.push(...d.entry_ids);
      return s;
    case 'OrderRefunded':
      s.refunds.set(event.data.refund_ref, { event_id: d.event_id, refunded_cents: event.data.refunded_cents, entry_ids: d.entry_ids });
      s.refunded_cents += event.data.refunded_cents;
      return s;
    default: {
      const never: never = event;
      throw new TypeError(`unknown order event ${JSON.stringify(never)}`);
    }
  }
};

export const orderEvolver = { initialState: initialOrderState, evolve: evolveOrder };

// ---------- deciding ----------

export const stepOfInbound = (e: InboundOrderEvent): OrderStep => {
  switch (e.type) {
    case 'order.placed': return 'placed';
    case 'order.paid': return 'paid';
    case 'order.fulfilled': return 'fulfilled';
    case 'order.delivered': return 'delivered';
    case 'order.cancelled': return 'cancelled';
    case 'order.refunded': return 'refunded';
    default: {
      const never: never = e;
      throw new TypeError(`unknown order event type ${JSON.stringify(never)}`);
    }
  }
};

const orderRefOf = (e: InboundOrderEvent): string => e.order_ref;

export const isOrderEvent = (e: InboundEvent): e is InboundOrderEvent => e.type.startsWith('order.');

export type OrderCheck =
  | { kind: 'new' }
  /** already applied (this event id, or the same refund_ref / a second cancellation): the original entries */
  | { kind: 'replay'; entry_ids: string[] }
  | { kind: 'reject'; error: string };

/**
 * Before anything is written: is this event new, a replay, or refused? An older aggregate_version
 * than one applied is refused naming both (an equal one is accepted: "older" is strictly lower).
 */
export const checkOrderEvent = (s: OrderAggregate, orderRef: string, eventId: string, e: InboundOrderEvent): OrderCheck => {
  const seen = s.processed.get(eventId);
  if (seen) return { kind: 'replay', entry_ids: seen.entry_ids };
  if (e.type === 'order.refunded') {
    const r = s.refunds.get(e.refund_ref);
    if (r) return { kind: 'replay', entry_ids: r.entry_ids };
  }
  const v = typeof e.aggregate_version === 'number' ? e.aggregate_version : null;
  if (v !== null && s.version !== null && v < s.version) {
    return { kind: 'reject', error: `aggregate_version ${v} is older than version ${s.version} already applied to order ${orderRef}; event ignored` };
  }
  if (e.type === 'order.cancelled' && s.cancelled_at) return { kind: 'replay', entry_ids: s.cancel_entry_ids };
  if (s.cancelled_at && e.type !== 'order.refunded') {
    return { kind: 'reject', error: `order ${orderRef} was cancelled; ${e.type} ignored` };
  }
  return { kind: 'new' };
};

/** What one new order event does, from the order's side; the member's side follows from it. */
export interface OrderPlan {
  step: OrderStep;
  /** this event runs the earning rules on this gross and these lines */
  earn: { gross_cents: number; lines: OrderLine[] | null } | null;
  fulfilled_at: string | null;
  delivered: boolean;
  /** cumulative refunds after this event */
  refunded_cents: number;
  /** take back for refunds (a refund event, or refunds that came before the earn) */
  refund: { refund_ref: string | null; gross_cents: number; cumulative_refunded_cents: number } | null;
  cancel: boolean;
  /** tier activity delta: spend = paid gross minus refunds, orders = paid and not cancelled */
  activity: { spend_cents: number; orders: number; cause: string } | null;
}

const earnTrigger = (earnOn: ProgramSettings['earn_on'], step: OrderStep): boolean => {
  switch (earnOn) {
    case 'order.placed': return step === 'placed';
    case 'order.fulfilled': return step === 'fulfilled' || step === 'delivered';
    case 'order.paid':
    default:
      return step === 'paid';
  }
};

export const planOrderStep = (s: OrderAggregate, e: InboundOrderEvent, settings: Pick<ProgramSettings, 'earn_on'>, at: string): OrderPlan => {
  const step = stepOfInbound(e);
  const occurred = e.occurred_at ?? null;
  const fulfilledAt = s.fulfilled_at ?? (step === 'fulfilled' || step === 'delivered' ? fulfilmentTime({ at, occurred_at: occurred }) : null);
  const delivered = s.delivered_at !== null || step === 'delivered';
  const refunded = s.refunded_cents + (e.type === 'order.refunded' ? e.refunded_cents : 0);
  const cancel = step === 'cancelled';
  const cancelled = cancel || s.cancelled_at !== null;
  let earn: OrderPlan['earn'] = null;
  if (!s.earned && !cancel && step !== 'refunded' && earnTrigger(settings.earn_on, step)) {
    const gross = 'gross_cents' in e && typeof e.gross_cents === 'number' ? e.gross_cents : s.gross_cents ?? 0;
    earn = { gross_cents: gross, lines: ('lines' in e && e.lines ? e.lines : null) ?? s.lines };
  }
  const earned = s.earned || earn !== null;
  const gross = earn ? earn.gross_cents : s.earn_gross_cents ?? 0;
  let refund: OrderPlan['refund'] = null;
  if (e.type === 'order.refunded' && s.earned) refund = { refund_ref: e.refund_ref, gross_cents: gross, cumulative_refunded_cents: refunded };
  else if (earn && refunded > 0) refund = { refund_ref: null, gross_cents: gross, cumulative_refunded_cents: refunded };
  // activity: reconcile what the member has recorded for this order with what it should be now
  const targetSpend = earned && !cancelled ? gross - Math.min(refunded, gross) : 0;
  const targetOrders = earned && !cancelled ? 1 : 0;
  const spend = targetSpend - s.spend_cents;
  const orders = targetOrders - s.orders;
  // only an earn, a refund or a cancellation moves the targets
  const ref = orderRefOf(e);
  const cause = cancel ? orderCauses.cancelActivity(ref) : earn ? orderCauses.earnActivity(ref)
    : e.type === 'order.refunded' ? orderCauses.refundActivity(ref, e.refund_ref) : `activity:${encodeURIComponent(ref)}:${step}`;
  return {
    step, earn, fulfilled_at: fulfilledAt, delivered, refunded_cents: refunded, refund, cancel,
    activity: spend !== 0 || orders !== 0 ? { spend_cents: spend, orders, cause } : null,
  };
};

/** The order stream event recording what the step did. */
export const orderStepEvent = (
  e: InboundOrderEvent,
  p: { event_id: string; member_id: string; at: string; plan: OrderPlan; entry_ids: string[]; earn_entry_ids: string[]; earns?: OrderEarn[] },
): OrderStreamEvent => {
  const amount = e.type !== 'order.cancelled' && e.type !== 'order.refunded' ? e : null;
  const data: OrderStepData = {
    event_id: p.event_id, member_id: p.member_id, at: p.at, occurred_at: e.occurred_at ?? null,
    aggregate_version: typeof e.aggregate_version === 'number' ? e.aggregate_version : null,
    gross_cents: amount ? amount.gross_cents : null, lines: amount?.lines ?? null, payment_method: amount?.payment_method ?? null,
    currency: amount?.currency ?? null, reservation_id: amount?.reservation_id ?? null,
    entry_ids: p.entry_ids,
    earned: p.plan.earn ? { gross_cents: p.plan.earn.gross_cents, entry_ids: p.earn_entry_ids } : null,
    spend_cents: p.plan.activity?.spend_cents ?? 0, orders: p.plan.activity?.orders ?? 0,
  };
  if (p.earns?.length) data.earns = p.earns;
  if (e.type === 'order.refunded') return { type: 'OrderRefunded', data: { ...data, refund_ref: e.refund_ref, refunded_cents: e.refunded_cents } };
  return { type: ORDER_EVENT_TYPE[p.plan.step], data } as OrderStreamEvent;
};
