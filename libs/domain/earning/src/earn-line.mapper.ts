import type { Rule } from '@loyalty/contracts';
import type { EarnLine } from './earn.types';

/** The earn line a rule produces for an amount (the rule's identity, version, timing, expiry). */
export function toEarnLine(rule: Rule, amountCents: number): EarnLine {
  return {
    rule_id: rule.id,
    rule_name: rule.name,
    rule_type: rule.type,
    rule_version: rule.version,
    amount_cents: amountCents,
    timing: rule.timing,
    expiry_months: rule.expiry_months,
  };
}
