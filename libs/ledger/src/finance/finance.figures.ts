import type { MemberAggregate, MemberEvent } from '@loyalty/domain-member';

/**
 * Closing the books (decisions §9a): the pure arithmetic. Every figure is an integer number of
 * minor units; nothing here touches a float.
 */

/** What one member contributes to the programme's liability at an instant. */
export interface BalanceFigures {
  available: number;
  pending: number;
  /** the member's negative available balance as a positive number (0 when available ≥ 0) */
  negative: number;
  /** 1 while the member counts (exists, neither deleted nor anonymised) */
  members: number;
  issued: number;
  lifetime_redeemed: number;
}

export const ZERO_FIGURES: BalanceFigures = { available: 0, pending: 0, negative: 0, members: 0, issued: 0, lifetime_redeemed: 0 };

export const balanceFiguresOf = (s: Pick<MemberAggregate, 'available' | 'pending' | 'exists' | 'state' | 'lifetime_earned' | 'lifetime_redeemed'>): BalanceFigures => ({
  available: s.available,
  pending: s.pending,
  negative: s.available < 0 ? -s.available : 0,
  members: s.exists && s.state !== 'deleted' && s.state !== 'anonymised' ? 1 : 0,
  issued: s.lifetime_earned,
  lifetime_redeemed: s.lifetime_redeemed,
});

/** Movements by kind, as positive figures except `adjusted` (signed). */
export interface Movements {
  earned: number; adjusted: number; redeemed: number; restored: number; expired: number; reversed: number; rejected: number;
}
export const MOVEMENT_KINDS = ['earned', 'adjusted', 'redeemed', 'restored', 'expired', 'reversed', 'rejected'] as const;
export type MovementKind = (typeof MOVEMENT_KINDS)[number];
export const ZERO_MOVEMENTS: Movements = { earned: 0, adjusted: 0, redeemed: 0, restored: 0, expired: 0, reversed: 0, rejected: 0 };

/** How a movement of each kind moves outstanding: +1 adds to it, −1 takes from it (the roll-forward identity). */
export const MOVEMENT_SIGN: Record<MovementKind, 1 | -1> = {
  earned: 1, adjusted: 1, redeemed: -1, restored: 1, expired: -1, reversed: -1, rejected: -1,
};

/** opening.outstanding + earned + adjusted − redeemed + restored − expired − reversed − rejected */
export const outstandingMovement = (m: Movements): number =>
  MOVEMENT_KINDS.reduce((sum, k) => sum + MOVEMENT_SIGN[k] * m[k], 0);

/**
 * The kind of a member event's change of outstanding (available + pending), or null when the
 * event cannot change it. The change is measured on the member's state (before and after the same
 * evolve the aggregate uses), so what is booked is always what the balance did: the identity
 * opening + movements = closing holds by construction, also in edge cases (a take-back of an
 * earn that was already rejected moves nothing and books nothing).
 */
export const movementKindOf = (event: MemberEvent, parentType: string | null): MovementKind | null => {
  switch (event.type) {
    case 'EntryRecorded':
      switch (event.data.type) {
        case 'earn': return 'earned';
        case 'adjust': return 'adjusted';
        case 'redeem': return 'redeemed';
        case 'expire': return 'expired';
        case 'reverse':
          if (parentType === 'redeem') return 'restored';
          if (parentType === 'earn' || parentType === 'adjust') return 'reversed';
          // reinstating an expiry reduces what expired (and breakage)
          if (parentType === 'expire') return 'expired';
          // a reverse with nothing to point at is a correction like an adjustment
          return 'adjusted';
        default: return 'adjusted';
      }
    case 'EntryRejected': return 'rejected';
    case 'EntryReleased': return null; // pending → available: outstanding does not move
    default: return null;
  }
};

/** Books a change of outstanding `delta` under `kind` (positive figures for the debit kinds). */
export const bookMovement = (kind: MovementKind, delta: number): Movements => ({ ...ZERO_MOVEMENTS, [kind]: MOVEMENT_SIGN[kind] * delta });

/** The programme time of a member event: an entry's created_at, else the event's `at`. */
export const programmeTimeOf = (event: { type: string; data: unknown }): string | null => {
  const d = event.data as { created_at?: string; at?: string } | null;
  if (!d) return null;
  if (event.type === 'EntryRecorded') return d.created_at ?? null;
  return d.at ?? null;
};

export interface Position4 { outstanding_cents: number; available_cents: number; pending_cents: number; members: number }

export interface Breakage { rate_bps: number; expected_redemption_cents: number }

/**
 * decisions §9a: rate_bps = floor(10000 × expired ÷ (expired + redeemed − restored)) over the whole
 * history up to T (0 when the divisor is not positive); expected_redemption_cents =
 * outstanding − floor(outstanding × rate_bps ÷ 10000). BigInt so no product can lose precision.
 * For a negative outstanding (members in debt) floor rounds toward −∞, exactly as written.
 */
export const breakageOf = (history: { expired: number; redeemed: number; restored: number }, closingOutstanding: number): Breakage => {
  const expired = BigInt(history.expired);
  const divisor = expired + BigInt(history.redeemed) - BigInt(history.restored);
  let rate = 0n;
  if (divisor > 0n && expired > 0n) rate = floorDiv(10000n * expired, divisor);
  if (rate > 10000n) rate = 10000n;
  if (rate < 0n) rate = 0n;
  const out = BigInt(closingOutstanding);
  return { rate_bps: Number(rate), expected_redemption_cents: Number(out - floorDiv(out * rate, 10000n)) };
};

const floorDiv = (a: bigint, b: bigint): bigint => {
  const q = a / b;
  return (a % b !== 0n && (a < 0n) !== (b < 0n)) ? q - 1n : q;
};
