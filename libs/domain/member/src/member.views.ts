import type { ExpiryPolicy, LedgerEntryView, MemberView } from '@loyalty/contracts';
import { expiringWithinDays } from './member.expiry';
import { Entry, MemberAggregate, balancesOf } from './member.state';

/** The public Member shape without the personal data, which only the ledger's vault can open. */
export type MemberSummary = Omit<MemberView, 'email' | 'phone' | 'external_ref'>;

/** One definition of the public member and ledger-entry shapes, for the API and for webhooks. */
export const memberSummaryOf = (s: MemberAggregate, nowIso: string, expiry: ExpiryPolicy | null | undefined): MemberSummary => ({
  id: s.id,
  state: s.state,
  referral_code: s.referral_code,
  tier: s.tier,
  balances: balancesOf(s),
  expiring_30d_cents: expiringWithinDays(s, expiry, nowIso, 30),
  enrolled_at: s.enrolled_at,
  marketing_consent: s.marketing_consent,
  accepted_terms_version: s.accepted_terms_version,
  created_at: s.created_at,
});

export const entryViewOf = (e: Entry, currency: string): LedgerEntryView => ({
  id: e.id,
  type: e.type,
  status: e.status,
  amount_cents: e.amount_cents,
  currency,
  reason_code: e.reason_code,
  rule: e.rule,
  parent_entry_id: e.parent_entry_id,
  release_at: e.release_at,
  expires_at: e.expires_at,
  created_at: e.created_at,
  order_ref: e.order_ref,
});
