import fc from 'fast-check';
import { refundTakeBack, splitTakeBack } from './refund-take-back.policy';

describe('refundTakeBack', () => {
  it('given a partial refund when computed then it takes back a proportional floored share', () => {
    // earned 100 on gross 10 000; refund 3 333 → floor(33.33) = 33
    expect(refundTakeBack(100, 3_333, 10_000, 0)).toBe(33);
  });

  it('given cumulative partial refunds when computed then each takes the difference of cumulative floors', () => {
    const first = refundTakeBack(100, 3_333, 10_000, 0); // 33
    const second = refundTakeBack(100, 6_666, 10_000, first); // floor(66.66) = 66 → 33
    const third = refundTakeBack(100, 10_000, 10_000, first + second); // 100 → 34
    expect([first, second, third]).toEqual([33, 33, 34]);
  });

  it('given a full refund when computed then it takes back everything not already taken', () => {
    expect(refundTakeBack(100, 10_000, 10_000, 0)).toBe(100);
    expect(refundTakeBack(100, 10_000, 10_000, 40)).toBe(60);
  });

  it('given refunds beyond gross when computed then it takes back the remainder and nothing more', () => {
    expect(refundTakeBack(100, 15_000, 10_000, 0)).toBe(100);
    expect(refundTakeBack(100, 15_000, 10_000, 70)).toBe(30);
    expect(refundTakeBack(100, 20_000, 10_000, 100)).toBe(0);
  });

  it('given a zero gross when computed then everything earned is taken back', () => {
    expect(refundTakeBack(50, 0, 0, 0)).toBe(50);
    expect(refundTakeBack(50, 10, 0, 20)).toBe(30);
  });

  it('given a zero refund when computed then nothing is taken back', () => {
    expect(refundTakeBack(100, 0, 10_000, 0)).toBe(0);
  });

  it('given more already taken than the target when computed then it is never negative', () => {
    expect(refundTakeBack(100, 1_000, 10_000, 50)).toBe(0);
  });

  it('given amounts whose product exceeds 2^53 when computed then it is exact', () => {
    const earned = 2 ** 40;
    const gross = 2 ** 45 + 7;
    const refunded = 2 ** 44 + 3;
    const expected = Number((BigInt(earned) * BigInt(refunded)) / BigInt(gross));
    expect(refundTakeBack(earned, refunded, gross, 0)).toBe(expected);
  });

  it('given invalid inputs when computed then it throws', () => {
    expect(() => refundTakeBack(-1, 0, 100, 0)).toThrow(RangeError);
    expect(() => refundTakeBack(1, -1, 100, 0)).toThrow(RangeError);
    expect(() => refundTakeBack(1, 1, -100, 0)).toThrow(RangeError);
    expect(() => refundTakeBack(1, 1, 100, -1)).toThrow(RangeError);
    expect(() => refundTakeBack(1.5, 1, 100, 0)).toThrow(RangeError);
  });

  describe('properties', () => {
    /** A gross, an earned amount and a sequence of partial refund amounts. */
    const scenario = fc.record({
      gross: fc.integer({ min: 0, max: 10_000_000 }),
      earned: fc.integer({ min: 0, max: 1_000_000 }),
      refunds: fc.array(fc.integer({ min: 0, max: 5_000_000 }), { maxLength: 12 }),
    });

    function replay(gross: number, earned: number, refunds: number[]): { taken: number[]; cumulative: number } {
      let cumulative = 0;
      let already = 0;
      const taken: number[] = [];
      for (const refund of refunds) {
        cumulative += refund;
        const take = refundTakeBack(earned, cumulative, gross, already);
        taken.push(take);
        already += take;
      }
      return { taken, cumulative };
    }

    it('the sum of take-backs over any sequence of partial refunds never exceeds earned', () => {
      fc.assert(
        fc.property(scenario, ({ gross, earned, refunds }) => {
          const { taken } = replay(gross, earned, refunds);
          expect(taken.every((take) => take >= 0 && Number.isSafeInteger(take))).toBe(true);
          expect(taken.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(earned);
        }),
      );
    });

    it('the sum equals earned once the refunds reach gross', () => {
      fc.assert(
        fc.property(scenario, ({ gross, earned, refunds }) => {
          const { taken } = replay(gross, earned, [...refunds, gross]);
          expect(taken.reduce((a, b) => a + b, 0)).toBe(earned);
        }),
      );
    });

    it('the running total always equals floor(earned × min(cumulative, gross) / gross)', () => {
      fc.assert(
        fc.property(scenario, ({ gross, earned, refunds }) => {
          fc.pre(gross > 0);
          let cumulative = 0;
          let already = 0;
          for (const refund of refunds) {
            cumulative += refund;
            already += refundTakeBack(earned, cumulative, gross, already);
            expect(already).toBe(Math.floor((earned * Math.min(cumulative, gross)) / gross));
          }
        }),
      );
    });

    it('splitting a refund in two takes back the same total as refunding it at once', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 10_000_000 }),
          fc.integer({ min: 0, max: 1_000_000 }),
          fc.integer({ min: 0, max: 10_000_000 }),
          fc.integer({ min: 0, max: 10_000_000 }),
          (gross, earned, a, b) => {
            const first = refundTakeBack(earned, a, gross, 0);
            const second = refundTakeBack(earned, a + b, gross, first);
            expect(first + second).toBe(refundTakeBack(earned, a + b, gross, 0));
          },
        ),
      );
    });
  });
});

