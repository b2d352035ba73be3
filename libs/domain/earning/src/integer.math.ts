/**
 * Exact integer arithmetic helpers. Money and points are integers in minor units; every result
 * that leaves this library is checked with `Number.isSafeInteger`. Products that may exceed 2^53
 * are computed with BigInt.
 */

/** Throws a RangeError unless `value` is a safe integer. Returns it for chaining. */
export function assertSafeInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value)) {
    throw new RangeError(`${name} must be a safe integer, got ${String(value)}`);
  }
  return value;
}

/** Throws a RangeError unless `value` is a non-negative safe integer. */
export function assertNonNegativeSafeInteger(value: number, name: string): number {
  assertSafeInteger(value, name);
  if (value < 0) {
    throw new RangeError(`${name} must not be negative, got ${value}`);
  }
  return value;
}

/** Floor division on BigInt (BigInt `/` truncates toward zero). `divisor` must not be 0. */
export function floorDivBig(dividend: bigint, divisor: bigint): bigint {
  if (divisor === 0n) {
    throw new RangeError('division by zero');
  }
  const quotient = dividend / divisor;
  const remainder = dividend % divisor;
  // Truncation rounded toward zero; step down when the exact quotient was negative and inexact.
  return remainder !== 0n && (remainder < 0n) !== (divisor < 0n) ? quotient - 1n : quotient;
}

/** Converts a BigInt result back to a number, refusing anything outside the safe range. */
export function toSafeNumber(value: bigint, name: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new RangeError(`${name} exceeds the safe integer range: ${value.toString()}`);
  }
  return Number(value);
}

/** floor(a × b / c) computed exactly (BigInt), for safe-integer inputs and c ≠ 0. */
export function mulDivFloor(a: number, b: number, c: number, name = 'result'): number {
  assertSafeInteger(a, `${name}: multiplicand`);
  assertSafeInteger(b, `${name}: multiplier`);
  assertSafeInteger(c, `${name}: divisor`);
  return toSafeNumber(floorDivBig(BigInt(a) * BigInt(b), BigInt(c)), name);
}

/** Sum of safe integers, checked for overflow. */
export function sumSafe(values: readonly number[], name = 'sum'): number {
  let total = 0n;
  for (const value of values) {
    total += BigInt(assertSafeInteger(value, `${name} term`));
  }
  return toSafeNumber(total, name);
}
