import type { Tier } from '@loyalty/contracts';
import { MemberEvent } from './member.events';
import { decideTier, qualifyingTier, tierReviewAt } from './member.tiers';
import { T0, at, created, entry, fold, idOf } from './testing/member.builder';

const tier = (over: Partial<Tier>): Tier => ({
  name: 'Tier', level: 1, threshold_type: 'spend', threshold_value: 0, criteria: [], criteria_mode: 'all', window: 'lifetime',
  window_days: null, earn_multiplier: 1, benefits: {}, ...over,
});
const silver = tier({ name: 'Silver', level: 1, threshold_value: 1000, window: 'rolling_365', earn_multiplier: 1.25 });
const gold = tier({ name: 'Gold', level: 2, threshold_value: 5000, window: 'rolling_365', earn_multiplier: 1.5, benefits: { lounge: true } });
const tiers = [silver, gold];

const order = (spend: number, when: string, orders = 1): MemberEvent => ({ type: 'OrderActivityRecorded', data: { order_ref: `o-${when}`, at: when, spend_cents: spend, orders } });

describe('decideTier', () => {
  it('upgrades as soon as the metric reaches the threshold (>=), to the highest qualifying tier', () => {
    const s = fold([created(), order(4999, at(0))]);
    const first = decideTier(s, tiers, at(0));
    expect(first).toEqual([{ type: 'TierChanged', data: { from: null, to: { name: 'Silver', level: 1, earn_multiplier: 1.25, benefits: {} }, at: at(0), review_at: expect.any(String) } }]);
    fold(first, s);
    fold([order(1, at(1))], s);
    const second = decideTier(s, tiers, at(1));
    expect(second).toMatchObject([{ type: 'TierChanged', data: { from: { name: 'Silver' }, to: { name: 'Gold', level: 2, earn_multiplier: 1.5, benefits: { lounge: true } } } }]);
    fold(second, s);
    expect(s.tier?.name).toBe('Gold');
    expect(decideTier(s, tiers, at(2))).toEqual([]);
  });

  it('downgrades when the rolling window leaves the qualifying activity behind, at the scheduled review', () => {
    const s = fold([created(), order(3000, at(0)), order(3000, at(100))]);
    fold(decideTier(s, tiers, at(100)), s);
    expect(s.tier?.name).toBe('Gold');
    // the first order leaves the 365-day window just after at(365)
    expect(s.tier_review_at).toBe(new Date(Date.parse(at(365)) + 1).toISOString());
    expect(decideTier(s, tiers, at(365))).toEqual([]);
    const down = decideTier(s, tiers, s.tier_review_at!);
    expect(down).toMatchObject([{ type: 'TierChanged', data: { from: { name: 'Gold' }, to: { name: 'Silver' } } }]);
    fold(down, s);
    expect(s.tier_review_at).toBe(new Date(Date.parse(at(465)) + 1).toISOString());
    const out = decideTier(s, tiers, at(466));
    expect(out).toMatchObject([{ type: 'TierChanged', data: { from: { name: 'Silver' }, to: null, review_at: null } }]);
  });

  it('a due review that keeps the tier schedules the next one', () => {
    const s = fold([created(), order(6000, at(0))]);
    fold(decideTier(s, tiers, at(0)), s);
    fold([order(6000, at(200))], s);
    const review = decideTier(s, tiers, at(366));
    expect(review).toEqual([{ type: 'TierReviewed', data: { at: at(366), review_at: new Date(Date.parse(at(565)) + 1).toISOString() } }]);
    fold(review, s);
    expect(decideTier(s, tiers, at(367))).toEqual([]);
  });

  it('a refund lowering spend below the threshold downgrades at once and brings the review forward', () => {
    const s = fold([created(), order(6000, at(0))]);
    fold(decideTier(s, tiers, at(0)), s);
    fold([order(-2000, at(3), 0)], s);
    expect(decideTier(s, tiers, at(3))).toMatchObject([{ type: 'TierChanged', data: { to: { name: 'Silver' } } }]);
  });

  it('criteria all / any over points and orders; points are net of take-backs', () => {
    const vip = tier({ name: 'VIP', level: 3, criteria: [{ metric: 'points', threshold: 500 }, { metric: 'orders', threshold: 2 }], criteria_mode: 'all' });
    const any = tier({ name: 'Any', level: 2, criteria: [{ metric: 'points', threshold: 500 }, { metric: 'orders', threshold: 2 }], criteria_mode: 'any' });
    const earn = entry({ type: 'earn', amount_cents: 500, created_at: at(0) });
    const s = fold([created(), order(100, at(0)), earn]);
    expect(qualifyingTier(s, [vip, any], at(0))?.name).toBe('Any');
    fold([order(100, at(1))], s);
    expect(qualifyingTier(s, [vip, any], at(1))?.name).toBe('VIP');
    fold([entry({ type: 'reverse', amount_cents: -1, parent_entry_id: idOf(earn), created_at: at(2) })], s);
    expect(qualifyingTier(s, [vip, any], at(2))?.name).toBe('Any');
  });

  it('windows: lifetime never reviews, calendar_year reviews on 1 January, custom uses window_days', () => {
    const s = fold([created(), order(1000, T0)]);
    expect(tierReviewAt(s, tier({ window: 'lifetime', threshold_value: 1000 }), T0)).toBeNull();
    expect(tierReviewAt(s, tier({ window: 'calendar_year', threshold_value: 1000 }), T0)).toBe('2026-01-01T00:00:00.000Z');
    expect(tierReviewAt(s, tier({ window: 'custom', window_days: 30, threshold_value: 1000 }), T0)).toBe(new Date(Date.parse(at(30)) + 1).toISOString());
    // a custom window without window_days is a misconfiguration: the tier is out of reach, nothing throws
    expect(qualifyingTier(s, [tier({ window: 'custom', window_days: null, threshold_value: 0 })], T0)).toBeNull();
    expect(qualifyingTier(s, [tier({ window: 'calendar_year', threshold_value: 1000 })], '2026-01-01T00:00:00.000Z')).toBeNull();
  });

  it('does nothing for an erased member', () => {
    const s = fold([created(), order(9000, T0), { type: 'MemberErased', data: { at: T0 } }]);
    expect(decideTier(s, tiers, T0)).toEqual([]);
  });
});
