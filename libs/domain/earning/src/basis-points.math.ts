import { assertSafeInteger, mulDivFloor } from './integer.math';

/** 1 basis point = 1/10000. 100 % = 10000 bps; a ×1.0 multiplier = 10000 bps. */
export const BPS_SCALE = 10_000;

function finiteNonNegative(value: number, name: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new RangeError(`${name} must be a finite number, got ${String(value)}`);
  }
  if (value < 0) {
    throw new RangeError(`${name} must not be negative, got ${value}`);
  }
  return value;
}

/**
 * Converts a percentage (`earn_rate_pct`, e.g. 2.5 meaning 2.5 %) to integer basis points (250).
 * This is the only place a float rate is touched: it is rounded once, here, at the boundary.
 * Sub-basis-point precision (e.g. 2.505 %) is rounded to the nearest basis point.
 */
export function toBasisPoints(pct: number): number {
  const bps = Math.round(finiteNonNegative(pct, 'earn_rate_pct') * 100);
  return assertSafeInteger(bps, 'basis points');
}

/**
 * Converts a multiplier (tier `earn_multiplier`, e.g. 1.5) to integer basis points (15000).
 * Rounded once, here, at the boundary.
 */
export function multiplierToBasisPoints(multiplier: number): number {
  const bps = Math.round(finiteNonNegative(multiplier, 'multiplier') * BPS_SCALE);
  return assertSafeInteger(bps, 'multiplier basis points');
}

/** floor(amount × bps / 10000), exact (BigInt intermediate), result checked to be a safe integer. */
export function applyBps(amount: number, bps: number): number {
  return mulDivFloor(amount, bps, BPS_SCALE, 'applyBps');
}
