import fc from 'fast-check';
import { BPS_SCALE, applyBps, multiplierToBasisPoints, toBasisPoints } from './basis-points.math';

describe('toBasisPoints', () => {
  it.each([
    [0, 0],
    [1, 100],
    [2.5, 250],
    [0.01, 1],
    [100, 10_000],
    [0.1, 10],
    [0.07, 7], // 0.07 * 100 = 7.000000000000001 in floating point
    [1.15, 115], // 1.15 * 100 = 114.99999999999999 in floating point
    [33.33, 3333],
  ])('given %p %% when converted then it is %p bps', (pct, bps) => {
    expect(toBasisPoints(pct)).toBe(bps);
  });

  it('given sub-basis-point precision when converted then it rounds to the nearest bp', () => {
    expect(toBasisPoints(2.504)).toBe(250);
    expect(toBasisPoints(2.506)).toBe(251);
  });

  it.each([[-1], [Number.NaN], [Number.POSITIVE_INFINITY], [1e300]])(
    'given an invalid rate %p when converted then it throws a RangeError',
    (pct) => {
      expect(() => toBasisPoints(pct)).toThrow(RangeError);
    },
  );

  it('property: every two-decimal percentage converts exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), (hundredths) => {
        expect(toBasisPoints(hundredths / 100)).toBe(hundredths);
      }),
    );
  });
});

describe('multiplierToBasisPoints', () => {
  it.each([
    [1, 10_000],
    [1.5, 15_000],
    [1.25, 12_500],
    [2, 20_000],
    [0, 0],
    [1.1, 11_000], // 1.1 * 10000 = 11000.000000000002
    [1.0001, 10_001],
  ])('given ×%p when converted then it is %p bps', (multiplier, bps) => {
    expect(multiplierToBasisPoints(multiplier)).toBe(bps);
  });

  it.each([[-0.5], [Number.NaN], [Number.NEGATIVE_INFINITY]])(
    'given an invalid multiplier %p when converted then it throws',
    (multiplier) => {
      expect(() => multiplierToBasisPoints(multiplier)).toThrow(RangeError);
    },
  );

  it('property: every four-decimal multiplier converts exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), (tenThousandths) => {
        expect(multiplierToBasisPoints(tenThousandths / 10_000)).toBe(tenThousandths);
      }),
    );
  });
});

describe('applyBps', () => {
  it('given 10000 cents at 250 bps when applied then it is 250', () => {
    expect(applyBps(10_000, 250)).toBe(250);
  });

  it('given a fractional result when applied then it floors', () => {
    expect(applyBps(999, 100)).toBe(9); // 9.99
    expect(applyBps(1, 9_999)).toBe(0);
  });

  it('given BPS_SCALE when applied then it is the identity', () => {
    expect(applyBps(123_456, BPS_SCALE)).toBe(123_456);
  });

  it('given a product beyond 2^53 when applied then it is still exact', () => {
    // 9007199254740991 * 10000 overflows double precision; BigInt keeps it exact.
    expect(applyBps(Number.MAX_SAFE_INTEGER, 10_000)).toBe(Number.MAX_SAFE_INTEGER);
    expect(applyBps(Number.MAX_SAFE_INTEGER, 9_999)).toBe(9_006_298_534_815_516);
  });

  it('given a result beyond the safe range when applied then it throws', () => {
    expect(() => applyBps(Number.MAX_SAFE_INTEGER, 20_000)).toThrow(RangeError);
  });

  it('given a non-integer input when applied then it throws', () => {
    expect(() => applyBps(10.5, 100)).toThrow(RangeError);
    expect(() => applyBps(10, 1.5)).toThrow(RangeError);
  });

  it('property: result equals the exact BigInt floor and never exceeds amount × bps / 10000', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        fc.integer({ min: 0, max: 10_000 }),
        (amount, bps) => {
          const result = applyBps(amount, bps);
          expect(BigInt(result)).toBe((BigInt(amount) * BigInt(bps)) / 10_000n);
          expect(BigInt(result) * 10_000n <= BigInt(amount) * BigInt(bps)).toBe(true);
          expect(Number.isSafeInteger(result)).toBe(true);
        },
      ),
    );
  });
});
