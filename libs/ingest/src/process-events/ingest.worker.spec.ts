import type { InboundEvent } from '@loyalty/contracts';
import type { ClaimedEvent } from '../queue/event-queue.repository';
import { batchesOf, customerKeyOf, fnv1a } from './ingest.worker';

const claimed = (n: number, event: Record<string, unknown>, tenant = 'P-1'): ClaimedEvent => ({
  tenant, id: `EV-${n}`, seq: String(n), type: event.type as ClaimedEvent['type'], payload: event as unknown as InboundEvent,
  received_at: new Date(0), attempts: 1, partition_key: `order:${String(event.order_ref)}`,
});

describe('batches of claimed events', () => {
  it('keys an event by the customer it names (email, then customer_ref, then phone), else by its order', () => {
    expect(customerKeyOf({ type: 'order.paid', order_ref: 'O-1', gross_cents: 1, email: ' Ann@Example.com' } as InboundEvent)).toBe('email:ann@example.com');
    expect(customerKeyOf({ type: 'order.paid', order_ref: 'O-1', gross_cents: 1, customer: { email: 'ann@example.com' } } as InboundEvent)).toBe('email:ann@example.com');
    expect(customerKeyOf({ type: 'order.paid', order_ref: 'O-1', gross_cents: 1, customer_ref: 'c-9' } as InboundEvent)).toBe('ref:c-9');
    expect(customerKeyOf({ type: 'order.paid', order_ref: 'O-1', gross_cents: 1, phone: '+33612345678' } as InboundEvent)).toBe('phone:+33612345678');
    expect(customerKeyOf({ type: 'order.cancelled', order_ref: 'O-1' } as InboundEvent)).toBe('order:O-1');
    expect(customerKeyOf({ type: 'customer.updated', email: 'ANN@example.com' } as InboundEvent)).toBe('email:ann@example.com');
  });

  it('one customer always travels under one bus key; messages hold at most batchSize events, in receipt order', () => {
    const events = Array.from({ length: 300 }, (_, i) => claimed(i, { type: 'order.paid', order_ref: `O-${i}`, gross_cents: 1, email: `c${i % 37}@example.com` }));
    const batches = batchesOf(events, { batchSize: 16, busKeys: 8 });
    expect(batches.flatMap((b) => b.events).map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
    expect(batches.every((b) => b.events.length >= 1 && b.events.length <= 16)).toBe(true);
    expect(new Set(batches.map((b) => b.key)).size).toBeLessThanOrEqual(8);
    const keyOfCustomer = new Map<string, Set<string>>();
    for (const b of batches) {
      for (const e of b.events) {
        const c = customerKeyOf(e.payload);
        keyOfCustomer.set(c, (keyOfCustomer.get(c) ?? new Set()).add(b.key));
      }
      const seqs = b.events.map((e) => Number(e.seq));
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    }
    expect([...keyOfCustomer.values()].every((keys) => keys.size === 1)).toBe(true);
    // the same claim again gives the same keys (stable across claims and processes)
    expect(batchesOf(events, { batchSize: 16, busKeys: 8 }).map((b) => b.key)).toEqual(batches.map((b) => b.key));
  });

  it('a programme is part of the key: equal emails of two programmes need not share one', () => {
    const keys = new Set(Array.from({ length: 64 }, (_, i) => batchesOf([claimed(1, { type: 'order.paid', order_ref: 'O', gross_cents: 1, email: 'a@example.com' }, `P-${i}`)], { batchSize: 10, busKeys: 8 })[0].key));
    expect(keys.size).toBeGreaterThan(1);
  });

  it('spreads customers evenly over the bus keys (FNV-1a, the published test vectors)', () => {
    expect([fnv1a(''), fnv1a('a'), fnv1a('foobar')]).toEqual([0x811c9dc5, 0xe40c292c, 0xbf9cf968]);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[fnv1a(`P-1_live|email:c${i}@example.com`) % 4]++;
    expect(Math.min(...counts)).toBeGreaterThan(850);
  });
});
