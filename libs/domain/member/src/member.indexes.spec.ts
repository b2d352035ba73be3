import { deserialize, serialize } from 'node:v8';
import fc from 'fast-check';
import { sumActivityInWindow } from '@loyalty/domain-earning';
import type { MemberEvent } from './member.events';
import { MemberAggregate, activityInWindow, balancesOf, causesWithPrefix, firstDatedLot, holdsLots, initialMemberState, liveLots, evolveMember } from './member.state';
import { DAY, T0, at, created, entry } from './testing/member.builder';

/**
 * The indexes evolve keeps so that per-event work does not grow with the member's history (lot
 * head, lot by id, dated-lot heap, pending-earn set, cause groups, time-sorted activity with prefix
 * sums) must always say what a walk over the whole state says. Random histories of earns (posted,
 * pending, dated or not, some dated in the past), releases, rejections, spends, expiries and
 * take-backs, checked after every event against brute force.
 */

type Step =
  | { kind: 'earn'; amount: number; pending: boolean; expiresInDays: number | null; ageDays: number; order: number }
  | { kind: 'release'; pick: number }
  | { kind: 'reject'; pick: number }
  | { kind: 'redeem'; amount: number }
  | { kind: 'expire'; pick: number }
  | { kind: 'reverse'; pick: number; amount: number }
  | { kind: 'activity'; spend: number; ageDays: number; order: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('earn' as const), amount: fc.integer({ min: 1, max: 5_000 }), pending: fc.boolean(), expiresInDays: fc.option(fc.integer({ min: 1, max: 400 })), ageDays: fc.integer({ min: 0, max: 30 }), order: fc.integer({ min: 0, max: 6 }) }),
  fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('reject' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('redeem' as const), amount: fc.integer({ min: 1, max: 8_000 }) }),
  fc.record({ kind: fc.constant('expire' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('reverse' as const), pick: fc.nat(), amount: fc.integer({ min: 1, max: 3_000 }) }),
  fc.record({ kind: fc.constant('activity' as const), spend: fc.integer({ min: -2_000, max: 20_000 }), ageDays: fc.integer({ min: 0, max: 500 }), order: fc.integer({ min: 0, max: 6 }) }),
);

let n = 0;
const id = () => `LE-IDX${String(++n).padStart(22, '0')}`;

/** The event a step means on the current state (or none when it does not apply). */
const eventFor = (s: MemberAggregate, x: Step, day: number): MemberEvent | null => {
  const now = at(day);
  const pendingEarns = [...s.entries.values()].filter((e) => e.type === 'earn' && e.bucket === 'pending');
  const earns = [...s.entries.values()].filter((e) => e.type === 'earn' && e.status !== 'rejected' && e.status !== 'reversed');
  switch (x.kind) {
    case 'earn': {
      const created_at = at(day - x.ageDays);
      return entry({
        id: id(), type: 'earn', amount_cents: x.amount, status: x.pending ? 'pending' : 'posted', created_at, order_ref: `O-${x.order}`,
        cause: `earn:O-${x.order}:R-${n}`, expires_at: x.expiresInDays === null ? null : at(day + x.expiresInDays),
        release_on: x.pending ? 'return_window' : null, release_at: x.pending ? at(day + 14) : null,
      });
    }
    case 'release':
      return pendingEarns.length ? { type: 'EntryReleased', data: { entry_id: pendingEarns[x.pick % pendingEarns.length].id, at: now } } : null;
    case 'reject':
      return pendingEarns.length ? { type: 'EntryRejected', data: { entry_id: pendingEarns[x.pick % pendingEarns.length].id, at: now } } as MemberEvent : null;
    case 'redeem':
      return entry({ id: id(), type: 'redeem', amount_cents: -x.amount, created_at: now });
    case 'expire': {
      const live = [...liveLots(s)];
      if (!live.length) return null;
      const lot = live[x.pick % live.length];
      return entry({ id: id(), type: 'expire', amount_cents: -lot.remaining_cents, parent_entry_id: lot.entry_id, cause: `lot:${lot.entry_id}`, created_at: now, reason_code: 'expiry' });
    }
    case 'reverse': {
      if (!earns.length) return null;
      const parent = earns[x.pick % earns.length];
      const left = parent.amount_cents - parent.reversed_cents;
      if (left <= 0) return null;
      return entry({ id: id(), type: 'reverse', amount_cents: -Math.min(left, x.amount), parent_entry_id: parent.id, order_ref: parent.order_ref, cause: `refund:${parent.order_ref}:R${n}:${parent.id}`, created_at: now });
    }
    case 'activity':
      return { type: 'OrderActivityRecorded', data: { order_ref: `O-${x.order}`, at: at(day - x.ageDays), spend_cents: x.spend, orders: 1, cause: `activity:O-${x.order}:${n}` } } as MemberEvent;
    default:
      return null;
  }
};

