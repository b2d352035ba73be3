/**
 * UTC calendar arithmetic on ISO 8601 instants. Pure: no clock is read; every instant arrives as
 * an argument. Results are rendered with `toISOString()` (`YYYY-MM-DDThh:mm:ss.sssZ`).
 */
import { assertNever } from './assert-never.guard';
import { assertNonNegativeSafeInteger, assertSafeInteger } from './integer.math';

export const MS_PER_DAY = 86_400_000;

/**
 * Accepted forms: a date (`2024-02-29`, read as UTC midnight) or a date-time that carries an
 * explicit offset (`Z` or `±hh:mm`). A date-time without an offset is refused, because
 * `Date.parse` would read it in the host's local zone and make results machine-dependent.
 */
const ISO_INSTANT =
  /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/** Two ASCII digits at `i` as a number (the pattern has checked they are digits). */
const twoDigits = (s: string, i: number): number => (s.charCodeAt(i) - 48) * 10 + (s.charCodeAt(i + 1) - 48);

/** The instant parsed last: a fold meets the same instant several times in a row (an order's spend, its earn, its entry). */
let lastIso = '1970-01-01T00:00:00.000Z';
let lastMs = 0;

/** Parses an ISO 8601 instant to epoch milliseconds; throws RangeError when it is not one. */
export function parseInstant(iso: string, name = 'instant'): number {
  if (iso === lastIso) return lastMs;
  if (typeof iso !== 'string' || !ISO_INSTANT.test(iso)) {
    throw new RangeError(`${name} must be an ISO 8601 instant with a UTC offset, got ${String(iso)}`);
  }
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) {
    throw new RangeError(`${name} is not a valid date: ${iso}`);
  }
  // Date.parse rolls impossible days over (2023-02-30 → 2023-03-02); refuse them instead. Every
  // month has day 28 (no calendar needed below it).
  const month = twoDigits(iso, 5);
  const day = twoDigits(iso, 8);
  if (month < 1 || month > 12 || day < 1 || (day > 28 && day > daysInMonthUtc(Number(iso.slice(0, 4)), month - 1))) {
    throw new RangeError(`${name} is not a valid date: ${iso}`);
  }
  lastIso = iso;
  lastMs = ms;
  return ms;
}

/** Renders epoch milliseconds as `YYYY-MM-DDThh:mm:ss.sssZ`. */
export function toIso(ms: number): string {
  assertSafeInteger(ms, 'epoch milliseconds');
  const date = new Date(ms);
  if (Number.isNaN(date.getTime())) {
    throw new RangeError(`epoch milliseconds out of the representable range: ${ms}`);
  }
  return date.toISOString();
}

/** Days in a month (monthIndex 0–11) of a UTC year, leap years included. */
export function daysInMonthUtc(year: number, monthIndex: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, monthIndex + 1, 0); // day 0 = last day of the previous month
  return date.getUTCDate();
}

/** Adds whole days (24 h, UTC has no DST) to an instant. `days` may be negative. */
export function addDaysUtc(iso: string, days: number): string {
  assertSafeInteger(days, 'days');
  return toIso(parseInstant(iso) + days * MS_PER_DAY);
}

/**
 * Adds calendar months in UTC, keeping the time of day and clamping the day to the target
 * month's last day: 2024-01-31 + 1 month = 2024-02-29; 2023-01-31 + 1 month = 2023-02-28.
 */
export function addMonthsUtc(iso: string, months: number): string {
  assertNonNegativeSafeInteger(months, 'months');
  const date = new Date(parseInstant(iso));
  const totalMonths = date.getUTCFullYear() * 12 + date.getUTCMonth() + months;
  const year = Math.floor(totalMonths / 12);
  const monthIndex = totalMonths - year * 12;
  const day = Math.min(date.getUTCDate(), daysInMonthUtc(year, monthIndex));
  // setUTCFullYear (unlike Date.UTC) does not map years 0–99 to 1900–1999.
  const result = new Date(0);
  result.setUTCFullYear(year, monthIndex, day);
  result.setUTCHours(
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds(),
    date.getUTCMilliseconds(),
  );
  return toIso(result.getTime());
}

/** 00:00:00.000Z on 1 January of the instant's UTC year. */
export function startOfYearUtc(iso: string): string {
  const year = new Date(parseInstant(iso)).getUTCFullYear();
  const date = new Date(0);
  date.setUTCFullYear(year, 0, 1);
  return toIso(date.getTime());
}

/**
 * The last instant (23:59:59.999Z) of the UTC calendar period — month, quarter or year — that
 * contains the instant.
 */
export function endOfPeriodUtc(iso: string, period: 'month' | 'quarter' | 'year'): string {
  const date = new Date(parseInstant(iso));
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  let lastMonthIndex: number;
  switch (period) {
    case 'month':
      lastMonthIndex = month;
      break;
    case 'quarter':
      lastMonthIndex = Math.floor(month / 3) * 3 + 2;
      break;
    case 'year':
      lastMonthIndex = 11;
      break;
    default:
      return assertNever(period, 'period');
  }
  // First instant of the following month, minus one millisecond.
  const next = new Date(0);
  next.setUTCFullYear(year, lastMonthIndex + 1, 1);
  return toIso(next.getTime() - 1);
}
