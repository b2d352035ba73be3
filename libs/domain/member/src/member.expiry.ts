import type { ExpiryPolicy, Tier } from '@loyalty/contracts';
import { MS_PER_DAY, computeExpiresAt, inactivityExpiryAt, parseInstant } from '@loyalty/domain-earning';
import type { MemberEvent } from './member.events';
import { MemberAggregate, evolveMember, liveLots } from './member.state';
import { decideTier } from './member.tiers';

/**
 * Time-based behaviour of a member (decisions §5): return-window releases, lot expiry (dated lots
 * and the inactivity policy) and tier re-evaluation. Pure: `now` is the programme clock and entry
 * ids come from the caller. Every effect is idempotent: a released entry is no longer pending, an
 * expired lot is named by its cause `lot:<entry id>`.
 */

const NO_EXPIRY: ExpiryPolicy = { policy: 'none' };

/**
 * When credits recorded at `at` expire under the programme policy (a rule's `expiry_months`
 * overrides), or null. A misconfigured policy (fixed_days without days…) never expires rather
 * than failing the credit.
 */
export const expiresAtFor = (policy: ExpiryPolicy | null | undefined, ruleExpiryMonths: number | null, at: string): string | null => {
  try {
    return computeExpiresAt(policy ?? NO_EXPIRY, ruleExpiryMonths, at);
  } catch {
    return null;
  }
};

/** Under the inactivity policy: when every remaining lot expires if nothing happens first; else null. */
export const inactivityDeadline = (s: Pick<MemberAggregate, 'last_activity_at'>, policy: ExpiryPolicy | null | undefined): string | null => {
  if (policy?.policy !== 'inactivity' || !s.last_activity_at || policy.days == null) return null;
  try {
    return inactivityExpiryAt(s.last_activity_at, policy.days);
  } catch {
    return null;
  }
};

const ms = (iso: string): number => parseInstant(iso);

/** When a lot expires: its own date or the inactivity deadline, whichever comes first. */
const lotExpiry = (lotExpiresMs: number | null, deadlineMs: number | null): number | null => {
  if (lotExpiresMs === null) return deadlineMs;
  if (deadlineMs === null) return lotExpiresMs;
  return Math.min(lotExpiresMs, deadlineMs);
};

/**
 * Unspent points that expire within `days` of `now` (`expiring_30d_cents`): lots whose expiry
 * (own date or inactivity deadline) is at or before now + days. Lots already due but not yet swept
 * are included: they go at the next sweep.
 */
export const expiringWithinDays = (s: Pick<MemberAggregate, 'lots' | 'lot_head' | 'last_activity_at'>, policy: ExpiryPolicy | null | undefined, now: string, days = 30): number => {
  const limit = ms(now) + days * MS_PER_DAY;
  const deadline = inactivityDeadline(s, policy);
  const deadlineMs = deadline ? ms(deadline) : null;
  let sum = 0;
  for (const lot of liveLots(s)) {
    const at = lotExpiry(lot.expires_ms, deadlineMs);
    if (at !== null && at <= limit) sum += lot.remaining_cents;
  }
  return sum;
};

const gone = (s: MemberAggregate): boolean => !s.exists || s.state === 'deleted' || s.state === 'anonymised';

/** Pending `return_window` earns whose `release_at` has come: EntryReleased each. */
export const decideReleases = (s: MemberAggregate, now: string): MemberEvent[] => {
  if (gone(s)) return [];
  const nowMs = ms(now);
  const events: MemberEvent[] = [];
  for (const id of s.pending_earns) {
    const e = s.entries.get(id);
    if (!e || e.type !== 'earn' || e.bucket !== 'pending' || e.status !== 'pending' || !e.release_at) continue;
    if ((e.release_on ?? 'return_window') !== 'return_window') continue;
    if (ms(e.release_at) <= nowMs) events.push({ type: 'EntryReleased', data: { entry_id: e.id, at: now } });
  }
  return events;
};

/**
 * Lots that expire now: an `expire` entry per lot for its unspent remainder (spending took the
 * oldest lots first, so expiry only takes what is left), cause `lot:<entry id>`, parent the lot's
 * entry. Dated lots go when `expires_at` <= now (reason `expiry`); under the inactivity policy
 * every remaining lot goes once the member has been inactive for `days` (reason `inactivity`).
 * Never takes more than the spendable balance: a lot whose points an open reservation holds waits
 * for the reservation to be confirmed (spent, oldest lots first) or released.
 */
export const decideExpiries = (s: MemberAggregate, policy: ExpiryPolicy | null | undefined, now: string, newEntryId: () => string): MemberEvent[] => {
  if (gone(s)) return [];
  const nowMs = ms(now);
  const deadline = inactivityDeadline(s, policy);
  const inactive = deadline !== null && ms(deadline) <= nowMs;
  // points held by an open checkout reservation are not taken: the lot waits until it resolves
  let budget = Math.max(0, s.available - s.reserved);
  const events: MemberEvent[] = [];
  for (const lot of liveLots(s)) {
    const cause = `lot:${lot.entry_id}`;
    if (lot.expired) continue;
    const dated = lot.expires_ms !== null && lot.expires_ms <= nowMs;
    if (!dated && !inactive) continue;
    if (lot.remaining_cents > budget && s.reserved > 0) continue;
    const amount = Math.min(lot.remaining_cents, budget);
    if (amount <= 0) continue;
    budget -= amount;
    events.push({
      type: 'EntryRecorded',
      data: {
        id: newEntryId(), type: 'expire', status: 'posted', amount_cents: -amount, reason_code: dated ? 'expiry' : 'inactivity',
        rule: null, parent_entry_id: lot.entry_id, release_at: null, expires_at: null, created_at: now, order_ref: null, cause,
      },
    });
  }
  return events;
};

/** Deep copy of a member state, so a multi-step decision can fold its own events without touching the caller's state. */
export const cloneMember = (s: MemberAggregate): MemberAggregate => structuredClone(s);

export interface SweepSettings { tiers: readonly Tier[]; expiry: ExpiryPolicy | null | undefined; /** days between erasure and anonymisation (default 0) */ erasureGraceDays?: number }

/** The retention job (decisions §4): an erased member becomes `anonymised` once the erasure grace has passed. */
export const decideAnonymisation = (s: MemberAggregate, graceDays: number, now: string): MemberEvent[] =>
  s.exists && s.state === 'deleted' && s.erased_at && ms(s.erased_at) + Math.max(0, graceDays) * 86_400_000 <= ms(now)
    ? [{ type: 'MemberAnonymised', data: { at: now } }]
    : [];

/**
 * Everything due for one member at `now`, in order: releases, then expiries (a released lot that
 * is already past its date expires too), then the tier (whose metrics the first two do not move).
 */
export const decideSweep = (s: MemberAggregate, settings: SweepSettings, now: string, newEntryId: () => string): MemberEvent[] => {
  if (s.exists && s.state === 'deleted') return decideAnonymisation(s, settings.erasureGraceDays ?? 0, now);
  if (gone(s)) return [];
  const work = cloneMember(s);
  const out: MemberEvent[] = [];
  const apply = (events: MemberEvent[]) => {
    for (const e of events) {
      evolveMember(work, e);
      out.push(e);
    }
  };
  apply(decideReleases(work, now));
  apply(decideExpiries(work, settings.expiry, now, newEntryId));
  apply(decideTier(work, settings.tiers, now));
  return out;
};
