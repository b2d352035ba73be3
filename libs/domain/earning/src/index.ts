/**
 * @loyalty/domain-earning — pure earning domain: rules → earn lines, refunds, expiry, FIFO lots,
 * tiers. No I/O, no clock, no randomness; integers in minor units throughout.
 */
export type { EarnInput, EarnLine, OrderLine } from './earn.types';
export { computeEarnings } from './earnings.calculator';
export { signupBonus } from './signup-bonus.calculator';
export { toEarnLine } from './earn-line.mapper';
export { eligibleAmount, taggedAmount } from './eligible-amount.calculator';
export { campaignMode, isActiveAt, remainingBudget } from './campaign-window.policy';
export type { CampaignMode } from './campaign-window.policy';

export { BPS_SCALE, applyBps, multiplierToBasisPoints, toBasisPoints } from './basis-points.math';

export { refundTakeBack, splitTakeBack } from './refund-take-back.policy';
export type { TakeBackSplit } from './refund-take-back.policy';

export { computeExpiresAt, inactivityExpiryAt } from './expiry.policy';


export { evaluateTier, metricValue, qualifies, tierCriteria } from './tier.evaluator';
export type { TierCriterion, TierMetrics } from './tier.evaluator';
export { tierWindowStart } from './tier-window.policy';
export { sumActivityInWindow } from './tier-activity.aggregator';
export type { TierActivity } from './tier-activity.aggregator';

export {
  MS_PER_DAY,
  addDaysUtc,
  addMonthsUtc,
  endOfPeriodUtc,
  parseInstant,
  startOfYearUtc,
} from './utc-calendar.util';
