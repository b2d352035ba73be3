import type { OrderLine } from './earn.types';
import { assertNonNegativeSafeInteger, assertSafeInteger, sumSafe } from './integer.math';

/** True when the order carries line detail (an empty array counts as "no lines"). */
export function hasLines(lines: readonly OrderLine[] | null | undefined): lines is readonly OrderLine[] {
  return Array.isArray(lines) && lines.length > 0;
}

function earningLines(lines: readonly OrderLine[]): OrderLine[] {
  return lines.filter((line, index) => {
    assertSafeInteger(line.amount_cents, `lines[${index}].amount_cents`);
    return line.gift_card !== true;
  });
}

/**
 * The amount an order earns on (decisions §5): `grossCents` when the order has no lines,
 * otherwise min(grossCents, sum of the non-gift-card line totals). Never negative: a line may be
 * negative (a discount line), but the eligible amount is floored at 0.
 */
export function eligibleAmount(grossCents: number, lines?: readonly OrderLine[] | null): number {
  assertNonNegativeSafeInteger(grossCents, 'grossCents');
  if (!hasLines(lines)) {
    return grossCents;
  }
  const linesTotal = sumSafe(
    earningLines(lines).map((line) => line.amount_cents),
    'sum of line amounts',
  );
  return Math.max(0, Math.min(grossCents, linesTotal));
}

/**
 * The sum of the non-gift-card lines whose tags intersect `ruleTags` (exact, case-sensitive
 * match), capped to `[0, eligible]` so a boost never earns on more than the order's eligible
 * amount. No lines, or a rule without tags, gives 0.
 */
export function taggedAmount(
  lines: readonly OrderLine[] | null | undefined,
  ruleTags: readonly string[] | null | undefined,
  eligible: number,
): number {
  if (!hasLines(lines) || !ruleTags || ruleTags.length === 0) {
    return 0;
  }
  const wanted = new Set(ruleTags);
  const matching = earningLines(lines).filter((line) => (line.tags ?? []).some((tag) => wanted.has(tag)));
  const total = sumSafe(
    matching.map((line) => line.amount_cents),
    'sum of tagged line amounts',
  );
  return Math.max(0, Math.min(eligible, total));
}
