import type { Tier } from '@loyalty/contracts';
import { assertNever } from './assert-never.guard';
import { floorDivBig, toSafeNumber } from './integer.math';
import { MS_PER_DAY, parseInstant, startOfYearUtc, toIso } from './utc-calendar.util';

/**
 * Where a tier's qualification window starts (inclusive), for an evaluation at `now`; null means
 * "since the beginning" (lifetime).
 *
 * - `lifetime`: null.
 * - `calendar_year`: 1 January 00:00:00.000Z of now's UTC year.
 * - `rolling_365`: now − 365 days.
 * - `custom`: now − `window_days` days (a rolling window). CHOICE: with `customAnchor` (e.g. the
 *   member's enrolment), the window is instead the fixed `window_days`-long period, counted from
 *   the anchor, that contains now: anchor + k × window_days days with k = floor((now − anchor) /
 *   window). `window_days` must be a positive integer for `custom`.
 */
export function tierWindowStart(tier: Tier, now: string, customAnchor?: string): string | null {
  const nowMs = parseInstant(now, 'now');
  const window = tier.window;
  switch (window) {
    case 'lifetime':
      return null;
    case 'calendar_year':
      return startOfYearUtc(now);
    case 'rolling_365':
      return toIso(nowMs - 365 * MS_PER_DAY);
    case 'custom': {
      const days = tier.window_days;
      if (days == null || !Number.isSafeInteger(days) || days <= 0) {
        throw new RangeError(`tier ${tier.name}: custom window requires a positive window_days`);
      }
      const windowMs = days * MS_PER_DAY;
      if (customAnchor === undefined) {
        return toIso(nowMs - windowMs);
      }
      const anchorMs = parseInstant(customAnchor, 'customAnchor');
      const periods = toSafeNumber(floorDivBig(BigInt(nowMs - anchorMs), BigInt(windowMs)), 'periods');
      return toIso(anchorMs + periods * windowMs);
    }
    default:
      return assertNever(window, 'tier window');
  }
}
