import type { Rule } from '@loyalty/contracts';
import { assertNever } from './assert-never.guard';
import { assertSafeInteger } from './integer.math';
import { parseInstant } from './utc-calendar.util';

/**
 * True when `starts_at <= at < ends_at`. A null or absent bound is open; a rule with neither
 * bound is always active.
 */
export function isActiveAt(rule: Pick<Rule, 'id' | 'starts_at' | 'ends_at'>, at: string): boolean {
  const atMs = parseInstant(at, 'at');
  if (rule.starts_at != null && atMs < parseInstant(rule.starts_at, `rule ${rule.id} starts_at`)) {
    return false;
  }
  if (rule.ends_at != null && atMs >= parseInstant(rule.ends_at, `rule ${rule.id} ends_at`)) {
    return false;
  }
  return true;
}

export type CampaignMode = 'base' | 'category_boost';

/**
 * How a campaign earns: an explicit `applies_to` wins; otherwise a campaign with non-empty tags
 * earns like a category boost (on the tagged lines) and one without tags like base (on the whole
 * eligible amount).
 */
export function campaignMode(rule: Pick<Rule, 'applies_to' | 'tags'>): CampaignMode {
  const appliesTo = rule.applies_to ?? null;
  if (appliesTo === null) {
    return rule.tags != null && rule.tags.length > 0 ? 'category_boost' : 'base';
  }
  switch (appliesTo) {
    case 'base':
    case 'category_boost':
      return appliesTo;
    default:
      return assertNever(appliesTo, 'applies_to');
  }
}

/**
 * What a campaign may still issue: max(0, budget − issued). `null` when the campaign has no
 * budget (unlimited).
 */
export function remainingBudget(
  rule: Pick<Rule, 'budget_cents'>,
  issuedCents: number,
): number | null {
  if (rule.budget_cents == null) {
    return null;
  }
  assertSafeInteger(rule.budget_cents, 'budget_cents');
  assertSafeInteger(issuedCents, 'issued cents');
  return Math.max(0, rule.budget_cents - Math.max(0, issuedCents));
}
