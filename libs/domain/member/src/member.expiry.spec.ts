import type { ExpiryPolicy } from '@loyalty/contracts';
import { decideExpiries, decideReleases, decideSweep, expiresAtFor, expiringWithinDays } from './member.expiry';
import { MemberEvent } from './member.events';
import { T0, at, created, entry, entryId, fold, idOf } from './testing/member.builder';

const fixed30: ExpiryPolicy = { policy: 'fixed_days', days: 30 };
const none: ExpiryPolicy = { policy: 'none' };

describe('lot expiry', () => {
  it('spending takes the oldest lots first, so expiry takes only the remainder of each lot', () => {
    const a = entry({ type: 'earn', amount_cents: 100, created_at: at(0), expires_at: at(10) });
    const b = entry({ type: 'earn', amount_cents: 100, created_at: at(1), expires_at: at(20) });
    const s = fold([created(), a, b, entry({ type: 'redeem', amount_cents: -150, created_at: at(2) })]);
    expect(s.lots.map((l) => l.remaining_cents)).toEqual([0, 50]);
    // lot A was spent entirely: nothing to expire at its date
    expect(decideExpiries(s, none, at(10), entryId)).toEqual([]);
    const events = decideExpiries(s, none, at(20), entryId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'EntryRecorded', data: { type: 'expire', amount_cents: -50, cause: `lot:${idOf(b)}`, parent_entry_id: idOf(b), reason_code: 'expiry', created_at: at(20) } });
    fold(events, s);
    expect(s.available).toBe(0);
    expect(s.lots.every((l) => l.remaining_cents === 0)).toBe(true);
  });

  it('a partly spent lot expires with its unspent remainder, once', () => {
    const a = entry({ type: 'earn', amount_cents: 100, expires_at: at(30) });
    const s = fold([created(), a, entry({ type: 'redeem', amount_cents: -30, created_at: at(1) })]);
    expect(decideExpiries(s, fixed30, at(29), entryId)).toEqual([]);
    const events = decideExpiries(s, fixed30, at(30), entryId);
    expect(events.map((e) => e.type === 'EntryRecorded' && e.data.amount_cents)).toEqual([-70]);
    fold(events, s);
    expect(s.available).toBe(0);
    expect(decideExpiries(s, fixed30, at(31), entryId)).toEqual([]);
  });

  it('inactivity: every remaining lot expires once the member has been inactive for `days`; expiries are not activity', () => {
    const policy: ExpiryPolicy = { policy: 'inactivity', days: 10 };
    const s = fold([
      created(),
      entry({ type: 'earn', amount_cents: 100, created_at: at(0) }),
      entry({ type: 'adjust', amount_cents: 40, created_at: at(2) }),
    ]);
    expect(decideExpiries(s, policy, at(11.9), entryId)).toEqual([]);
    const events = decideExpiries(s, policy, at(12), entryId);
    expect(events.map((e) => e.type === 'EntryRecorded' && [e.data.amount_cents, e.data.reason_code])).toEqual([[-100, 'inactivity'], [-40, 'inactivity']]);
    fold(events, s);
    expect(s.available).toBe(0);
    expect(s.last_activity_at).toBe(at(2));
  });

  it('a take-back of a spent lot comes from the other lots, then becomes debt that later credits repay first', () => {
    const a = entry({ type: 'earn', amount_cents: 100, expires_at: at(50) });
    const b = entry({ type: 'earn', amount_cents: 100, created_at: at(1), expires_at: at(50) });
    const s = fold([created(), a, b, entry({ type: 'redeem', amount_cents: -100, created_at: at(2) })]);
    fold([entry({ type: 'reverse', amount_cents: -100, parent_entry_id: idOf(a), created_at: at(3) })], s);
    expect(s.available).toBe(0);
    expect(s.lots.map((l) => l.remaining_cents)).toEqual([0, 0]);
    fold([entry({ type: 'reverse', amount_cents: -100, parent_entry_id: idOf(b), created_at: at(4) })], s);
    expect(s.available).toBe(-100);
    expect(s.debt).toBe(100);
    fold([entry({ type: 'earn', amount_cents: 60, created_at: at(5), expires_at: at(6) })], s);
    expect(s.available).toBe(-40);
    expect(expiringWithinDays(s, none, at(5))).toBe(0);
    expect(decideExpiries(s, none, at(60), entryId)).toEqual([]);
    fold([entry({ type: 'earn', amount_cents: 100, created_at: at(7), expires_at: at(8) })], s);
    expect(s.available).toBe(60);
    const events = decideExpiries(s, none, at(8), entryId);
    expect(events.map((e) => e.type === 'EntryRecorded' && e.data.amount_cents)).toEqual([-60]);
  });

  it('points restored by a voided voucher expire like the newest lot they were spent from', () => {
    const a = entry({ type: 'earn', amount_cents: 100, expires_at: at(10) });
    const spend = entry({ type: 'redeem', amount_cents: -60, created_at: at(1) });
    const s = fold([created(), a, spend]);
    fold([entry({ type: 'reverse', amount_cents: 60, parent_entry_id: idOf(spend), created_at: at(2) })], s);
    expect(s.available).toBe(100);
    expect(expiringWithinDays(s, none, at(2), 30)).toBe(100);
    const events = decideExpiries(s, none, at(10), entryId);
    expect(events.map((e) => e.type === 'EntryRecorded' && e.data.amount_cents)).toEqual([-40, -60]);
    fold(events, s);
    expect(s.available).toBe(0);
  });

  it('points held by an open reservation wait for it to resolve', () => {
    const s = fold([
      created(),
      entry({ type: 'earn', amount_cents: 100, expires_at: at(5) }),
      { type: 'ReservationOpened', data: { reservation_id: 'RS-1', amount_cents: 80, cart_ref: null, expires_at: at(5.01), at: at(5) } },
    ]);
    expect(decideExpiries(s, none, at(5), entryId)).toEqual([]);
    fold([{ type: 'ReservationReleased', data: { reservation_id: 'RS-1', at: at(5.01), reason: 'expired' } }], s);
    expect(decideExpiries(s, none, at(5.01), entryId)).toHaveLength(1);
  });

  it('expiring within 30 days counts lots by their date or the inactivity deadline, overdue ones included', () => {
    const s = fold([
      created(),
      entry({ type: 'earn', amount_cents: 100, expires_at: at(29) }),
      entry({ type: 'earn', amount_cents: 200, expires_at: at(31) }),
      entry({ type: 'earn', amount_cents: 400 }),
    ]);
    expect(expiringWithinDays(s, none, T0)).toBe(100);
    expect(expiringWithinDays(s, none, at(30))).toBe(300);
    expect(expiringWithinDays(s, { policy: 'inactivity', days: 20 }, T0)).toBe(700);
    expect(expiringWithinDays(s, { policy: 'inactivity', days: 40 }, T0)).toBe(100);
  });

  it('expiresAtFor follows the policy, lets a rule override it and never throws on a misconfiguration', () => {
    expect(expiresAtFor(fixed30, null, T0)).toBe(at(30));
    expect(expiresAtFor(fixed30, 1, T0)).toBe('2025-02-10T12:00:00.000Z');
    expect(expiresAtFor({ policy: 'end_of_period', period: 'month' }, null, T0)).toBe('2025-01-31T23:59:59.999Z');
    expect(expiresAtFor({ policy: 'fixed_days' }, null, T0)).toBeNull();
    expect(expiresAtFor(undefined, null, T0)).toBeNull();
  });
});

