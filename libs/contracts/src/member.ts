/** Public API shapes (interface-spec "Resources"). */
export const MEMBER_STATES = ['prospect', 'registered', 'active', 'paused', 'suspended', 'deleted', 'anonymised'] as const;
export type MemberState = (typeof MEMBER_STATES)[number];

export interface Balances {
  pending_cents: number;
  available_cents: number;
  reserved_cents: number;
  spendable_cents: number;
  lifetime_earned_cents: number;
  lifetime_redeemed_cents: number;
}

export interface MemberTier {
  name: string;
  level: number;
  earn_multiplier: number;
  benefits: Record<string, unknown>;
}

export interface MemberView {
  id: string;
  email: string | null;
  phone: string | null;
  external_ref: string | null;
  state: MemberState;
  referral_code: string;
  tier: MemberTier | null;
  balances: Balances;
  expiring_30d_cents: number;
  enrolled_at: string | null;
  marketing_consent: boolean;
  accepted_terms_version: string | null;
  created_at: string;
}

export const LEDGER_ENTRY_TYPES = ['earn', 'redeem', 'expire', 'reverse', 'adjust'] as const;
export type LedgerEntryType = (typeof LEDGER_ENTRY_TYPES)[number];
export const LEDGER_ENTRY_STATUSES = ['pending', 'under_review', 'posted', 'reversed', 'rejected'] as const;
export type LedgerEntryStatus = (typeof LEDGER_ENTRY_STATUSES)[number];

/** What a ledger entry is, as the member stream records it and the API shows it. */
export interface LedgerEntryFields {
  id: string;
  type: LedgerEntryType;
  status: LedgerEntryStatus;
  amount_cents: number;
  reason_code: string | null;
  rule: string | null;
  parent_entry_id: string | null;
  release_at: string | null;
  expires_at: string | null;
  created_at: string;
}

export interface LedgerEntryView extends LedgerEntryFields {
  currency: string;
  order_ref?: string | null;
}
