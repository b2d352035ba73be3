import { sumSafe } from './integer.math';
import type { TierMetrics } from './tier.evaluator';
import { parseInstant } from './utc-calendar.util';

export interface TierActivity {
  at: string;
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
  const inWindow = activity.filter((entry) => {
    const atMs = parseInstant(entry.at, 'activity at');
    return atMs >= fromMs && atMs <= toMs;
  });
  return {
    spend: sumSafe(inWindow.map((entry) => entry.spend), 'activity spend'),
    points: sumSafe(inWindow.map((entry) => entry.points), 'activity points'),
    orders: sumSafe(inWindow.map((entry) => entry.orders), 'activity orders'),
  };
}
