import fc from 'fast-check';
import {
  assertNonNegativeSafeInteger,
  assertSafeInteger,
  floorDivBig,
  mulDivFloor,
  sumSafe,
  toSafeNumber,
} from './integer.math';

describe('integer math', () => {
  it('given safe integers when asserted then they pass through', () => {
    expect(assertSafeInteger(-5, 'x')).toBe(-5);
    expect(assertNonNegativeSafeInteger(0, 'x')).toBe(0);
  });

  it.each([[1.5], [Number.NaN], [2 ** 53], [Number.POSITIVE_INFINITY]])(
    'given %p when asserted safe then it throws a RangeError naming the value',
    (value) => {
      expect(() => assertSafeInteger(value, 'thing')).toThrow(/thing must be a safe integer/);
    },
  );

  it('given a negative value when asserted non-negative then it throws', () => {
    expect(() => assertNonNegativeSafeInteger(-1, 'thing')).toThrow(/must not be negative/);
  });

  it('given negative dividends when floor-divided then it rounds toward −∞', () => {
    expect(floorDivBig(-7n, 2n)).toBe(-4n);
    expect(floorDivBig(7n, -2n)).toBe(-4n);
    expect(floorDivBig(-7n, -2n)).toBe(3n);
    expect(floorDivBig(-6n, 2n)).toBe(-3n);
    expect(floorDivBig(7n, 2n)).toBe(3n);
    expect(() => floorDivBig(1n, 0n)).toThrow(RangeError);
  });

  it('property: floorDivBig matches Math.floor on small integers', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1_000_000, max: 1_000_000 }),
        fc.integer({ min: -1_000, max: 1_000 }).filter((d) => d !== 0),
        (a, b) => {
          expect(floorDivBig(BigInt(a), BigInt(b))).toBe(BigInt(Math.floor(a / b)));
        },
      ),
    );
  });

  it('given values outside the safe range when converted then it throws', () => {
    expect(toSafeNumber(BigInt(Number.MAX_SAFE_INTEGER), 'x')).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => toSafeNumber(BigInt(Number.MAX_SAFE_INTEGER) + 1n, 'x')).toThrow(RangeError);
    expect(() => toSafeNumber(BigInt(Number.MIN_SAFE_INTEGER) - 1n, 'x')).toThrow(RangeError);
  });

  it('given large operands when mulDivFloor then the result is exact', () => {
    expect(mulDivFloor(Number.MAX_SAFE_INTEGER, 3, 3)).toBe(Number.MAX_SAFE_INTEGER);
    expect(mulDivFloor(10, 1, 3)).toBe(3);
  });

  it('given terms whose sum overflows when summed then it throws', () => {
    expect(sumSafe([1, 2, 3])).toBe(6);
    expect(sumSafe([])).toBe(0);
    expect(() => sumSafe([Number.MAX_SAFE_INTEGER, 1])).toThrow(RangeError);
    expect(() => sumSafe([0.5])).toThrow(RangeError);
  });
});
