import fc from 'fast-check';
import type { Lot } from './points-lot.ledger';
import { consumeLots, expireDueLots, expiringWithin, fifoOrder, restoreLots } from './points-lot.ledger';

function lot(id: string, earned_at: string, remaining: number, overrides: Partial<Lot> = {}): Lot {
  return { id, amount_cents: remaining, remaining_cents: remaining, expires_at: null, earned_at, ...overrides };
}

const NOW = '2024-06-15T00:00:00.000Z';

describe('fifoOrder', () => {
  it('given lots in any order when ordered then earliest earned_at first, then id', () => {
    const lots = [
      lot('b', '2024-02-01T00:00:00.000Z', 1),
      lot('c', '2024-01-01T00:00:00.000Z', 1),
      lot('a', '2024-02-01T00:00:00.000Z', 1),
      lot('d', '2024-01-01T01:00:00+02:00', 1), // 2023-12-31T23:00Z: earliest instant
    ];
    expect(fifoOrder(lots).map((l) => l.id)).toEqual(['d', 'c', 'a', 'b']);
    expect(lots.map((l) => l.id)).toEqual(['b', 'c', 'a', 'd']); // input untouched
  });
});

describe('consumeLots', () => {
  const lots = [
    lot('L2', '2024-02-01T00:00:00.000Z', 300),
    lot('L1', '2024-01-01T00:00:00.000Z', 100),
    lot('L3', '2024-03-01T00:00:00.000Z', 500),
  ];

  it('given an amount when consumed then the oldest lots are spent first', () => {
    const result = consumeLots(lots, 250);
    expect(result.consumed).toEqual([
      { lot_id: 'L1', amount_cents: 100 },
      { lot_id: 'L2', amount_cents: 150 },
    ]);
    expect(result.shortfall).toBe(0);
    expect(result.lots.map((l) => [l.id, l.remaining_cents])).toEqual([
      ['L2', 150],
      ['L1', 0],
      ['L3', 500],
    ]);
  });

  it('given an amount when consumed then the input lots are not mutated and untouched lots are shared', () => {
    const snapshot = structuredClone(lots);
    const result = consumeLots(lots, 250);
    expect(lots).toEqual(snapshot);
    expect(result.lots[2]).toBe(lots[2]);
  });

  it('given more than the lots hold when consumed then it reports the shortfall', () => {
    const result = consumeLots(lots, 1_000);
    expect(result.shortfall).toBe(100);
    expect(result.lots.every((l) => l.remaining_cents === 0)).toBe(true);
    expect(result.consumed.map((c) => c.amount_cents)).toEqual([100, 300, 500]);
  });

  it('given lots already partly or fully spent when consumed then they give only what remains', () => {
    const partly = [
      lot('A', '2024-01-01T00:00:00.000Z', 0, { amount_cents: 100 }),
      lot('B', '2024-01-02T00:00:00.000Z', 40, { amount_cents: 100 }),
      lot('C', '2024-01-03T00:00:00.000Z', 100),
    ];
    expect(consumeLots(partly, 60).consumed).toEqual([
      { lot_id: 'B', amount_cents: 40 },
      { lot_id: 'C', amount_cents: 20 },
    ]);
  });

  it('given lots past their expiry when consumed then they are taken as given (the caller expires first)', () => {
    const expired = [lot('OLD', '2020-01-01T00:00:00.000Z', 100, { expires_at: '2021-01-01T00:00:00.000Z' })];
    expect(consumeLots(expired, 10).consumed).toEqual([{ lot_id: 'OLD', amount_cents: 10 }]);
  });

  it('given zero when consumed then nothing changes', () => {
    expect(consumeLots(lots, 0)).toEqual({ lots, consumed: [], shortfall: 0 });
  });

  it('given no lots when consumed then everything is shortfall', () => {
    expect(consumeLots([], 70)).toEqual({ lots: [], consumed: [], shortfall: 70 });
  });

  it('given invalid input when consumed then it throws', () => {
    expect(() => consumeLots(lots, -1)).toThrow(RangeError);
    expect(() => consumeLots(lots, 1.5)).toThrow(RangeError);
    expect(() => consumeLots([lot('X', NOW, 1), lot('X', NOW, 2)], 1)).toThrow(/duplicate lot id/);
    expect(() => consumeLots([lot('X', NOW, 10, { amount_cents: 5 })], 1)).toThrow(/exceeds amount_cents/);
    expect(() => consumeLots([lot('X', 'someday', 1)], 1)).toThrow(RangeError);
  });
});

