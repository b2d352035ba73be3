import type { ExpiryPolicy, LedgerEntryView, MemberView } from '@loyalty/contracts';
import { Entry, MemberAggregate, entryViewOf, expiringWithinDays, memberSummaryOf } from '@loyalty/domain-member';
import type { Pii } from '../pii/pii.vault';

/** Unspent points whose expiry (lot date, or the inactivity deadline under that policy) falls within the next `days` days. */
export const expiringWithin = (s: MemberAggregate, now: Date, days = 30, expiry?: ExpiryPolicy | null): number =>
  expiringWithinDays(s, expiry, now.toISOString(), days);

export const toMemberView = (s: MemberAggregate, pii: Pii, now: Date, expiry?: ExpiryPolicy | null): MemberView => {
  const { id, ...rest } = memberSummaryOf(s, now.toISOString(), expiry);
  return { id, email: pii.email, phone: pii.phone, external_ref: pii.external_ref, ...rest };
};

export const toEntryView = (e: Entry, currency: string): LedgerEntryView => entryViewOf(e, currency);
