import type { LedgerEntryFields, MemberState, MemberTier } from '@loyalty/contracts';

/** Encrypted personal data: only the service holding the member's key can read it (crypto-shredding). */
export interface SealedPii { v: 1; kid: string; iv: string; tag: string; data: string }

/** Which balance an entry moves. `pending` covers pending and under-review earns. */
export type Bucket = 'available' | 'pending' | 'none';

export interface EntryData extends LedgerEntryFields {
  order_ref: string | null;
  /** what caused it (event key, redemption id…), for idempotency and explanations */
  cause: string | null;
  actor?: string | null;
  note?: string | null;
  /** release condition for pending earns: the order event that releases them */
  release_on?: 'fulfilled' | 'delivered' | 'return_window' | 'manual' | null;
  batch_id?: string | null;
  /**
   * An order's earn (issue 13): the order stream keeps this earn's facts (`OrderEarn`), so the
   * member's decision state lets it go once settled and past the retention. Earns recorded before
   * issue 13 lack it (their order streams hold no facts) and stay in the state.
   */
  order_facts?: boolean;
  /**
   * A take-back of an order's earn (issue 13): the earn as the decision saw it just before, so a
   * state that has let the settled earn go restores it to apply the take-back exactly.
   */
  parent_earn?: EarnCopy | null;
  /**
   * The order's tier activity, recorded with the last entry of the order step that produced it
   * (issue 7): one member event for an order instead of two. Folded as an OrderActivityRecorded at
   * the entry's `created_at`; an order step that records no entry still records its own
   * OrderActivityRecorded. Never part of the entry itself.
   */
  activity?: OrderActivity;
}

/** A tier activity delta: spend (paid gross minus refunds) and orders (paid, not cancelled), once per cause. */
export interface OrderActivity { spend_cents: number; orders: number; /** idempotency: a retried order event finds it */ cause: string }

/** An earn as an order's decision saw it (status and release_at current) and what was taken back from it so far. */
export interface EarnCopy extends Omit<EntryData, 'parent_earn' | 'activity'> { reversed_cents: number }

export type MemberEvent =
  | { type: 'MemberCreated'; data: { member_id: string; state: 'prospect' | 'registered'; referral_code: string; pii: SealedPii; marketing_consent: boolean; accepted_terms_version: string | null; at: string } }
  | { type: 'MemberEnrolled'; data: { accepted_terms_version: string | null; marketing_consent: boolean; at: string } }
  | { type: 'ProfileUpdated'; data: { pii?: SealedPii; marketing_consent?: boolean; accepted_terms_version?: string | null; at: string } }
  | { type: 'MemberStateChanged'; data: { from: MemberState; to: MemberState; reason: string; at: string } }
  | { type: 'EntryRecorded'; data: EntryData }
  | { type: 'EntryReleased'; data: { entry_id: string; at: string } }
  | { type: 'EntryRejected'; data: { entry_id: string; at: string; actor?: string | null } }
  /** a pending earn's release time became known (return window: fulfilment time + return_window_days) */
  | { type: 'EntryReleaseScheduled'; data: { entry_id: string; release_at: string; at: string } }
  /** review_at: when the tier's window may next drop the member below it (the sweep re-evaluates then); null = never */
  | { type: 'TierChanged'; data: { from: MemberTier | null; to: MemberTier | null; at: string; review_at?: string | null } }
  /** a due tier review kept the tier; the next review moves */
  | { type: 'TierReviewed'; data: { at: string; review_at: string | null } }
  | { type: 'OrderActivityRecorded'; data: { order_ref: string; at: string; spend_cents: number; orders: number; /** idempotency: a retried order event finds it */ cause?: string } }
  | { type: 'ReservationOpened'; data: { reservation_id: string; amount_cents: number; cart_ref: string | null; expires_at: string; at: string; cause?: string; /** the request's fingerprint, when its Idempotency-Key was claimed with it */ fingerprint?: string } }
  | { type: 'ReservationConfirmed'; data: { reservation_id: string; order_ref: string; entry_id: string; at: string } }
  | { type: 'ReservationReleased'; data: { reservation_id: string; at: string; reason: 'released' | 'expired' | 'erasure' } }
  | { type: 'VoucherIssued'; data: { redemption_id: string; code: string; mode: 'voucher' | 'direct'; amount_cents: number; entry_id: string; order_ref: string | null; expires_at: string | null; at: string; /** the request's fingerprint, when its Idempotency-Key was claimed with it */ fingerprint?: string } }
  | { type: 'VoucherUsed'; data: { redemption_id: string; order_ref: string; at: string } }
  | { type: 'VoucherRestored'; data: { redemption_id: string; reverse_entry_id: string; reason: 'voided' | 'expired' | 'erasure'; at: string } }
  | { type: 'MemberErased'; data: { at: string } }
  /** the retention job, after the programme's erasure grace (decisions §4): deleted → anonymised */
  | { type: 'MemberAnonymised'; data: { at: string } };

export type MemberEventType = MemberEvent['type'];
