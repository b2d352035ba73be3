import { RuleError, type MemberState } from '@loyalty/contracts';
import type { EntryData, MemberEvent } from './member.events';
import { MemberAggregate, spendableOf } from './member.state';
import { MoneyLimitError, assertMoneyStaysExact } from './member.limits';

/** Domain refusals; the service maps them to problems in one place. */
export class MemberRuleError extends RuleError<'not-found' | 'invalid-state' | 'balance-insufficient' | 'redemption-not-allowed' | 'rule-ineligible' | 'conflict' | 'idempotency-key-reused'> {}

export const SPENDING_STATES: MemberState[] = ['registered', 'active'];
export const EARNING_STATES: MemberState[] = ['prospect', 'registered', 'active'];

export const canSpend = (s: MemberAggregate): boolean => SPENDING_STATES.includes(s.state);
export const canEarn = (s: MemberAggregate): boolean => EARNING_STATES.includes(s.state);

/** The events, if they keep the member's money exact (member.limits); otherwise the refusal, a 422 `rule-ineligible`. */
export const withinMoneyLimits = (s: MemberAggregate, events: MemberEvent[]): MemberEvent[] => {
  try {
    assertMoneyStaysExact(s, events);
  } catch (e) {
    if (e instanceof MoneyLimitError) throw new MemberRuleError(e.code, e.message);
    throw e;
  }
  return events;
};

export const decideAdjust = (
  s: MemberAggregate,
  cmd: { entryId: string; amount_cents: number; reason_code: string; note: string | null; cause: string; actor: string | null; at: string; expires_at?: string | null; batch_id?: string | null },
): MemberEvent[] => {
  if (!s.exists || s.state === 'deleted' || s.state === 'anonymised') throw new MemberRuleError('not-found', 'member not found');
  if (!Number.isSafeInteger(cmd.amount_cents) || cmd.amount_cents === 0) throw new MemberRuleError('rule-ineligible', 'amount_cents must be a non-zero integer');
  const entry: EntryData = {
    id: cmd.entryId, type: 'adjust', status: 'posted', amount_cents: cmd.amount_cents, reason_code: cmd.reason_code,
    rule: null, parent_entry_id: null, release_at: null, expires_at: cmd.expires_at ?? null, created_at: cmd.at,
    order_ref: null, cause: cmd.cause, actor: cmd.actor, note: cmd.note, batch_id: cmd.batch_id ?? null,
  };
  return withinMoneyLimits(s, [{ type: 'EntryRecorded', data: entry }]);
};

type StateCommand = 'suspend' | 'reinstate' | 'pause' | 'resume';

export const decideStateChange = (s: MemberAggregate, cmd: StateCommand, at: string): MemberEvent[] => {
  if (!s.exists) throw new MemberRuleError('not-found', 'member not found');
  const from = s.state;
  const change = (to: MemberState): MemberEvent[] => (to === from ? [] : [{ type: 'MemberStateChanged', data: { from, to, reason: cmd, at } }]);
  switch (cmd) {
    case 'suspend':
      if (from === 'deleted' || from === 'anonymised') throw new MemberRuleError('invalid-state', `cannot suspend a ${from} member`);
      return change('suspended');
    case 'reinstate':
      if (from !== 'suspended') throw new MemberRuleError('invalid-state', `member is ${from}, not suspended`);
      return change(s.suspended_from ?? 'registered');
    case 'pause':
      if (from === 'paused') return [];
      if (from !== 'registered' && from !== 'active') throw new MemberRuleError('invalid-state', `cannot pause a ${from} member`);
      return change('paused');
    case 'resume':
      if (from !== 'paused') throw new MemberRuleError('invalid-state', `member is ${from}, not paused`);
      return change(s.paused_from ?? 'registered');
    default: {
      const never: never = cmd;
      throw new Error(`unknown state command ${String(never)}`);
    }
  }
};

/** Can this member spend `amount` now? Throws the refusal the API reports. */
export const assertCanSpend = (s: MemberAggregate, amount: number): void => {
  if (!s.exists || s.state === 'deleted' || s.state === 'anonymised') throw new MemberRuleError('not-found', 'member not found');
  if (!canSpend(s)) throw new MemberRuleError('redemption-not-allowed', `a ${s.state} member cannot spend points`);
  if (spendableOf(s) < amount) throw new MemberRuleError('balance-insufficient', `spendable balance ${spendableOf(s)} is below ${amount}`);
};
