import { assertNonNegativeSafeInteger, assertSafeInteger, floorDivBig, toSafeNumber } from './integer.math';

/**
 * The points a refund takes back from an earn (decisions §5). The cumulative take-back is
 * floor(earned × min(cumulativeRefunded, gross) / gross); this returns that minus what earlier
 * refunds already took, never negative. Once the refunds reach (or exceed) gross — or when gross
 * is 0 — the cumulative take-back is the whole earned amount, so the result is the remainder.
 * Exact: the product is computed in BigInt.
 */
export function refundTakeBack(
  earnedCents: number,
  cumulativeRefundedCents: number,
  grossCents: number,
  alreadyTakenBackCents: number,
): number {
  assertNonNegativeSafeInteger(earnedCents, 'earnedCents');
  assertNonNegativeSafeInteger(cumulativeRefundedCents, 'cumulativeRefundedCents');
  assertNonNegativeSafeInteger(grossCents, 'grossCents');
  assertNonNegativeSafeInteger(alreadyTakenBackCents, 'alreadyTakenBackCents');

  const cumulativeTarget =
    grossCents === 0 || cumulativeRefundedCents >= grossCents
      ? earnedCents
      : toSafeNumber(
          floorDivBig(BigInt(earnedCents) * BigInt(cumulativeRefundedCents), BigInt(grossCents)),
          'take-back',
        );
  return Math.max(0, cumulativeTarget - alreadyTakenBackCents);
}

export interface TakeBackSplit {
  fromPending: number;
  fromPosted: number;
}

/**
 * Splits a take-back between the pending and the posted (available) balance, pending first.
 * `fromPending` = min(amount, pending); the rest comes from posted even when that exceeds
 * `postedCents`: the spec lets the balance go negative when the points were already spent.
 * Negative pending counts as 0. `postedCents` is validated but never limits the split.
 */
export function splitTakeBack(amount: number, pendingCents: number, postedCents: number): TakeBackSplit {
  assertNonNegativeSafeInteger(amount, 'amount');
  assertSafeInteger(pendingCents, 'pendingCents');
  assertSafeInteger(postedCents, 'postedCents');
  const fromPending = Math.min(amount, Math.max(0, pendingCents));
  return { fromPending, fromPosted: amount - fromPending };
}
