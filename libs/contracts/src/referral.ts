/**
 * Referrals (interface-spec "Referral details", decisions §7): the public shapes, the referral
 * stream's events (other services, e.g. webhooks, react to them) and the ledger credit message.
 */
import type { TenantScoped } from './patterns';
import type { Timing } from './program';

export const REFERRAL_STATUSES = ['pending', 'held', 'qualified', 'rewarded', 'rejected'] as const;
export type ReferralStatus = (typeof REFERRAL_STATUSES)[number];

/** Why a fraud check put a referral on `held` (or, for `friend_already_ordered`, rejected it). */
export type ReferralHoldReason = 'same_phone' | 'same_email' | 'daily_limit';

/** A referral record: the decisions' fields plus what explains its status. */
export interface ReferralView {
  id: string;
  code: string;
  advocate_id: string;
  friend_id: string;
  status: ReferralStatus;
  created_at: string;
  hold_reasons: ReferralHoldReason[];
  /** the friend's order that qualified it (or that a held referral is waiting on) */
  order_ref: string | null;
  qualified_at: string | null;
  rewarded_at: string | null;
  rejected_at: string | null;
  /** ledger entries of the rewards (null when nothing was credited) */
  advocate_entry_id: string | null;
  friend_entry_id: string | null;
}

/** GET /v1/members/{id}/referral */
export interface ReferralDetails {
  code: string;
  link: string | null;
  stats: { pending: number; qualified: number; rewarded: number };
}

/** The programme's `referral` rule as it applied when the referral qualified. */
export interface ReferralTerms {
  rule_id: string | null;
  rule_version: number | null;
  min_order_cents: number;
  amount_cents: number;
  friend_amount_cents: number;
  expiry_months: number | null;
  timing: Timing | null;
}

export interface ReferralOrder { order_ref: string; gross_cents: number; paid_at: string }


export type ReferralEvent =
  | { type: 'ReferralCreated'; data: { referral_id: string; code: string; advocate_id: string; friend_id: string; status: 'pending' | 'held'; hold_reasons: ReferralHoldReason[]; at: string } }
  /** a held referral's qualifying order arrived: remembered until an admin decides */
  | { type: 'ReferralOrderMatched'; data: { order: ReferralOrder; terms: ReferralTerms; at: string } }
  /** `referral` carries the record as it is now (webhook `referral.qualified`) */
  | { type: 'ReferralQualified'; data: { order: ReferralOrder; terms: ReferralTerms; at: string; referral: ReferralView } }
  | { type: 'ReferralApproved'; data: { at: string; actor: string | null } }
  | { type: 'ReferralRejected'; data: { at: string; actor: string | null; reason: 'admin' | 'friend_already_ordered' } }
  | { type: 'ReferralRewarded'; data: { at: string; advocate_entry_id: string | null; friend_entry_id: string | null; advocate_amount_cents: number; friend_amount_cents: number } };

export type ReferralEventType = ReferralEvent['type'];

/**
 * `ledger.member.referral` (PATTERNS.ledger.referral): credit one referral reward as an `earn`
 * entry with rule `referral`. Idempotent by `cause`; a member who is deleted gets nothing
 * (`ledger_entry_id: null`); one who cannot earn now (paused, suspended) is refused with 409.
 */
export interface ReferralCreditRequest extends TenantScoped {
  member_id: string;
  /** `referral:<RF-…>:advocate` or `referral:<RF-…>:friend` */
  cause: string;
  amount_cents: number;
  expiry_months: number | null;
  /** timing `manual`: the entry waits `under_review` for an admin */
  manual: boolean;
}
export interface ReferralCreditReply { ledger_entry_id: string | null }
