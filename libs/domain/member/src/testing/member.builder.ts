import type { EntryData, MemberEvent } from '../member.events';
import { MemberAggregate, evolveMember, initialMemberState, memberEvolver } from '../member.state';

/** Test helper: folds events into a member, with terse constructors for the usual ones. */
export const DAY = 86_400_000;
export const T0 = '2025-01-10T12:00:00.000Z';
export const at = (days: number, base = T0): string => new Date(Date.parse(base) + days * DAY).toISOString();

let seq = 0;
export const entryId = (): string => `LE-TEST${String(++seq).padStart(21, '0')}`;

export const created = (when = T0, state: 'prospect' | 'registered' = 'registered'): MemberEvent => ({
  type: 'MemberCreated',
  data: { member_id: 'M-TEST', state, referral_code: 'ABCDEFGH', pii: { v: 1, kid: 'M-TEST', iv: '', tag: '', data: '' }, marketing_consent: false, accepted_terms_version: null, at: when },
});

export const entry = (over: Partial<EntryData> & Pick<EntryData, 'type' | 'amount_cents'>): MemberEvent => ({
  type: 'EntryRecorded',
  data: {
    id: entryId(), status: 'posted', reason_code: null, rule: null, parent_entry_id: null, release_at: null, expires_at: null,
    created_at: T0, order_ref: null, cause: null, ...over,
  },
});

export const idOf = (e: MemberEvent): string => (e.type === 'EntryRecorded' ? e.data.id : '');

export const fold = (events: MemberEvent[], s: MemberAggregate = initialMemberState()): MemberAggregate => {
  for (const e of events) evolveMember(s, e);
  return s;
};

// evolve mutates the state it is given: refold starts again from the member's history each time,
// so a state a test keeps stays as it was
const histories = new WeakMap<MemberAggregate, MemberEvent[]>();
/** `events` folded after `s`'s history (or from nothing) into a new state; `s` is left as it was. */
export const refold = (events: MemberEvent[], s?: MemberAggregate): MemberAggregate => {
  const history = [...(s ? histories.get(s)! : []), ...events];
  const state = history.reduce((acc, e) => memberEvolver.evolve(acc, e), memberEvolver.initialState());
  histories.set(state, history);
  return state;
};
