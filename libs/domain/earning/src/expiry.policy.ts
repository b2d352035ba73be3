import type { ExpiryPolicy } from '@loyalty/contracts';
import { assertNever } from './assert-never.guard';
import { assertNonNegativeSafeInteger } from './integer.math';
import { addDaysUtc, addMonthsUtc, endOfPeriodUtc, parseInstant } from './utc-calendar.util';

/**
 * When points earned at `earnedAt` expire (decisions §5), or null when they do not expire at a
 * date known now.
 *
 * - A rule's `expiry_months` (non-null) overrides the programme policy: earnedAt + that many
 *   calendar months in UTC, time of day kept, day clamped to the month's end.
 * - `fixed_days`: earnedAt + days × 24 h.
 * - `end_of_period`: 23:59:59.999Z on the last day of the UTC month/quarter/year containing
 *   earnedAt.
 * - `inactivity`: null here; the date moves with the member's activity (`inactivityExpiryAt`).
 * - `none`: null.
 *
 * A policy missing its parameter (`fixed_days` without `days`, `end_of_period` without `period`)
 * is a configuration error and throws a RangeError rather than silently never expiring.
 */
export function computeExpiresAt(
  policy: ExpiryPolicy,
  ruleExpiryMonths: number | null,
  earnedAt: string,
): string | null {
  parseInstant(earnedAt, 'earnedAt');
  if (ruleExpiryMonths != null) {
    return addMonthsUtc(earnedAt, assertNonNegativeSafeInteger(ruleExpiryMonths, 'expiry_months'));
  }
  const kind = policy.policy;
  switch (kind) {
    case 'none':
    case 'inactivity':
      return null;
    case 'fixed_days':
      return addDaysUtc(earnedAt, requireDays(policy.days, 'fixed_days'));
    case 'end_of_period': {
      const period = policy.period;
      if (period == null) {
        throw new RangeError('expiry policy end_of_period requires period (month, quarter or year)');
      }
      return endOfPeriodUtc(earnedAt, period);
    }
    default:
      return assertNever(kind, 'expiry policy');
  }
}

/** Under the `inactivity` policy: points expire `days` days after the member's last activity. */
export function inactivityExpiryAt(lastActivityAt: string, days: number): string {
  return addDaysUtc(lastActivityAt, requireDays(days, 'inactivity'));
}

function requireDays(days: number | null | undefined, policy: string): number {
  if (days == null) {
    throw new RangeError(`expiry policy ${policy} requires days`);
  }
  return assertNonNegativeSafeInteger(days, `expiry ${policy} days`);
}
