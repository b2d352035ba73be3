import type { Rule } from '@loyalty/contracts';
import { isActiveAt } from './campaign-window.policy';
import type { EarnLine } from './earn.types';
import { toEarnLine } from './earn-line.mapper';
import { assertSafeInteger } from './integer.math';
import { parseInstant } from './utc-calendar.util';

/**
 * What enrolment earns: one line per `signup_bonus` rule with a positive fixed `amount_cents`,
 * in the rules' order. Other rule types are ignored.
 *
 * CHOICE: a signup bonus that carries `starts_at`/`ends_at` only pays while
 * `starts_at <= at < ends_at` (null or absent bounds are open), so a merchant can run a
 * time-limited welcome offer; without bounds it always pays.
 */
export function signupBonus(rules: readonly Rule[], at: string): EarnLine[] {
  parseInstant(at, 'at');
  const lines: EarnLine[] = [];
  for (const rule of rules) {
    if (rule.type !== 'signup_bonus' || rule.amount_cents == null) {
      continue;
    }
    const amount = assertSafeInteger(rule.amount_cents, `rule ${rule.id} amount_cents`);
    if (amount > 0 && isActiveAt(rule, at)) {
      lines.push(toEarnLine(rule, amount));
    }
  }
  return lines;
}
