import { initialMemberState } from '@loyalty/domain-member';
import type { MemberEvent } from '@loyalty/domain-member';
import { MOVEMENT_KINDS, balanceFiguresOf, bookMovement, breakageOf, movementKindOf, outstandingMovement, programmeTimeOf } from './finance.figures';

const recorded = (type: string): MemberEvent => ({ type: 'EntryRecorded', data: { type, created_at: '2026-01-01T00:00:00.000Z' } } as unknown as MemberEvent);

describe('finance figures (decisions §9a)', () => {
  it('breakage: floor(10000 × expired ÷ (expired + redeemed − restored)), 0 without a divisor', () => {
    expect(breakageOf({ expired: 0, redeemed: 0, restored: 0 }, 1_000)).toEqual({ rate_bps: 0, expected_redemption_cents: 1_000 });
    // 100 / (100 + 250 - 50) = 0.3333… → 3333 bps; 1000 − floor(1000 × 3333 / 10000) = 1000 − 333
    expect(breakageOf({ expired: 100, redeemed: 250, restored: 50 }, 1_000)).toEqual({ rate_bps: 3333, expected_redemption_cents: 667 });
    expect(breakageOf({ expired: 5, redeemed: 10, restored: 10 }, 7)).toEqual({ rate_bps: 10000, expected_redemption_cents: 0 });
    // integers far beyond 2^53 / 10000 stay exact
    expect(breakageOf({ expired: 2 ** 50, redeemed: 2 ** 50, restored: 0 }, 2 ** 52).rate_bps).toBe(5000);
    expect(breakageOf({ expired: 1, redeemed: 2, restored: 0 }, 9_007_199_254_740_991).expected_redemption_cents).toBe(9_007_199_254_740_991 - 3_002_099_511_605_172);
  });

  it('a debt (negative outstanding) floors toward −∞', () => {
    // −101 × 5000 / 10000 = −50.5 → floor −51; −101 − (−51) = −50
    expect(breakageOf({ expired: 1, redeemed: 1, restored: 0 }, -101)).toEqual({ rate_bps: 5000, expected_redemption_cents: -50 });
  });

  it('booking a change of outstanding under any kind reproduces it through the identity', () => {
    for (const k of MOVEMENT_KINDS) for (const delta of [-700, 0, 1, 250]) expect(outstandingMovement(bookMovement(k, delta))).toBe(delta);
    expect(bookMovement('redeemed', -300)).toMatchObject({ redeemed: 300 });
    expect(bookMovement('adjusted', -300)).toMatchObject({ adjusted: -300 });
  });

  it('classifies events by entry type and the parent of a reverse', () => {
    expect(movementKindOf(recorded('earn'), null)).toBe('earned');
    expect(movementKindOf(recorded('adjust'), null)).toBe('adjusted');
    expect(movementKindOf(recorded('redeem'), null)).toBe('redeemed');
    expect(movementKindOf(recorded('expire'), null)).toBe('expired');
    expect(movementKindOf(recorded('reverse'), 'redeem')).toBe('restored');
    expect(movementKindOf(recorded('reverse'), 'earn')).toBe('reversed');
    expect(movementKindOf(recorded('reverse'), 'adjust')).toBe('reversed');
    expect(movementKindOf({ type: 'EntryRejected', data: { entry_id: 'LE-1', at: 'x' } }, null)).toBe('rejected');
    expect(movementKindOf({ type: 'EntryReleased', data: { entry_id: 'LE-1', at: 'x' } }, null)).toBeNull();
  });

  it('programme time: an entry\'s created_at, else the event\'s at', () => {
    expect(programmeTimeOf(recorded('earn'))).toBe('2026-01-01T00:00:00.000Z');
    expect(programmeTimeOf({ type: 'EntryReleased', data: { entry_id: 'LE-1', at: '2026-02-01T00:00:00.000Z' } })).toBe('2026-02-01T00:00:00.000Z');
  });

  it('a member\'s figures: negative available as a positive number; deleted members do not count', () => {
    const s = initialMemberState();
    s.exists = true;
    s.state = 'active';
    s.available = -250;
    s.pending = 40;
    expect(balanceFiguresOf(s)).toMatchObject({ available: -250, pending: 40, negative: 250, members: 1 });
    s.state = 'deleted';
    s.available = 10;
    expect(balanceFiguresOf(s)).toMatchObject({ negative: 0, members: 0 });
  });
});
