import type { LedgerEntryView, MemberView } from '@loyalty/contracts';
import { Entry, MemberAggregate, balancesOf } from '@loyalty/domain-member';
import type { Pii } from '../pii/pii.vault';

const DAY = 86_400_000;

/** Unspent points whose expiry falls within the next `days` days. */
export const expiringWithin = (s: MemberAggregate, now: Date, days = 30): number => {
  const limit = now.getTime() + days * DAY;
  let sum = 0;
  for (const lot of s.lots) {
    if (lot.remaining_cents <= 0 || !lot.expires_at) continue;
    const t = Date.parse(lot.expires_at);
    if (t > now.getTime() && t <= limit) sum += lot.remaining_cents;
  }
  return sum;
};

export const toMemberView = (s: MemberAggregate, pii: Pii, now: Date): MemberView => ({
  id: s.id,
  email: pii.email,
  phone: pii.phone,
  external_ref: pii.external_ref,
  state: s.state,
  referral_code: s.referral_code,
  tier: s.tier,
  balances: balancesOf(s),
  expiring_30d_cents: expiringWithin(s, now),
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
