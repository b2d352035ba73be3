import type { InboundEvent } from '@loyalty/contracts';
import { busKeyFor, canonicalJson, derivedIdempotencyKey, idempotencyKeyFor, orderRefOf, partitionKeyFor } from './idempotency-key';

const paid: InboundEvent = { type: 'order.paid', order_ref: 'ORD-1', gross_cents: 1000 };

describe('idempotency keys of inbound events', () => {
  it('order events without id derive <type>:<order_ref>', () => {
    expect(derivedIdempotencyKey(paid)).toBe('order.paid:ORD-1');
    expect(derivedIdempotencyKey({ type: 'order.placed', order_ref: 'ORD-1', gross_cents: 5 })).toBe('order.placed:ORD-1');
    expect(derivedIdempotencyKey({ type: 'order.cancelled', order_ref: 'ORD-1' })).toBe('order.cancelled:ORD-1');
    expect(derivedIdempotencyKey({ type: 'order.delivered', order_ref: 'A:B', gross_cents: 0 })).toBe('order.delivered:A:B');
  });

  it('the same order_ref and type is the same event whatever else differs', () => {
    expect(derivedIdempotencyKey({ ...paid, gross_cents: 999, email: 'x@example.com' })).toBe(derivedIdempotencyKey(paid));
  });

  it('order.refunded adds the refund_ref, so two partial refunds are two events', () => {
    const first = derivedIdempotencyKey({ type: 'order.refunded', order_ref: 'ORD-1', refund_ref: 'R1', refunded_cents: 100 });
    const second = derivedIdempotencyKey({ type: 'order.refunded', order_ref: 'ORD-1', refund_ref: 'R2', refunded_cents: 100 });
    expect(first).toBe('order.refunded:ORD-1:R1');
    expect(second).toBe('order.refunded:ORD-1:R2');
  });

  it('customer events derive <type>:<email>:<content hash>: an identical resend replays, a changed update is new', () => {
    const a = derivedIdempotencyKey({ type: 'customer.updated', email: 'Ada@Example.com', phone: '+14155550100' });
    const sameReordered = derivedIdempotencyKey({ phone: '+14155550100', email: 'Ada@Example.com', type: 'customer.updated' } as InboundEvent);
    const changed = derivedIdempotencyKey({ type: 'customer.updated', email: 'Ada@Example.com', phone: '+14155550199' });
    expect(a).toMatch(/^customer\.updated:ada@example\.com:[0-9a-f]{16}$/);
    expect(sameReordered).toBe(a);
    expect(changed).not.toBe(a);
    expect(derivedIdempotencyKey({ type: 'customer.created', email: 'ada@example.com' })).toMatch(/^customer\.created:ada@example\.com:/);
  });

  it('the header wins over the id, the id over the derived key', () => {
    const withId: InboundEvent = { ...paid, id: 'evt_42' };
    expect(idempotencyKeyFor(withId, 'hdr-1')).toBe('hdr-1');
    expect(idempotencyKeyFor(withId)).toBe('evt_42');
    expect(idempotencyKeyFor(withId, null)).toBe('evt_42');
    expect(idempotencyKeyFor(paid)).toBe('order.paid:ORD-1');
  });

  it('partitions: one order, or one customer by normalised email; the bus key is the order_ref or the email', () => {
    expect(partitionKeyFor(paid)).toBe('order:ORD-1');
    expect(partitionKeyFor({ type: 'order.refunded', order_ref: 'ORD-1', refund_ref: 'R', refunded_cents: 1 })).toBe('order:ORD-1');
    expect(partitionKeyFor({ type: 'customer.created', email: ' Ada@Example.COM ' })).toBe('customer:ada@example.com');
    expect(busKeyFor(paid)).toBe('ORD-1');
    expect(busKeyFor({ type: 'customer.created', email: 'Ada@Example.com' })).toBe('ada@example.com');
    expect(orderRefOf(paid)).toBe('ORD-1');
    expect(orderRefOf({ type: 'customer.created', email: 'a@b.co' })).toBeNull();
  });

  it('canonical JSON sorts keys at every depth and skips undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: undefined } })).toBe('{"a":{"d":[2,{"e":0,"f":1}]},"b":1}');
  });
});