describe('return-window releases', () => {
  const pending = (release_at: string | null, release_on: 'return_window' | 'fulfilled' = 'return_window', expires_at: string | null = null) =>
    entry({ type: 'earn', amount_cents: 500, status: 'pending', release_at, release_on, expires_at });

  it('releases a pending return_window earn when release_at has come, once', () => {
    const e = pending(at(30));
    const s = fold([created(), e]);
    expect(s.pending).toBe(500);
    expect(decideReleases(s, at(29.99))).toEqual([]);
    const events = decideReleases(s, at(30));
    expect(events).toEqual([{ type: 'EntryReleased', data: { entry_id: idOf(e), at: at(30) } }]);
    fold(events, s);
    expect([s.pending, s.available, s.state]).toEqual([0, 500, 'active']);
    expect(decideReleases(s, at(31))).toEqual([]);
  });

  it('leaves earns waiting for an order event or without a release date alone', () => {
    const s = fold([created(), pending(at(1), 'fulfilled'), pending(null)]);
    expect(decideReleases(s, at(100))).toEqual([]);
  });

  it('a sweep releases, then expires what is already past its date', () => {
    const e = pending(at(30), 'return_window', at(20));
    const s = fold([created(), e]);
    const events: MemberEvent[] = decideSweep(s, { tiers: [], expiry: none }, at(30), entryId);
    expect(events.map((x) => x.type)).toEqual(['EntryReleased', 'EntryRecorded']);
    expect(s.pending).toBe(500); // the caller's state is untouched
    fold(events, s);
    expect([s.pending, s.available]).toEqual([0, 0]);
  });
});
