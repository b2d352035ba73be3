import { createHash } from 'node:crypto';
import { CustomerEvent, InboundEvent, OrderEvent, isCustomerEventType } from '@loyalty/contracts';

export const isCustomerEvent = (e: InboundEvent): e is CustomerEvent => isCustomerEventType(e.type);
const asOrder = (e: InboundEvent): OrderEvent => e as OrderEvent;

/** JSON with object keys sorted, so equal events hash equally whatever the key order. */
export const canonicalJson = (v: unknown): string => {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).filter((k) => o[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v ?? null);
};

export const normaliseEmailForKey = (email: string): string => email.trim().toLowerCase();

/**
 * The key an event is deduplicated by when the caller gives neither an Idempotency-Key header nor
 * an `id` (interface-spec "Idempotency", decisions §5):
 * - order events: `<type>:<order_ref>` (the same order_ref and type is the same event);
 * - `order.refunded`: `order.refunded:<order_ref>:<refund_ref>`, so two partial refunds are two events;
 * - customer events: `<type>:<email>:<first 16 hex of SHA-256 of the canonical event>`. A customer
 *   has no order_ref; keying on the email alone would swallow every later `customer.updated` of that
 *   customer, so the content is part of the key: an identical resend is a replay, a changed one is new.
 */
export const derivedIdempotencyKey = (event: InboundEvent): string => {
  if (isCustomerEvent(event)) {
    const digest = createHash('sha256').update(canonicalJson(event)).digest('hex').slice(0, 16);
    return `${event.type}:${normaliseEmailForKey(event.email)}:${digest}`;
  }
  if (event.type === 'order.refunded') return `order.refunded:${event.order_ref}:${event.refund_ref}`;
  return `${event.type}:${event.order_ref}`;
};

/** Header (single events only) → the event's `id` → derived. */
export const idempotencyKeyFor = (event: InboundEvent, headerKey?: string | null): string =>
  headerKey ?? event.id ?? derivedIdempotencyKey(event);

/**
 * What the worker never runs two of at once, and runs in receipt order: one order, or one customer
 * (customer events carry no order_ref).
 */
export const partitionKeyFor = (event: InboundEvent): string =>
  isCustomerEvent(event) ? `customer:${normaliseEmailForKey(event.email)}` : `order:${asOrder(event).order_ref}`;

/** The command bus partition key of `ledger.event.process`: the order_ref, or a customer event's email. */
export const busKeyFor = (event: InboundEvent): string =>
  isCustomerEvent(event) ? normaliseEmailForKey(event.email) : asOrder(event).order_ref;

export const orderRefOf = (event: InboundEvent): string | null =>
  isCustomerEvent(event) ? null : asOrder(event).order_ref;
