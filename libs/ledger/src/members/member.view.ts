import type { ExpiryPolicy, LedgerEntryView, MemberView } from '@loyalty/contracts';
import { Entry, MemberAggregate, balancesOf, expiringWithinDays } from '@loyalty/domain-member';
import type { Pii } from '../pii/pii.vault';

/** Unspent points whose expiry (lot date, or the inactivity deadline under that policy) falls within the next `days` days. */
export const expiringWithin = (s: MemberAggregate, now: Date, days = 30, expiry?: ExpiryPolicy | null): number =>
  expiringWithinDays(s, expiry, now.toISOString(), days);

export const toMemberView = (s: MemberAggregate, pii: Pii, now: Date, expiry?: ExpiryPolicy | null): MemberView => ({
  id: s.id,
  email: pii.email,
  phone: pii.phone,
  external_ref: pii.external_ref,
  state: s.state,
  referral_code: s.referral_code,
  tier: s.tier,
  balances: balancesOf(s),
  expiring_30d_cents: expiringWithin(s, now, 30, expiry),
  enrolled_at: s.enrolled_at,
  marketing_consent: s.marketing_consent,
  accepted_terms_version: s.accepted_terms_version,
  created_at: s.created_at,
});

export const toEntryView = (e: Entry, currency: string): LedgerEntryView => ({
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
