import 'reflect-metadata';
import { ProblemError } from '@loyalty/platform';
import { checkInboundEvent, parseSubmission } from './events.validation';

const order = (extra: Record<string, unknown> = {}) => ({ type: 'order.paid', order_ref: 'ORD-1', gross_cents: 1000, ...extra });

/** The 422 problem a call throws (fails the test when it does not throw one). */
const problemOf = (fn: () => unknown): ProblemError => {
  try {
    fn();
  } catch (e) {
    if (e instanceof ProblemError) return e;
    throw e;
  }
  throw new Error('expected a validation problem');
};
const pathsOf = (fn: () => unknown): string[] => {
  const p = problemOf(fn);
  expect(p.problem.slug).toBe('validation');
  return (p.problem.errors ?? []).map((e) => e.path);
};

describe('inbound event validation', () => {
  it('accepts every inbound type in its minimal form', () => {
    const minimal = [
      { type: 'customer.created', email: 'ada@example.com' },
      { type: 'customer.updated', email: 'ada@example.com', phone: '+14155550100', external_ref: 'c-1' },
      order({ type: 'order.placed' }), order(), order({ type: 'order.fulfilled' }), order({ type: 'order.delivered', gross_cents: 0 }),
      { type: 'order.cancelled', order_ref: 'ORD-1' },
      { type: 'order.refunded', order_ref: 'ORD-1', refund_ref: 'R-1', refunded_cents: 1 },
    ];
    for (const e of minimal) expect(checkInboundEvent(e)).toEqual({ ok: true, event: e });
  });

  it('accepts a full order event and fills line defaults, dropping nulls', () => {
    const r = checkInboundEvent(order({
      id: 'evt-1', occurred_at: '2025-03-01T10:00:00.000Z', email: 'ada@example.com', phone: '+14155550100', customer_ref: 'c-1',
      customer: { email: 'ada@example.com', phone: '+14155550100', external_ref: 'c-1' }, tax_cents: 80, currency: 'EUR',
      payment_method: 'card', aggregate_version: 3, reservation_id: 'RS-1',
      lines: [{ amount_cents: 600, product_ref: 'SKU-1', tags: ['shoes'] }, { amount_cents: 400, quantity: 2, gift_card: true, product_ref: null }],
    }));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect((r.event as { lines: unknown[] }).lines).toEqual([
      { amount_cents: 600, product_ref: 'SKU-1', tags: ['shoes'], quantity: 1, gift_card: false },
      { amount_cents: 400, quantity: 2, gift_card: true },
    ]);
  });

  it('maps errors to JSON pointers of the event, its lines and its customer', () => {
    const r = checkInboundEvent(order({ gross_cents: -1, lines: [{ amount_cents: 1 }, { amount_cents: 1.5, quantity: 0 }], customer: { email: 'nope' } }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => e.path).sort()).toEqual(['/customer/email', '/gross_cents', '/lines/1/amount_cents', '/lines/1/quantity']);
  });

  it('amounts must be safe integers: no floats, no strings, no 1e300', () => {
    for (const gross_cents of [10.5, '100', 1e300, Number.MAX_SAFE_INTEGER + 1, null]) {
      const r = checkInboundEvent(order({ gross_cents }));
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.errors.map((e) => e.path)).toContain('/gross_cents');
    }
    expect(checkInboundEvent(order({ gross_cents: Number.MAX_SAFE_INTEGER })).ok).toBe(true);
    const refund = checkInboundEvent({ type: 'order.refunded', order_ref: 'O', refund_ref: 'R', refunded_cents: 0 });
    expect(!refund.ok && refund.errors.map((e) => e.path)).toEqual(['/refunded_cents']);
  });

  it('refuses unknown fields, missing requirements, unknown and missing types', () => {
    const unknown = checkInboundEvent(order({ points: 5 }));
    expect(!unknown.ok && unknown.errors).toEqual([{ path: '/points', message: 'unknown field points' }]);
    const nestedUnknown = checkInboundEvent(order({ lines: [{ amount_cents: 1, colour: 'red' }] }));
    expect(!nestedUnknown.ok && nestedUnknown.errors.map((e) => e.path)).toEqual(['/lines/0/colour']);
    const cancelled = checkInboundEvent({ type: 'order.cancelled', order_ref: 'O', gross_cents: 5 });
    expect(!cancelled.ok && cancelled.errors.map((e) => e.path)).toEqual(['/gross_cents']);
    const missing = checkInboundEvent({ type: 'order.paid' });
    expect(!missing.ok && missing.errors.map((e) => e.path).sort()).toEqual(['/gross_cents', '/order_ref']);
    const customer = checkInboundEvent({ type: 'customer.created', email: 'not-an-email' });
    expect(!customer.ok && customer.errors.map((e) => e.path)).toEqual(['/email']);
    const badType = checkInboundEvent({ type: 'order.shipped', order_ref: 'O' });
    expect(!badType.ok && badType.errors.map((e) => e.path)).toEqual(['/type']);
    const noType = checkInboundEvent({ order_ref: 'O' });
    expect(!noType.ok && noType.errors).toEqual([{ path: '/type', message: 'type is required' }]);
  });

  it('enforces the length limits of decisions §2', () => {
    const long = (n: number) => 'x'.repeat(n);
    expect(checkInboundEvent(order({ order_ref: long(128) })).ok).toBe(true);
    const paths = (e: Record<string, unknown>) => { const r = checkInboundEvent(e); return r.ok ? [] : r.errors.map((x) => x.path); };
    expect(paths(order({ order_ref: long(129) }))).toEqual(['/order_ref']);
    expect(paths(order({ id: long(129) }))).toEqual(['/id']);
    expect(paths(order({ lines: [{ amount_cents: 1, product_ref: long(129) }] }))).toEqual(['/lines/0/product_ref']);
    expect(paths(order({ lines: [{ amount_cents: 1, tags: Array(33).fill('t') }] }))).toEqual(['/lines/0/tags']);
    expect(paths(order({ lines: [{ amount_cents: 1, tags: [long(65)] }] }))).toEqual(['/lines/0/tags']);
    expect(paths(order({ lines: Array(501).fill({ amount_cents: 1 }) }))).toEqual(['/lines']);
    expect(paths(order({ lines: Array(500).fill({ amount_cents: 1 }) }))).toEqual([]);
    expect(paths({ type: 'order.refunded', order_ref: 'O', refund_ref: long(129), refunded_cents: 1 })).toEqual(['/refund_ref']);
    expect(paths(order({ occurred_at: '2025-03-01' }))).toEqual(['/occurred_at']);
    expect(paths(order({ occurred_at: '2025-03-01T10:00:00+05:30' }))).toEqual([]);
  });
});

