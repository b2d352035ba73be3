import type { Tier } from '@loyalty/contracts';
import type { EarnLine } from '@loyalty/domain-earning';
import type { MemberEvent } from './member.events';
import { OrderStepCommand, decideOrderStep, orderCauses } from './member.earning';
import { MemberOrderStep, decideMemberOrderSteps } from './member.order-batch';
import { MemberAggregate, memberEvolver } from './member.state';
import { decideTier } from './member.tiers';

const T0 = '2030-01-01T00:00:00.000Z';
const GOLD: Tier = { name: 'Gold', level: 1, threshold_type: 'spend', threshold_value: 15_000, criteria: [], criteria_mode: 'all', window: 'lifetime', window_days: null, earn_multiplier: 2, benefits: {} };

const created = (state: 'registered' | 'paused' = 'registered'): MemberEvent[] => [
  { type: 'MemberCreated', data: { member_id: 'M-1', state: 'registered', referral_code: 'ABCDEFGH', pii: { v: 1, kid: 'k', iv: '', tag: '', data: '' }, marketing_consent: false, accepted_terms_version: null, at: T0 } },
  ...(state === 'paused' ? [{ type: 'MemberStateChanged', data: { from: 'registered', to: 'paused', reason: 'paused', at: T0 } } as MemberEvent] : []),
];
const member = (events: MemberEvent[]): MemberAggregate => events.reduce((s, e) => memberEvolver.evolve(s, e), memberEvolver.initialState());

/** 1 % of the gross at the member's tier multiplier, as the ledger's rules would compute it. */
const lines = (gross: number) => (s: MemberAggregate): EarnLine[] => [{
  rule_id: 'base', rule_name: 'Base', rule_type: 'base', rule_version: 1, amount_cents: Math.round((gross / 100) * (s.tier?.earn_multiplier ?? 1)), timing: 'paid', expiry_months: null,
}];
const command = (ref: string, gross: number): Omit<OrderStepCommand, 'earn'> => ({
  order: { order_ref: ref, earn_entry_ids: [], fulfilled_at: null, delivered: false },
  at: T0, expiry: { policy: 'none' }, return_window_days: 30, entryId: (cause) => `LE-${cause}`,
  refund: null, cancel: false, activity: { spend_cents: gross, orders: 1, cause: orderCauses.earnActivity(ref) },
});
const paid = (ref: string, gross: number): MemberOrderStep => ({ command: command(ref, gross), earnLines: lines(gross), reservation: null });

/** The one-event path: decide, fold, review the tier, fold, for each order in turn. */
const oneByOne = (history: MemberEvent[], orders: [string, number][]): MemberEvent[] => {
  const s = member(history);
  const out: MemberEvent[] = [];
  for (const [ref, gross] of orders) {
    const d = decideOrderStep(s, { ...command(ref, gross), earn: { lines: lines(gross)(s) } });
    for (const e of d.events) memberEvolver.evolve(s, e);
    const tier = decideTier(s, [GOLD], T0);
    for (const e of tier) memberEvolver.evolve(s, e);
    out.push(...d.events, ...tier);
  }
  return out;
};

describe('decideMemberOrderSteps (many order events of one member at once)', () => {
  it('decides each step on the state the steps before it left: the order crossing the tier earns at the old rate, the next at the new', () => {
    const orders: [string, number][] = [['O-1', 10_000], ['O-2', 10_000], ['O-3', 10_000]];
    const d = decideMemberOrderSteps(member(created()), orders.map(([r, g]) => paid(r, g)), { tiers: [GOLD], at: T0, evolve: memberEvolver.evolve });
    const earned = d.events.filter((e) => e.type === 'EntryRecorded').map((e) => (e.type === 'EntryRecorded' ? e.data.amount_cents : 0));
    expect(earned).toEqual([100, 100, 200]);
    expect(d.events.filter((e) => e.type === 'TierChanged')).toHaveLength(1);
    expect(d.state.tier?.name).toBe('Gold');
    expect(d.outcomes.map((o) => o.ok && o.entry_ids.length)).toEqual([1, 1, 1]);
    // exactly the events the one-event path writes, in the same order
    expect(d.events).toEqual(oneByOne(created(), orders));
  });

  it('a step already applied (a redelivered batch) decides nothing new and reports the entries it wrote', () => {
    const first = decideMemberOrderSteps(member(created()), [paid('O-1', 5_000)], { tiers: [], at: T0, evolve: memberEvolver.evolve });
    const again = decideMemberOrderSteps(member([...created(), ...first.events]), [paid('O-1', 5_000), paid('O-2', 5_000)], { tiers: [], at: T0, evolve: memberEvolver.evolve });
    expect(again.outcomes[0]).toEqual({ ok: true, entry_ids: (first.outcomes[0] as { entry_ids: string[] }).entry_ids, earn_entry_ids: expect.any(Array), earns: expect.any(Array), events: [] });
    expect(again.events.filter((e) => e.type === 'EntryRecorded')).toHaveLength(1); // O-2 only
  });

  it('a member who may not earn fails every step, and nothing is written', () => {
    const d = decideMemberOrderSteps(member(created('paused')), [paid('O-1', 5_000), paid('O-2', 5_000)], { tiers: [GOLD], at: T0, evolve: memberEvolver.evolve });
    expect(d.events).toEqual([]);
    expect(d.outcomes).toEqual([{ ok: false, error: expect.stringMatching(/paused/) }, { ok: false, error: expect.stringMatching(/paused/) }]);
  });
});
