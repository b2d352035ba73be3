import { assertSafeInteger } from './integer.math';
import type { TierMetrics } from './tier.evaluator';
import { parseInstant } from './utc-calendar.util';

export interface TierActivity {
  at: string;
  /** `at` as epoch ms, when the caller has parsed it already */
  ms?: number;
  /** May be negative (a refund reduces spend). */
  spend: number;
  points: number;
  orders: number;
}

/**
 * Sums activity whose `at` lies in the window [from, to] — both ends inclusive; a null `from`
 * means no lower bound (lifetime).
 */
export function sumActivityInWindow(
  activity: readonly TierActivity[],
  from: string | null,
  to: string,
): TierMetrics {
  const fromMs = from === null ? Number.NEGATIVE_INFINITY : parseInstant(from, 'from');
  const toMs = parseInstant(to, 'to');
  let spend = 0;
  let points = 0;
  let orders = 0;
  for (const entry of activity) {
    const atMs = entry.ms ?? parseInstant(entry.at, 'activity at');
    if (atMs < fromMs || atMs > toMs) continue;
    spend += entry.spend;
    points += entry.points;
    orders += entry.orders;
  }
  return {
    spend: assertSafeInteger(spend, 'activity spend'),
    points: assertSafeInteger(points, 'activity points'),
    orders: assertSafeInteger(orders, 'activity orders'),
  };
}
