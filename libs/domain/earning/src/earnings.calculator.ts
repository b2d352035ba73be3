import type { Rule } from '@loyalty/contracts';
import { assertNever } from './assert-never.guard';
import { BPS_SCALE, applyBps, multiplierToBasisPoints, toBasisPoints } from './basis-points.math';
import { campaignMode, isActiveAt, remainingBudget } from './campaign-window.policy';
import type { EarnInput, EarnLine } from './earn.types';
import { toEarnLine } from './earn-line.mapper';
import { eligibleAmount, taggedAmount } from './eligible-amount.calculator';
import { assertSafeInteger, floorDivBig, toSafeNumber } from './integer.math';
import { parseInstant } from './utc-calendar.util';

/**
 * Runs the programme's earning rules on one order (decisions §5) and returns one line per rule
 * that earns a positive amount, in the rules' order.
 *
 * - Eligible amount: `grossCents` without lines, else min(grossCents, non-gift-card lines).
 * - `base`: floor(eligible × rate_bps × multiplier_bps / 10000 / 10000), one floor.
 *   CHOICE: the tier multiplier applies to `base` rules only. Boosts and campaigns are promotional
 *   extras whose cost the merchant budgets explicitly; multiplying them by tier would make their
 *   cost (and a campaign's budget burn) depend on the customer mix.
 * - `category_boost`: floor(tagged × rate_bps / 10000), tagged = the non-gift-card lines whose
 *   tags intersect the rule's tags, capped at the eligible amount.
 * - `campaign`: like base (without the tier multiplier) or like a boost (see `campaignMode`),
 *   only while `starts_at <= at < ends_at`, and limited by what remains of `budget_cents`.
 * - `signup_bonus` and `referral` never earn on orders.
 * - Every rule: skipped when eligible < `min_order_cents`; capped at `cap_per_order_cents`; a
 *   campaign's budget applies after the cap. Zero results are omitted.
 */
export function computeEarnings(input: EarnInput): EarnLine[] {
  parseInstant(input.at, 'at');
  const eligible = eligibleAmount(input.grossCents, input.lines);
  const multiplierBps = multiplierToBasisPoints(input.tierMultiplier);
  // Budget consumed so far, including by earlier lines of this very call.
  const issued = new Map<string, number>();
  const issuedSoFar = (ruleId: string): number =>
    issued.get(ruleId) ?? readIssued(input.campaignIssuedCents, ruleId);

  const earned: EarnLine[] = [];
  for (const rule of input.rules) {
    if (!meetsMinimum(rule, eligible)) {
      continue;
    }
    let amount = capPerOrder(rule, ruleAmount(rule, input, eligible, multiplierBps));
    if (rule.type === 'campaign') {
      const already = issuedSoFar(rule.id);
      const remaining = remainingBudget(rule, already);
      if (remaining !== null) {
        amount = Math.min(amount, remaining);
      }
      if (amount > 0) {
        issued.set(rule.id, already + amount);
      }
    }
    if (amount > 0) {
      earned.push(toEarnLine(rule, amount));
    }
  }
  return earned;
}

/** The uncapped amount a rule computes on the order (0 when the rule does not apply). */
function ruleAmount(rule: Rule, input: EarnInput, eligible: number, multiplierBps: number): number {
  switch (rule.type) {
    case 'base':
      return baseAmount(eligible, toBasisPoints(rule.earn_rate_pct), multiplierBps);
    case 'category_boost':
      return applyBps(taggedAmount(input.lines, rule.tags, eligible), toBasisPoints(rule.earn_rate_pct));
    case 'campaign': {
      if (!isActiveAt(rule, input.at)) {
        return 0;
      }
      const rateBps = toBasisPoints(rule.earn_rate_pct);
      const mode = campaignMode(rule);
      switch (mode) {
        case 'base':
          return applyBps(eligible, rateBps);
        case 'category_boost':
          return applyBps(taggedAmount(input.lines, rule.tags, eligible), rateBps);
        default:
          return assertNever(mode, 'campaign mode');
      }
    }
    case 'signup_bonus':
    case 'referral':
      return 0;
    default:
      return assertNever(rule.type, 'rule type');
  }
}

/** floor(eligible × rate_bps × multiplier_bps / 10⁸): a single floor, exact in BigInt. */
function baseAmount(eligible: number, rateBps: number, multiplierBps: number): number {
  const product = BigInt(eligible) * BigInt(rateBps) * BigInt(multiplierBps);
  return toSafeNumber(floorDivBig(product, BigInt(BPS_SCALE * BPS_SCALE)), 'base earn');
}

function meetsMinimum(rule: Rule, eligible: number): boolean {
  if (rule.min_order_cents == null) {
    return true;
  }
  assertSafeInteger(rule.min_order_cents, `rule ${rule.id} min_order_cents`);
  return eligible >= rule.min_order_cents;
}

function capPerOrder(rule: Rule, amount: number): number {
  if (rule.cap_per_order_cents == null) {
    return amount;
  }
  assertSafeInteger(rule.cap_per_order_cents, `rule ${rule.id} cap_per_order_cents`);
  return Math.max(0, Math.min(amount, rule.cap_per_order_cents));
}

function readIssued(issued: Record<string, number>, ruleId: string): number {
  const value = Object.prototype.hasOwnProperty.call(issued, ruleId) ? issued[ruleId] : undefined;
  return value === undefined ? 0 : assertSafeInteger(value, `campaignIssuedCents[${ruleId}]`);
}
