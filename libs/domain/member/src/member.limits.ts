import type { MemberEvent } from './member.events';
import { MemberAggregate } from './member.state';

/** The largest figure a balance, a lifetime total or an amount may reach: 2^53 − 1 minor units. */
export const MAX_MINOR_UNITS = Number.MAX_SAFE_INTEGER;

/** Thrown (and mapped by the service like any refusal, as a 422) when events would make a member's money inexact. */
export class MoneyLimitError extends Error {
  readonly code = 'rule-ineligible' as const;
}

/**
 * Money stays exact (issue 8): JSON numbers hold integers exactly only up to 2^53 − 1, so no
 * balance or lifetime figure of a member may pass it. Called by every decision that records
 * entries, before anything is appended: the entries' credits and debits are added up exactly
 * (BigInt) and checked against the member's figures as they would stand afterwards, so a refused
 * decision changes nothing. Credits are checked against available + pending together (what the
 * member's points liability counts), debits against the negative bound and the redeemed total.
 */
export const assertMoneyStaysExact = (s: MemberAggregate, events: readonly MemberEvent[]): void => {
  let credits = 0n;
  let debits = 0n;
  for (const e of events) {
    if (e.type !== 'EntryRecorded') continue;
    const amount = e.data.amount_cents;
    if (!Number.isSafeInteger(amount)) throw new MoneyLimitError(`amount_cents must be an integer of at most ${MAX_MINOR_UNITS} minor units`);
    if (amount > 0) credits += BigInt(amount);
    else debits += BigInt(-amount);
  }
  if (credits === 0n && debits === 0n) return;
  const max = BigInt(MAX_MINOR_UNITS);
  const held = BigInt(s.available) + BigInt(s.pending);
  if (held + credits > max || BigInt(s.lifetime_earned) + credits > max) {
    throw new MoneyLimitError(`this would take the member's points past ${MAX_MINOR_UNITS} minor units, the most that stays exact; nothing was recorded`);
  }
  if (BigInt(s.available) - debits < -max || BigInt(s.lifetime_redeemed) + debits > max) {
    throw new MoneyLimitError(`this would take the member's balance below -${MAX_MINOR_UNITS} minor units, the most that stays exact; nothing was recorded`);
  }
};
