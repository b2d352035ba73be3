/**
 * Inbound commerce events (interface-spec "Events") and the messages around them: the gateway →
 * ingest calls (`PATTERNS.ingest.*`) and ingest → ledger processing (`PATTERNS.ledger.processEvent`).
 */
import type { TenantScoped } from './patterns';

export const CUSTOMER_EVENT_TYPES = ['customer.created', 'customer.updated'] as const;
/** Order events that carry the order's amount (`gross_cents`, lines, …). `order.delivered` has the shape of `order.fulfilled`. */
export const ORDER_AMOUNT_EVENT_TYPES = ['order.placed', 'order.paid', 'order.fulfilled', 'order.delivered'] as const;
export const INBOUND_EVENT_TYPES = [...CUSTOMER_EVENT_TYPES, ...ORDER_AMOUNT_EVENT_TYPES, 'order.cancelled', 'order.refunded'] as const;
export type CustomerEventType = (typeof CUSTOMER_EVENT_TYPES)[number];
export type OrderAmountEventType = (typeof ORDER_AMOUNT_EVENT_TYPES)[number];
export type InboundEventType = (typeof INBOUND_EVENT_TYPES)[number];

export const isInboundEventType = (t: unknown): t is InboundEventType =>
  typeof t === 'string' && (INBOUND_EVENT_TYPES as readonly string[]).includes(t);
export const isCustomerEventType = (t: unknown): t is CustomerEventType =>
  typeof t === 'string' && (CUSTOMER_EVENT_TYPES as readonly string[]).includes(t);

interface InboundEventBase {
  /** The caller's id of the event: its idempotency key when no Idempotency-Key header applies. */
  id?: string;
  occurred_at?: string;
}

export interface CustomerIdentifiers { email?: string; phone?: string; external_ref?: string }

export interface CustomerEvent extends InboundEventBase, CustomerIdentifiers {
  type: CustomerEventType;
  email: string;
}

export interface OrderLine {
  amount_cents: number;
  product_ref?: string;
  /** Defaults to 1 when the caller leaves it out. */
  quantity: number;
  /** Defaults to false when the caller leaves it out. Gift-card lines never earn. */
  gift_card: boolean;
  tags?: string[];
}

/** What every order event may carry to name its customer and order its versions. */
interface OrderEventBase extends InboundEventBase {
  order_ref: string;
  email?: string;
  phone?: string;
  customer_ref?: string;
  customer?: CustomerIdentifiers;
  /** Only rises per order; an older version never overwrites a newer one. */
  aggregate_version?: number;
}

export interface OrderAmountEvent extends OrderEventBase {
  type: OrderAmountEventType;
  gross_cents: number;
  lines?: OrderLine[];
  tax_cents?: number;
  currency?: string;
  payment_method?: string;
  reservation_id?: string;
}

export interface OrderCancelledEvent extends OrderEventBase { type: 'order.cancelled' }

export interface OrderRefundedEvent extends OrderEventBase {
  type: 'order.refunded';
  refund_ref: string;
  refunded_cents: number;
}

export type OrderEvent = OrderAmountEvent | OrderCancelledEvent | OrderRefundedEvent;
/** A validated inbound event: optional fields the caller left out (or sent as null) are absent, line defaults filled in. */
export type InboundEvent = CustomerEvent | OrderEvent;

export const EVENT_STATUSES = ['queued', 'running', 'completed', 'failed'] as const;
export type EventStatusValue = (typeof EVENT_STATUSES)[number];

/** EventStatus (interface-spec) plus `order_ref` and `idempotency_key` (decisions §9): the GET and list item shape. */
export interface EventStatus {
  id: string;
  type: InboundEventType;
  status: EventStatusValue;
  error: string | null;
  ledger_entry_ids: string[];
  received_at: string;
  processed_at: string | null;
  order_ref: string | null;
  idempotency_key: string;
}

export interface EventAccepted { id: string; type: InboundEventType; status: EventStatusValue; replayed: boolean }

export interface BatchEventResult {
  index: number;
  accepted: boolean;
  id: string | null;
  status: EventStatusValue | null;
  replayed: boolean;
  errors: { path: string; message: string }[];
}

/** `ingest.events.submit` (partition key: tenant). The reply's `results` follow the request's order. */
export interface SubmitEventsRequest extends TenantScoped {
  events: { event: InboundEvent; /** the Idempotency-Key header (single events only) */ idempotency_key?: string }[];
}
export interface SubmitEventsReply { results: EventAccepted[] }

/** `ingest.events.get` → EventStatus or 404. */
export interface GetEventRequest extends TenantScoped { id: string }

/** `ingest.events.list` → `{ data: EventStatus[], pagination }`, newest first. */
export interface ListEventsQuery {
  status?: EventStatusValue;
  order_ref?: string;
  type?: InboundEventType;
  limit?: number;
  cursor?: string;
}
export interface ListEventsRequest extends TenantScoped { query: ListEventsQuery }

/**
 * `ledger.event.process`, sent by the ingest worker (partition key: the order_ref, or the email of a
 * customer event). The ledger must be idempotent by `event_id`: a crashed or timed-out attempt is sent again.
 */
export interface ProcessEventRequest {
  tenant: string;
  event_id: string;
  received_at: string;
  event: InboundEvent;
}
export interface ProcessEventReply {
  status: 'completed' | 'failed';
  error: string | null;
  ledger_entry_ids: string[];
}

/**
 * A batch of queued events (`ledger.events.process`), at most one event of an order (the queue
 * claims only the oldest unfinished event of each order), in receipt order.
 */
export interface ProcessEventsRequest {
  events: ProcessEventRequest[];
}
/** One outcome per event, in the request's order; `retry`: an infrastructure fault hit this event alone, send it again later. */
export type ProcessEventOutcome = ProcessEventReply | { status: 'retry'; error: string; ledger_entry_ids: [] };
export interface ProcessEventsReply {
  results: ProcessEventOutcome[];
}

/** Erasure of a member reaches the events they sent: the identifiers they were known by (normalised). */
export interface EraseCustomerRequest extends TenantScoped {
  email: string | null;
  phone: string | null;
  external_ref: string | null;
}
