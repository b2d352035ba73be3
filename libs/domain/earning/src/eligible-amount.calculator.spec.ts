import fc from 'fast-check';
import type { OrderLine } from './earn.types';
import { eligibleAmount, hasLines, taggedAmount } from './eligible-amount.calculator';

describe('eligibleAmount', () => {
  it('given no lines when computed then it is the gross', () => {
    expect(eligibleAmount(10_000)).toBe(10_000);
    expect(eligibleAmount(10_000, null)).toBe(10_000);
    expect(eligibleAmount(10_000, [])).toBe(10_000); // an empty list counts as "no lines"
  });

  it('given lines summing below gross when computed then it is the lines total', () => {
    expect(eligibleAmount(10_000, [{ amount_cents: 3_000 }, { amount_cents: 4_000, quantity: 2 }])).toBe(7_000);
  });

  it('given lines summing above gross (e.g. voucher applied) when computed then it is the gross', () => {
    expect(eligibleAmount(5_000, [{ amount_cents: 3_000 }, { amount_cents: 4_000 }])).toBe(5_000);
  });

  it('given gift-card lines when computed then they are excluded', () => {
    expect(
      eligibleAmount(10_000, [{ amount_cents: 6_000 }, { amount_cents: 4_000, gift_card: true }]),
    ).toBe(6_000);
    expect(eligibleAmount(10_000, [{ amount_cents: 10_000, gift_card: true }])).toBe(0);
  });

  it('given quantity when computed then amount_cents is already the line total', () => {
    expect(eligibleAmount(10_000, [{ amount_cents: 2_000, quantity: 5 }])).toBe(2_000);
  });

  it('given a negative (discount) line when computed then it reduces the total, floored at 0', () => {
    expect(eligibleAmount(10_000, [{ amount_cents: 6_000 }, { amount_cents: -1_000 }])).toBe(5_000);
    expect(eligibleAmount(10_000, [{ amount_cents: -1_000 }])).toBe(0);
  });

  it('given invalid amounts when computed then it throws', () => {
    expect(() => eligibleAmount(-1)).toThrow(RangeError);
    expect(() => eligibleAmount(10.5)).toThrow(RangeError);
    expect(() => eligibleAmount(100, [{ amount_cents: 1.5 }])).toThrow(/lines\[0\]\.amount_cents/);
  });

  it('property: 0 <= eligible <= gross', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.array(
          fc.record({ amount_cents: fc.integer({ min: -1_000, max: 1_000_000 }), gift_card: fc.boolean() }),
          { maxLength: 20 },
        ),
        (gross, lines) => {
          const eligible = eligibleAmount(gross, lines);
          expect(eligible).toBeGreaterThanOrEqual(0);
          expect(eligible).toBeLessThanOrEqual(gross);
        },
      ),
    );
  });
});

describe('hasLines', () => {
  it('distinguishes missing/empty from present lines', () => {
    expect(hasLines(undefined)).toBe(false);
    expect(hasLines(null)).toBe(false);
    expect(hasLines([])).toBe(false);
    expect(hasLines([{ amount_cents: 0 }])).toBe(true);
  });
});

describe('taggedAmount', () => {
  const lines: OrderLine[] = [
    { amount_cents: 2_000, tags: ['shoes', 'sale'] },
    { amount_cents: 3_000, tags: ['shirts'] },
    { amount_cents: 5_000, tags: ['shoes'], gift_card: true },
    { amount_cents: 1_000 },
    { amount_cents: 500, tags: null },
  ];

  it('given lines whose tags intersect the rule tags when summed then only those non-gift-card lines count', () => {
    expect(taggedAmount(lines, ['shoes'], 100_000)).toBe(2_000);
    expect(taggedAmount(lines, ['shoes', 'shirts'], 100_000)).toBe(5_000);
    expect(taggedAmount(lines, ['sale', 'shoes'], 100_000)).toBe(2_000); // a line counts once
  });

  it('given tags differing in case when matched then they do not match (exact match)', () => {
    expect(taggedAmount(lines, ['Shoes'], 100_000)).toBe(0);
  });

  it('given no lines or no rule tags when summed then it is 0', () => {
    expect(taggedAmount(null, ['shoes'], 100_000)).toBe(0);
    expect(taggedAmount([], ['shoes'], 100_000)).toBe(0);
    expect(taggedAmount(lines, null, 100_000)).toBe(0);
    expect(taggedAmount(lines, [], 100_000)).toBe(0);
  });

  it('given a tagged sum above the eligible amount when summed then it is capped at eligible', () => {
    expect(taggedAmount(lines, ['shoes', 'shirts'], 4_000)).toBe(4_000);
  });
});