describe('restoreLots', () => {
  it('given what a voided voucher consumed when restored then each lot gets its points back', () => {
    const lots = [lot('L1', '2024-01-01T00:00:00.000Z', 100), lot('L2', '2024-02-01T00:00:00.000Z', 300)];
    const { lots: after, consumed } = consumeLots(lots, 250);
    expect(restoreLots(after, consumed)).toEqual(lots);
  });

  it('given several movements to one lot when restored then they add up', () => {
    const lots = [lot('L1', NOW, 0, { amount_cents: 100 })];
    expect(restoreLots(lots, [{ lot_id: 'L1', amount_cents: 30 }, { lot_id: 'L1', amount_cents: 20 }])[0]?.remaining_cents).toBe(50);
  });

  it('given an unknown lot when restored then it throws', () => {
    expect(() => restoreLots([lot('L1', NOW, 0, { amount_cents: 10 })], [{ lot_id: 'nope', amount_cents: 1 }])).toThrow(/unknown lot/);
  });

  it('given more than the lot was earned with when restored then it throws', () => {
    expect(() => restoreLots([lot('L1', NOW, 90, { amount_cents: 100 })], [{ lot_id: 'L1', amount_cents: 11 }])).toThrow(/exceed/);
  });

  it('given a negative movement when restored then it throws', () => {
    expect(() => restoreLots([lot('L1', NOW, 0, { amount_cents: 100 })], [{ lot_id: 'L1', amount_cents: -1 }])).toThrow(RangeError);
  });
});

describe('expireDueLots', () => {
  const lots = [
    lot('DUE', '2023-01-01T00:00:00.000Z', 100, { expires_at: '2024-06-14T23:59:59.999Z' }),
    lot('EXACT', '2023-02-01T00:00:00.000Z', 50, { expires_at: NOW }),
    lot('LATER', '2023-03-01T00:00:00.000Z', 70, { expires_at: '2024-06-15T00:00:00.001Z' }),
    lot('NEVER', '2023-04-01T00:00:00.000Z', 80),
    lot('SPENT', '2023-05-01T00:00:00.000Z', 0, { amount_cents: 10, expires_at: '2024-01-01T00:00:00.000Z' }),
  ];

  it('given lots due at or before now when expired then their unspent remainder expires', () => {
    const result = expireDueLots(lots, NOW);
    expect(result.expired).toEqual([
      { lot_id: 'DUE', amount_cents: 100 },
      { lot_id: 'EXACT', amount_cents: 50 },
    ]);
    expect(result.lots.map((l) => [l.id, l.remaining_cents])).toEqual([
      ['DUE', 0],
      ['EXACT', 0],
      ['LATER', 70],
      ['NEVER', 80],
      ['SPENT', 0],
    ]);
  });

  it('given the result expired again when expired then nothing more expires (idempotent)', () => {
    const once = expireDueLots(lots, NOW);
    expect(expireDueLots(once.lots, NOW).expired).toEqual([]);
  });

  it('given lots when expired then the input is not mutated', () => {
    const snapshot = structuredClone(lots);
    expireDueLots(lots, NOW);
    expect(lots).toEqual(snapshot);
  });
});

describe('expiringWithin', () => {
  const lots = [
    lot('NOW', '2023-01-01T00:00:00.000Z', 1, { expires_at: NOW }), // not after now: excluded
    lot('SOON', '2023-01-01T00:00:00.000Z', 10, { expires_at: '2024-06-16T00:00:00.000Z' }),
    lot('EDGE', '2023-01-01T00:00:00.000Z', 100, { expires_at: '2024-07-15T00:00:00.000Z' }), // now + 30 d: included
    lot('AFTER', '2023-01-01T00:00:00.000Z', 1_000, { expires_at: '2024-07-15T00:00:00.001Z' }),
    lot('NEVER', '2023-01-01T00:00:00.000Z', 10_000),
    lot('SPENT', '2023-01-01T00:00:00.000Z', 5, { amount_cents: 50, expires_at: '2024-06-20T00:00:00.000Z' }),
  ];

  it('given lots when asked for the next 30 days then it sums the remainders expiring in (now, now + 30 d]', () => {
    expect(expiringWithin(lots, NOW, 30)).toBe(115);
  });

  it('given zero days when asked then nothing is expiring', () => {
    expect(expiringWithin(lots, NOW, 0)).toBe(0);
  });

  it('given invalid days when asked then it throws', () => {
    expect(() => expiringWithin(lots, NOW, -1)).toThrow(RangeError);
  });
});