const checkIndexes = (s: MemberAggregate, nowMs: number): void => {
  // lots: head, live set, first dated lot
  const live = s.lots.filter((l) => l.remaining_cents > 0);
  expect([...liveLots(s)]).toEqual(live);
  expect(holdsLots(s)).toBe(live.length > 0);
  for (const l of s.lots) expect(s.lot_by_id.get(l.entry_id)).toBe(l);
  const dated = live.filter((l) => l.expires_at !== null && !s.causes.has(`lot:${l.entry_id}`));
  const first = firstDatedLot(s);
  if (!dated.length) expect(first).toBeNull();
  else expect(first?.expires_ms).toBe(Math.min(...dated.map((l) => Date.parse(l.expires_at!))));
  // pending earns, in recording order
  expect([...s.pending_earns]).toEqual([...s.entries.values()].filter((e) => e.type === 'earn' && e.bucket === 'pending').map((e) => e.id));
  // cause prefixes
  for (const prefix of ['earn:O-1:', 'earn:O-3:', 'refund:O-2:', 'activity:O-4:', 'lot:']) {
    expect(causesWithPrefix(s, prefix)).toEqual([...s.causes.keys()].filter((c) => c.startsWith(prefix)));
  }
  // activity: sorted by time, prefix sums agree with a plain sum over any window
  expect(s.activity.map((a) => a.ms)).toEqual([...s.activity.map((a) => a.ms)].sort((a, b) => a - b));
  for (const days of [1, 30, 365, 10_000]) {
    const from = new Date(nowMs - days * DAY).toISOString();
    const to = new Date(nowMs).toISOString();
    expect(activityInWindow(s, Date.parse(from), nowMs)).toEqual(sumActivityInWindow(s.activity.map(({ at: a, spend, points, orders }) => ({ at: a, spend, points, orders })), from, to));
  }
};

describe('member indexes agree with a walk over the whole state', () => {
  it('after every event of random histories', () => {
    fc.assert(fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => {
      const s = evolveMember(initialMemberState(), created(T0));
      let day = 0;
      for (const x of steps) {
        day += 1;
        const e = eventFor(s, x, day);
        if (!e) continue;
        evolveMember(s, e);
        checkIndexes(s, Date.parse(at(day)));
      }
    }), { numRuns: 150 });
  });

  it('a state restored from a V8 snapshot (persisted snapshots) evolves exactly like the original', () => {
    fc.assert(fc.property(fc.array(step, { minLength: 2, maxLength: 50 }), fc.nat(), (steps, cut) => {
      const s = evolveMember(initialMemberState(), created(T0));
      const split = cut % steps.length;
      let day = 0;
      let copy: MemberAggregate | null = null;
      for (const [i, x] of steps.entries()) {
        if (i === split) copy = deserialize(serialize(s)) as MemberAggregate;
        day += 1;
        const e = eventFor(s, x, day);
        if (!e) continue;
        evolveMember(s, e);
        if (copy) evolveMember(copy, e);
      }
      const c = copy ?? (deserialize(serialize(s)) as MemberAggregate);
      expect(balancesOf(c)).toEqual(balancesOf(s));
      expect([...liveLots(c)].map((l) => [l.entry_id, l.remaining_cents])).toEqual([...liveLots(s)].map((l) => [l.entry_id, l.remaining_cents]));
      expect(firstDatedLot(c)?.entry_id ?? null).toBe(firstDatedLot(s)?.entry_id ?? null);
      expect([...c.pending_earns]).toEqual([...s.pending_earns]);
      expect(c.activity_sums).toEqual(s.activity_sums);
      expect([...c.entries.keys()]).toEqual([...s.entries.keys()]);
    }), { numRuns: 100 });
  });

  it('lots_changed names exactly the lots the last event created or changed', () => {
    const s = evolveMember(initialMemberState(), created(T0));
    evolveMember(s, entry({ id: 'LE-A', type: 'earn', amount_cents: 100, expires_at: at(10) }));
    expect(s.lots_changed.map((l) => l.entry_id)).toEqual(['LE-A']);
    evolveMember(s, entry({ id: 'LE-B', type: 'earn', amount_cents: 100, expires_at: at(20) }));
    expect(s.lots_changed.map((l) => l.entry_id)).toEqual(['LE-B']);
    evolveMember(s, entry({ id: 'LE-C', type: 'redeem', amount_cents: -150 }));
    expect(s.lots_changed.map((l) => [l.entry_id, l.remaining_cents])).toEqual([['LE-A', 0], ['LE-B', 50]]);
    evolveMember(s, { type: 'MemberStateChanged', data: { from: 'active', to: 'paused', at: at(1) } } as MemberEvent);
    expect(s.lots_changed).toEqual([]);
  });
});