describe('splitTakeBack', () => {
  it('given enough pending when split then it all comes from pending', () => {
    expect(splitTakeBack(30, 50, 100)).toEqual({ fromPending: 30, fromPosted: 0 });
  });

  it('given some pending when split then pending is used first and the rest comes from posted', () => {
    expect(splitTakeBack(80, 50, 100)).toEqual({ fromPending: 50, fromPosted: 30 });
  });

  it('given no pending when split then it all comes from posted', () => {
    expect(splitTakeBack(80, 0, 100)).toEqual({ fromPending: 0, fromPosted: 80 });
  });

  it('given more than pending + posted (points already spent) when split then posted may go negative', () => {
    expect(splitTakeBack(80, 10, 20)).toEqual({ fromPending: 10, fromPosted: 70 });
    expect(splitTakeBack(80, 10, -5)).toEqual({ fromPending: 10, fromPosted: 70 });
  });

  it('given a negative pending when split then it counts as nothing pending', () => {
    expect(splitTakeBack(80, -10, 100)).toEqual({ fromPending: 0, fromPosted: 80 });
  });

  it('given a zero amount when split then nothing moves', () => {
    expect(splitTakeBack(0, 50, 100)).toEqual({ fromPending: 0, fromPosted: 0 });
  });

  it('given invalid inputs when split then it throws', () => {
    expect(() => splitTakeBack(-1, 0, 0)).toThrow(RangeError);
    expect(() => splitTakeBack(1, 0.5, 0)).toThrow(RangeError);
    expect(() => splitTakeBack(1, 0, Number.NaN)).toThrow(RangeError);
  });

  it('property: the parts are non-negative, sum to the amount, and pending is exhausted first', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: -1_000, max: 1_000_000 }),
        fc.integer({ min: -1_000_000, max: 1_000_000 }),
        (amount, pending, posted) => {
          const { fromPending, fromPosted } = splitTakeBack(amount, pending, posted);
          expect(fromPending + fromPosted).toBe(amount);
          expect(fromPending).toBeGreaterThanOrEqual(0);
          expect(fromPosted).toBeGreaterThanOrEqual(0);
          expect(fromPending).toBeLessThanOrEqual(Math.max(0, pending));
          if (fromPosted > 0) expect(fromPending).toBe(Math.max(0, pending));
        },
      ),
    );
  });
});
