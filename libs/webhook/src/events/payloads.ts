import type { Balances, ExpiryPolicy, LedgerEntryView, MemberTier, WebhookEventKind } from '@loyalty/contracts';
import { Entry, MemberAggregate, MemberEvent, MemberSummary, Voucher, entryViewOf, memberSummaryOf } from '@loyalty/domain-member';
import { RedemptionView, redemptionView } from '@loyalty/domain-redemption';

/**
 * What a webhook's `data` carries (decisions §8): the affected resource in its public API shape.
 * Member payloads leave out email, phone and external_ref: they are sealed per member in the
 * ledger's vault (crypto-shredding), which this service does not hold; receivers fetch
 * GET /v1/members/{id} when they need them.
 */
export type { MemberSummary };

/** A redemption in its public API shape, as the redemption service answers it. */
export type RedemptionPayload = RedemptionView;

export interface ProgramInfo { currency: string; expiry: ExpiryPolicy | null; expiryWarningDays: number }

export const memberSummary = (s: MemberAggregate, now: string, expiry: ExpiryPolicy | null): MemberSummary => memberSummaryOf(s, now, expiry);

export const entryPayload = (e: Entry, currency: string, memberId: string): LedgerEntryView & { member_id: string } => ({
  ...entryViewOf(e, currency),
  member_id: memberId,
});

export const redemptionPayload = (v: Voucher, memberId: string): RedemptionPayload => redemptionView(v, memberId);

/** When a member event happened (its own timestamp; the programme clock at the time). */
export const eventTime = (e: MemberEvent, fallback: string): string => {
  const d = e.data as { at?: string; created_at?: string };
  return (e.type === 'EntryRecorded' ? d.created_at : d.at) ?? fallback;
};

export const sameBalances = (a: Balances, b: Balances): boolean =>
  a.pending_cents === b.pending_cents && a.available_cents === b.available_cents && a.reserved_cents === b.reserved_cents &&
  a.spendable_cents === b.spendable_cents && a.lifetime_earned_cents === b.lifetime_earned_cents &&
  a.lifetime_redeemed_cents === b.lifetime_redeemed_cents;

/** One webhook event a member event gives rise to; `key` is unique per source event. */
export interface MappedEvent { kind: WebhookEventKind; key: string; data: unknown }

/**
 * The webhook events of one member event, except `balance.updated` (the projection emits that once
 * per append whose balances moved) and `reward.expiring_soon` (a sweep). `before` is what the
 * aggregate looked like before the event; `after` is the folded state including it.
 */
export const mapMemberEvent = (
  e: MemberEvent,
  before: { tier: MemberTier | null },
  after: MemberAggregate,
  at: string,
  program: ProgramInfo,
): MappedEvent[] => {
  const memberId = after.id;
  switch (e.type) {
    case 'MemberCreated':
      return e.data.state === 'registered'
        ? [{ kind: 'member.enrolled', key: 'member.enrolled', data: memberSummary(after, at, program.expiry) }]
        : [];
    case 'MemberEnrolled':
      return [{ kind: 'member.enrolled', key: 'member.enrolled', data: memberSummary(after, at, program.expiry) }];
    case 'EntryRecorded': {
      const entry = after.entries.get(e.data.id);
      return entry ? [{ kind: 'ledger.entry.created', key: `ledger.entry.created:${entry.id}`, data: entryPayload(entry, program.currency, memberId) }] : [];
    }
    case 'TierChanged':
      return [{ kind: 'tier.changed', key: 'tier.changed', data: { member_id: memberId, from: e.data.from ?? before.tier, to: e.data.to } }];
    case 'VoucherIssued': {
      const v = after.vouchers.get(e.data.redemption_id);
      if (!v) return [];
      const created: MappedEvent = { kind: 'redemption.created', key: `redemption.created:${v.id}`, data: redemptionPayload(v, memberId) };
      // a direct redemption is created and finalised in one call: both notices, the same resource
      return v.mode === 'direct'
        ? [created, { kind: 'redemption.confirmed', key: `redemption.confirmed:${v.id}`, data: redemptionPayload(v, memberId) }]
        : [created];
    }
    case 'VoucherUsed': {
      const v = after.vouchers.get(e.data.redemption_id);
      return v ? [{ kind: 'redemption.confirmed', key: `redemption.confirmed:${v.id}`, data: redemptionPayload(v, memberId) }] : [];
    }
    case 'VoucherRestored': {
      // voided, expired (TTL) or voided by erasure: the points are back; `status` tells which
      const v = after.vouchers.get(e.data.redemption_id);
      return v ? [{ kind: 'redemption.voided', key: `redemption.voided:${v.id}`, data: redemptionPayload(v, memberId) }] : [];
    }
    case 'ProfileUpdated':
    case 'MemberStateChanged':
    case 'EntryReleased':
    case 'EntryRejected':
    case 'EntryReleaseScheduled':
    case 'TierReviewed':
    case 'OrderActivityRecorded':
    case 'ReservationOpened':
    case 'ReservationConfirmed':
    case 'ReservationReleased':
    case 'MemberErased':
    case 'MemberAnonymised':
      return [];
    default: {
      const never: never = e;
      return never;
    }
  }
};
