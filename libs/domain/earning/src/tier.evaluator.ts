import type { Tier, TierMetric } from '@loyalty/contracts';
import { assertNever } from './assert-never.guard';

/** A member's tier metrics over a tier's window (decisions §5). */
export interface TierMetrics {
  /** Paid gross minus refunds, minor units. */
  spend: number;
  /** Points earned, minor units. */
  points: number;
  /** Paid, not cancelled orders. */
  orders: number;
}

export interface TierCriterion {
  metric: TierMetric;
  threshold: number;
}

/** The tier's criteria; an empty list means the single `threshold_type`/`threshold_value`. */
export function tierCriteria(tier: Tier): TierCriterion[] {
  return tier.criteria.length > 0
    ? tier.criteria
    : [{ metric: tier.threshold_type, threshold: tier.threshold_value }];
}

export function metricValue(metrics: TierMetrics, metric: TierMetric): number {
  switch (metric) {
    case 'spend':
      return metrics.spend;
    case 'points':
      return metrics.points;
    case 'orders':
      return metrics.orders;
    default:
      return assertNever(metric, 'tier metric');
  }
}

/** Whether the metrics meet the tier: each criterion is met when metric >= threshold. */
export function qualifies(tier: Tier, metrics: TierMetrics): boolean {
  const met = (criterion: TierCriterion): boolean =>
    metricValue(metrics, criterion.metric) >= criterion.threshold;
  const criteria = tierCriteria(tier);
  const mode = tier.criteria_mode;
  switch (mode) {
    case 'all':
      return criteria.every(met);
    case 'any':
      return criteria.some(met);
    default:
      return assertNever(mode, 'criteria_mode');
  }
}

/**
 * The highest-level tier the member qualifies for, or null when none. `metricsFor` supplies the
 * metrics over each tier's own window. Two qualifying tiers of the same level: the first listed
 * wins.
 */
export function evaluateTier(
  tiers: readonly Tier[],
  metricsFor: (tier: Tier) => TierMetrics,
): Tier | null {
  let best: Tier | null = null;
  for (const tier of tiers) {
    if ((best === null || tier.level > best.level) && qualifies(tier, metricsFor(tier))) {
      best = tier;
    }
  }
  return best;
}