describe('POST /v1/events body', () => {
  it('a single event, with or without an Idempotency-Key', () => {
    expect(parseSubmission(order(), undefined)).toEqual({ mode: 'single', events: [{ event: order() }] });
    expect(parseSubmission(order(), 'k-1')).toEqual({ mode: 'single', events: [{ event: order(), idempotency_key: 'k-1' }] });
  });

  it('a batch of 1 to 100; 0 or 101 is a 422 at /events', () => {
    const batch = (n: number) => ({ events: Array.from({ length: n }, (_, i) => order({ order_ref: `O-${i}` })) });
    expect(parseSubmission(batch(1), undefined).events).toHaveLength(1);
    expect(parseSubmission(batch(100), undefined)).toMatchObject({ mode: 'batch' });
    expect(pathsOf(() => parseSubmission(batch(0), undefined))).toEqual(['/events']);
    expect(pathsOf(() => parseSubmission(batch(101), undefined))).toEqual(['/events']);
    expect(pathsOf(() => parseSubmission({ events: 'nope' }, undefined))).toEqual(['/events']);
  });

  it('an invalid event in a batch refuses the batch with paths under /events/<index>', () => {
    const events = [order({ order_ref: 'A' }), order({ order_ref: 'B' }), order({ order_ref: 'C' }), order({ order_ref: 'D', gross_cents: -5 }), { type: 'x' }];
    const p = problemOf(() => parseSubmission({ events }, undefined));
    expect(p.status).toBe(422);
    expect(p.problem.errors!.map((e) => e.path)).toEqual(['/events/3/gross_cents', '/events/4/type']);
  });

  it('the Idempotency-Key header: at most 128 characters, single events only', () => {
    expect(pathsOf(() => parseSubmission(order(), 'k'.repeat(129)))).toEqual(['/headers/idempotency-key']);
    expect(pathsOf(() => parseSubmission(order(), ''))).toEqual(['/headers/idempotency-key']);
    expect(parseSubmission(order(), 'k'.repeat(128)).events[0].idempotency_key).toHaveLength(128);
    expect(pathsOf(() => parseSubmission({ events: [order()] }, 'k-1'))).toEqual(['/headers/idempotency-key']);
  });

  it('bodies that are neither an event nor a batch', () => {
    expect(pathsOf(() => parseSubmission([order()], undefined))).toEqual(['']);
    expect(pathsOf(() => parseSubmission('text', undefined))).toEqual(['']);
    expect(pathsOf(() => parseSubmission({ events: [order()], extra: 1 }, undefined))).toEqual(['/extra']);
    expect(pathsOf(() => parseSubmission({}, undefined))).toEqual(['/type']);
  });
});
