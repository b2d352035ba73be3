import type { Tier } from '@loyalty/contracts';
import type { EarnLine } from '@loyalty/domain-earning';
import type { MemberEvent } from './member.events';
import { MemberRuleError } from './member.decider';
import { OrderEarn, OrderStepCommand, decideOrderStep, earningRefusal, orderEarnRecorded } from './member.earning';
import { decideConfirmReservation } from './member.spending';
import type { MemberAggregate } from './member.state';
import { decideTier } from './member.tiers';

/**
 * Many order events of one member decided at once (the batch ingest path, issue 7): each step is
 * decided on the state the steps before it left, exactly as if the events had been processed one
 * after the other (earn, reservation confirmation, then the tier review its activity may cause),
 * and all their events are appended together. Pure: time, ids and earn lines come in; the only
 * effect is `evolve` folding each step's events into `state` (the caller owns that state).
 */
export interface MemberOrderStep {
  /** the step's command without its earn lines */
  command: Omit<OrderStepCommand, 'earn'>;
  /** when the step runs the rules: its lines for the state it meets (the tier multiplier may have moved since the batch began) */
  earnLines: ((s: MemberAggregate) => EarnLine[]) | null;
  /** an order carrying `reservation_id` confirms that open reservation (when it is this member's and still spendable) */
  reservation: { reservation_id: string; entry_id: string } | null;
}

export type MemberOrderStepOutcome =
  | { ok: true; entry_ids: string[]; earn_entry_ids: string[]; earns: OrderEarn[]; events: MemberEvent[] }
  | { ok: false; error: string };

export interface MemberOrderBatchDecision {
  events: MemberEvent[];
  outcomes: MemberOrderStepOutcome[];
}

/** A refusal of the member's rules ends that step `failed`; anything else is a fault of the whole batch. */
const refusalOf = (e: unknown): string | null => (e instanceof MemberRuleError || e instanceof RangeError ? e.message : null);

export const decideMemberOrderSteps = (
  state: MemberAggregate,
  steps: readonly MemberOrderStep[],
  p: { tiers: readonly Tier[]; at: string; evolve: (s: MemberAggregate, e: MemberEvent) => MemberAggregate },
): MemberOrderBatchDecision & { state: MemberAggregate } => {
  let s = state;
  const all: MemberEvent[] = [];
  const outcomes: MemberOrderStepOutcome[] = [];
  const fold = (events: MemberEvent[]) => {
    for (const e of events) s = p.evolve(s, e);
    all.push(...events);
  };
  for (const step of steps) {
    const refusal = earningRefusal(s);
    if (refusal) {
      outcomes.push({ ok: false, error: refusal });
      continue;
    }
    const ref = step.command.order.order_ref;
    let events: MemberEvent[];
    let entryIds: string[];
    let earnIds: string[];
    let earns: OrderEarn[];
    try {
      const lines = step.earnLines && !orderEarnRecorded(s, ref) ? step.earnLines(s) : [];
      const decision = decideOrderStep(s, { ...step.command, earn: step.earnLines ? { lines } : null });
      events = [...decision.events];
      entryIds = [...decision.entry_ids];
      earnIds = decision.earn_entry_ids;
      earns = decision.earns;
    } catch (e) {
      const error = refusalOf(e);
      if (error === null) throw e;
      outcomes.push({ ok: false, error });
      continue;
    }
    if (step.reservation && s.reservations.has(step.reservation.reservation_id)) {
      try {
        const confirmed = decideConfirmReservation(s, { reservation_id: step.reservation.reservation_id, order_ref: ref, entry_id: step.reservation.entry_id, at: step.command.at });
        events.push(...confirmed);
        if (confirmed.some((x) => x.type === 'EntryRecorded')) entryIds.push(step.reservation.entry_id);
      } catch (e) {
        // a reservation that cannot be confirmed is left alone: the order still earns
        if (!(e instanceof MemberRuleError)) throw e;
      }
    }
    fold(events);
    // tier metrics moved: upgrades apply at once (this order earned at the old rate); refunds may downgrade
    const tier = events.length > 0 ? decideTier(s, p.tiers, p.at) : [];
    fold(tier);
    outcomes.push({ ok: true, entry_ids: entryIds, earn_entry_ids: earnIds, earns, events: [...events, ...tier] });
  }
  return { events: all, outcomes, state: s };
};
