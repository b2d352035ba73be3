import type { MemberTier, Tier } from '@loyalty/contracts';
import {
  MS_PER_DAY, TierMetrics, addMonthsUtc, parseInstant, qualifies, startOfYearUtc, sumActivityInWindow, tierWindowStart,
} from '@loyalty/domain-earning';
import type { MemberEvent } from './member.events';
import { Activity, MemberAggregate, activityIndex, activityInWindow } from './member.state';

/**
 * Tiers (decisions §5): metrics `spend` (paid gross minus refunds), `points` (earned, net of
 * take-backs) and `orders` (paid, not cancelled) over each tier's window, from the member's
 * activity; the highest qualifying tier wins. Pure: `now` is the programme clock.
 */

/** What the member view and the TierChanged event carry of a tier. */
export const memberTierOf = (t: Tier): MemberTier => ({ name: t.name, level: t.level, earn_multiplier: t.earn_multiplier, benefits: t.benefits });

const sameTier = (a: MemberTier | null, b: MemberTier | null): boolean =>
  a === b || (a !== null && b !== null && a.name === b.name && a.level === b.level && a.earn_multiplier === b.earn_multiplier
    && JSON.stringify(a.benefits ?? {}) === JSON.stringify(b.benefits ?? {}));

/** Where the tier's window starts at `now`; a misconfigured window (custom without window_days) counts as unreachable. */
const windowStart = (tier: Tier, now: string): { ok: true; from: string | null } | { ok: false } => {
  try {
    return { ok: true, from: tierWindowStart(tier, now) };
  } catch {
    return { ok: false };
  }
};

/** The member's metrics over one tier's window at `now` (both ends inclusive). */
export const tierMetrics = (s: Pick<MemberAggregate, 'activity'> & Partial<Pick<MemberAggregate, 'activity_sums'>>, tier: Tier, now: string): TierMetrics | null => {
  const w = windowStart(tier, now);
  if (!w.ok) return null;
  // the aggregate's own (sorted, summed) activity: two binary searches; any other list: a pass over it
  if (s.activity_sums && s.activity_sums.spend.length === s.activity.length + 1) {
    return activityInWindow({ activity: s.activity, activity_sums: s.activity_sums }, w.from === null ? Number.NEGATIVE_INFINITY : parseInstant(w.from, 'from'), parseInstant(now, 'now'));
  }
  return sumActivityInWindow(s.activity, w.from, now);
};

/** The tier the member qualifies for at `now` (highest level; the first listed wins a tie), or null. */
export const qualifyingTier = (s: Pick<MemberAggregate, 'activity'>, tiers: readonly Tier[], now: string): Tier | null => {
  let best: Tier | null = null;
  for (const tier of tiers) {
    if (best !== null && tier.level <= best.level) continue;
    const m = tierMetrics(s, tier, now);
    if (m && qualifies(tier, m)) best = tier;
  }
  return best;
};

const withMs = (a: Activity): Activity => (Number.isFinite(a.ms) ? a : { ...a, ms: parseInstant(a.at, 'activity at') });

/** True for the aggregate's own list (evolve keeps it sorted); any other list is sorted on the fly. One numeric pass. */
const isSortedByMs = (list: readonly Activity[]): boolean => {
  for (let i = 0; i < list.length; i++) {
    if (!Number.isFinite(list[i].ms) || (i > 0 && list[i - 1].ms > list[i].ms)) return false;
  }
  return true;
};

const windowMs = (tier: Tier): number | null => {
  if (tier.window === 'rolling_365') return 365 * MS_PER_DAY;
  if (tier.window === 'custom' && tier.window_days != null && Number.isSafeInteger(tier.window_days) && tier.window_days > 0) {
    return tier.window_days * MS_PER_DAY;
  }
  return null;
};

/**
 * The earliest instant after `now` at which, with no further activity, the member could stop
 * qualifying for `tier` because its window moves; null when that never happens (lifetime). A
 * review that comes early is harmless (it keeps the tier and schedules the next one); new
 * activity only raises the metrics, so the instant is never late.
 */
export const tierReviewAt = (s: Pick<MemberAggregate, 'activity'>, tier: Tier, now: string): string | null => {
  switch (tier.window) {
    case 'lifetime':
      return null;
    case 'calendar_year':
      // the window restarts on 1 January
      return addMonthsUtc(startOfYearUtc(now), 12);
    case 'rolling_365':
    case 'custom': {
      const w = windowMs(tier);
      if (w === null) return null;
      const nowMs = parseInstant(now, 'now');
      // the aggregate keeps activity sorted by time: the window is a contiguous run of it
      const sorted = isSortedByMs(s.activity) ? s.activity : [...s.activity].map(withMs).sort((a, b) => a.ms - b.ms);
      const lo = activityIndex(sorted, nowMs - w, false);
      const end = activityIndex(sorted, nowMs, true);
      const metrics: TierMetrics = { spend: 0, points: 0, orders: 0 };
      for (let i = lo; i < end; i++) { metrics.spend += sorted[i].spend; metrics.points += sorted[i].points; metrics.orders += sorted[i].orders; }
      // activity leaves the window (at + window, inclusive) oldest first: find the first drop that disqualifies
      for (let i = lo; i < end;) {
        const ms = sorted[i].ms;
        while (i < end && sorted[i].ms === ms) {
          metrics.spend -= sorted[i].spend; metrics.points -= sorted[i].points; metrics.orders -= sorted[i].orders;
          i++;
        }
        if (!qualifies(tier, metrics)) return new Date(ms + w + 1).toISOString();
      }
      return null;
    }
    default: {
      const never: never = tier.window;
      throw new TypeError(`unknown tier window ${String(never)}`);
    }
  }
};

/**
 * Re-evaluates the member's tier at `now`: TierChanged when the qualifying tier differs from the
 * current one (upgrade or downgrade), TierReviewed when a due review keeps the tier (or the next
 * review must come earlier, e.g. after a refund), else nothing. Call it after every event that
 * moves tier metrics (the crossing order earns first, at the old rate) and from the sweep.
 */
export const decideTier = (s: MemberAggregate, tiers: readonly Tier[], now: string): MemberEvent[] => {
  if (!s.exists || s.state === 'deleted' || s.state === 'anonymised') return [];
  const target = qualifyingTier(s, tiers, now);
  const to = target ? memberTierOf(target) : null;
  const review_at = target ? tierReviewAt(s, target, now) : null;
  if (!sameTier(s.tier, to)) return [{ type: 'TierChanged', data: { from: s.tier, to, at: now, review_at } }];
  if (review_at === s.tier_review_at) return [];
  const nowMs = parseInstant(now, 'now');
  const due = s.tier_review_at !== null && parseInstant(s.tier_review_at, 'tier_review_at') <= nowMs;
  const sooner = review_at !== null && (s.tier_review_at === null || parseInstant(review_at, 'review_at') < parseInstant(s.tier_review_at, 'tier_review_at'));
  return due || sooner ? [{ type: 'TierReviewed', data: { at: now, review_at } }] : [];
};