describe('properties', () => {
  const lotsArb = fc
    .array(
      fc.record({
        earnedMs: fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2025, 0, 1) }),
        amount: fc.integer({ min: 0, max: 10_000 }),
        spent: fc.integer({ min: 0, max: 10_000 }),
        expiresInDays: fc.option(fc.integer({ min: -400, max: 400 })),
      }),
      { maxLength: 12 },
    )
    .map((specs) =>
      specs.map(
        (spec, index): Lot => ({
          id: `L${String(index).padStart(2, '0')}`,
          amount_cents: spec.amount,
          remaining_cents: Math.max(0, spec.amount - spec.spent),
          earned_at: new Date(spec.earnedMs).toISOString(),
          expires_at:
            spec.expiresInDays === null ? null : new Date(spec.earnedMs + spec.expiresInDays * 86_400_000).toISOString(),
        }),
      ),
    );
  const total = (lots: Lot[]): number => lots.reduce((sum, l) => sum + l.remaining_cents, 0);

  it('consume then restore round-trips to the original lots', () => {
    fc.assert(
      fc.property(lotsArb, fc.integer({ min: 0, max: 200_000 }), (lots, amount) => {
        const { lots: after, consumed } = consumeLots(lots, amount);
        expect(restoreLots(after, consumed)).toEqual(lots);
      }),
    );
  });

  it('consumption conserves points: consumed + shortfall = amount, remaining drops by consumed', () => {
    fc.assert(
      fc.property(lotsArb, fc.integer({ min: 0, max: 200_000 }), (lots, amount) => {
        const { lots: after, consumed, shortfall } = consumeLots(lots, amount);
        const taken = consumed.reduce((sum, c) => sum + c.amount_cents, 0);
        expect(taken + shortfall).toBe(amount);
        expect(total(lots) - total(after)).toBe(taken);
        expect(shortfall).toBe(Math.max(0, amount - total(lots)));
        expect(after.every((l) => l.remaining_cents >= 0 && l.remaining_cents <= l.amount_cents)).toBe(true);
      }),
    );
  });

  it('consumption is FIFO: a lot is only touched when every older lot is empty', () => {
    fc.assert(
      fc.property(lotsArb, fc.integer({ min: 0, max: 200_000 }), (lots, amount) => {
        const { lots: after } = consumeLots(lots, amount);
        const afterById = new Map(after.map((l) => [l.id, l]));
        const ordered = fifoOrder(lots);
        ordered.forEach((original, index) => {
          if (afterById.get(original.id)?.remaining_cents !== original.remaining_cents) {
            for (const older of ordered.slice(0, index)) {
              expect(afterById.get(older.id)?.remaining_cents).toBe(0);
            }
          }
        });
      }),
    );
  });

  it('two consumptions equal one of the combined amount', () => {
    fc.assert(
      fc.property(lotsArb, fc.integer({ min: 0, max: 50_000 }), fc.integer({ min: 0, max: 50_000 }), (lots, a, b) => {
        const once = consumeLots(lots, a + b);
        const twice = consumeLots(consumeLots(lots, a).lots, b);
        expect(twice.lots).toEqual(once.lots);
      }),
    );
  });

  it('expiry zeroes exactly the due lots and reports their remainders', () => {
    fc.assert(
      fc.property(lotsArb, fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2026, 0, 1) }), (lots, nowMs) => {
        const now = new Date(nowMs).toISOString();
        const { lots: after, expired } = expireDueLots(lots, now);
        const expiredTotal = expired.reduce((sum, e) => sum + e.amount_cents, 0);
        expect(total(lots) - total(after)).toBe(expiredTotal);
        for (const l of after) {
          if (l.expires_at !== null && Date.parse(l.expires_at) <= nowMs) expect(l.remaining_cents).toBe(0);
        }
        expect(expired.every((e) => e.amount_cents > 0)).toBe(true);
      }),
    );
  });
});
