import { memberStreamPrefix } from '@loyalty/contracts';
import { EventStore, START } from '@loyalty/event-store';
import { MemberAggregate, MemberEvent, memberEvolver } from '@loyalty/domain-member';
import { BalanceFigures, Movements, Position4, ZERO_FIGURES, ZERO_MOVEMENTS, balanceFiguresOf, breakageOf, programmeTimeOf } from './finance.figures';
import type { RollForward } from './finance.service';

/**
 * The reference the finance projection is checked against: a full replay of every member stream
 * of the partition, folding each stream up to the instant (programme time) and reading the
 * movements straight off the entries as decisions §9a words them. O(the whole history): tests and
 * the benchmark use it, the API never does.
 */
export const replayRollForward = async (store: EventStore, tenant: string, from: Date, to: Date): Promise<{ roll: RollForward; atTo: BalanceFigures; atFrom: BalanceFigures }> => {
  const f = from.getTime();
  const t = to.getTime();
  const streams = new Map<string, { state: MemberAggregate; atFrom: BalanceFigures | null; atTo: BalanceFigures | null }>();
  const mv: Movements = { ...ZERO_MOVEMENTS };
  const history = { expired: 0, redeemed: 0, restored: 0 };
  const prefix = memberStreamPrefix(tenant);
  let after = START;
  for (;;) {
    const batch = await store.readAll(after, 1000, { streamPrefixes: [prefix] });
    if (!batch.length) break;
    after = batch[batch.length - 1].position;
    for (const e of batch) {
      if (!e.streamId.startsWith(prefix)) continue;
      let s = streams.get(e.streamId);
      if (!s) streams.set(e.streamId, (s = { state: memberEvolver.initialState(), atFrom: null, atTo: null }));
      const ev = { type: e.type, data: e.data } as MemberEvent;
      const atIso = programmeTimeOf(ev);
      const at = atIso ? new Date(atIso).getTime() : Number.NEGATIVE_INFINITY;
      if (at > f && !s.atFrom) s.atFrom = balanceFiguresOf(s.state);
      if (at > t && !s.atTo) s.atTo = balanceFiguresOf(s.state);
      if (s.atTo) continue; // the stream is past T: nothing after it counts
      const inPeriod = at > f && at <= t;
      if (ev.type === 'EntryRecorded') {
        const d = ev.data;
        // a take-back of a settled earn the state let go carries that earn (issue 13)
        const parent = (d.parent_entry_id ? s.state.entries.get(d.parent_entry_id) : undefined) ?? d.parent_earn ?? undefined;
        const kinds: Partial<Movements> = {};
        if (d.type === 'earn') kinds.earned = d.amount_cents;
        else if (d.type === 'adjust') kinds.adjusted = d.amount_cents;
        else if (d.type === 'redeem') kinds.redeemed = -d.amount_cents;
        else if (d.type === 'expire') kinds.expired = -d.amount_cents;
        else if (d.type === 'reverse' && parent?.type === 'redeem') kinds.restored = d.amount_cents;
        else if (d.type === 'reverse' && (parent?.type === 'earn' || parent?.type === 'adjust')) kinds.reversed = -d.amount_cents;
        if (inPeriod) for (const [k, v] of Object.entries(kinds)) mv[k as keyof Movements] += v;
        history.expired += kinds.expired ?? 0;
        history.redeemed += kinds.redeemed ?? 0;
        history.restored += kinds.restored ?? 0;
      } else if (ev.type === 'EntryRejected' && inPeriod) {
        const entry = s.state.entries.get(ev.data.entry_id);
        if (entry && entry.bucket === 'pending') mv.rejected += entry.amount_cents - entry.reversed_cents;
      }
      s.state = memberEvolver.evolve(s.state, ev);
    }
  }
  const atFrom = { ...ZERO_FIGURES };
  const atTo = { ...ZERO_FIGURES };
  for (const s of streams.values()) {
    add(atFrom, s.atFrom ?? balanceFiguresOf(s.state));
    add(atTo, s.atTo ?? balanceFiguresOf(s.state));
  }
  const pos = (x: BalanceFigures): Position4 => ({ outstanding_cents: x.available + x.pending, available_cents: x.available, pending_cents: x.pending, members: x.members });
  return {
    atFrom, atTo,
    roll: {
      from: from.toISOString(), to: to.toISOString(), opening: pos(atFrom), closing: pos(atTo),
      movements: {
        earned_cents: mv.earned, adjusted_cents: mv.adjusted, redeemed_cents: mv.redeemed, restored_cents: mv.restored,
        expired_cents: mv.expired, reversed_cents: mv.reversed, rejected_cents: mv.rejected,
      },
      breakage: breakageOf(history, atTo.available + atTo.pending),
    },
  };
};

const add = (into: BalanceFigures, x: BalanceFigures): void => {
  into.available += x.available; into.pending += x.pending; into.negative += x.negative;
  into.members += x.members; into.issued += x.issued; into.lifetime_redeemed += x.lifetime_redeemed;
};
