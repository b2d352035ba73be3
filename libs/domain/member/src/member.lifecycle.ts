import type { EntryData, MemberEvent, SealedPii } from './member.events';
import type { MemberAggregate } from './member.state';
import { MemberRuleError, decideAdjust, withinMoneyLimits } from './member.decider';
import { earningRefusal } from './member.earning';

/**
 * A member's life on its own stream: creation, profile and enrolment, manual adjustments,
 * referral rewards and erasure. Pure: the clock (`at`), ids and sealed personal data arrive in the
 * command; the service loads the state, calls one of these and appends what it returns.
 */

const gone = (s: MemberAggregate): boolean => !s.exists || s.state === 'deleted' || s.state === 'anonymised';

export interface CreateMemberCommand {
  member_id: string;
  state: 'prospect' | 'registered';
  /** drawn by the caller (Crockford base32, decisions §1) */
  referral_code: string;
  pii: SealedPii;
  marketing_consent: boolean;
  accepted_terms_version: string | null;
  at: string;
}

/** The member's creation; nothing when the stream already holds a member (a retry or a race lost). */
export const decideCreate = (s: MemberAggregate, cmd: CreateMemberCommand): MemberEvent[] =>
  s.exists ? [] : [{ type: 'MemberCreated', data: { ...cmd } }];

export interface ProfileCommand {
  /** the newly sealed personal data, when it changed */
  pii?: SealedPii;
  marketing_consent?: boolean;
  accepted_terms_version?: string;
  /** enrol a prospect (POST /v1/members); otherwise only accepting the terms enrols it */
  enrol: boolean;
  at: string;
}

/**
 * A profile change, and the enrolment of a prospect it brings: `enrolled` says whether this
 * command enrolled the member (the caller adds its signup bonus after the enrolment).
 */
export const decideProfile = (s: MemberAggregate, cmd: ProfileCommand): { events: MemberEvent[]; enrolled: boolean } => {
  if (gone(s)) throw new MemberRuleError('not-found', 'member not found');
  const events: MemberEvent[] = [];
  const profile: Extract<MemberEvent, { type: 'ProfileUpdated' }>['data'] = { at: cmd.at };
  if (cmd.pii) profile.pii = cmd.pii;
  if (cmd.marketing_consent !== undefined && cmd.marketing_consent !== s.marketing_consent) profile.marketing_consent = cmd.marketing_consent;
  if (cmd.accepted_terms_version !== undefined && cmd.accepted_terms_version !== s.accepted_terms_version && !(cmd.enrol && s.state === 'prospect')) {
    profile.accepted_terms_version = cmd.accepted_terms_version;
  }
  if (Object.keys(profile).length > 1) events.push({ type: 'ProfileUpdated', data: profile });
  const enrolled = s.state === 'prospect' && (cmd.enrol || cmd.accepted_terms_version !== undefined);
  if (enrolled) {
    events.push({ type: 'MemberEnrolled', data: {
      accepted_terms_version: cmd.accepted_terms_version ?? null, marketing_consent: cmd.marketing_consent ?? s.marketing_consent, at: cmd.at,
    } });
  }
  return { events, enrolled };
};

export interface AdjustmentCommand {
  /** the entry id this adjustment gets when it is new (drawn by the caller) */
  entryId: string;
  amount_cents: number;
  reason_code: string;
  note: string | null;
  /** `adjust:<idempotency key>`: a retry finds the entry it made */
  cause: string;
  actor: string | null;
  expires_at: string | null;
  at: string;
}

/**
 * A manual adjustment, once per cause: a retry answers the entry it made; the same key for a
 * different adjustment is the caller's error (`idempotency-key-reused`).
 */
export const decideAdjustment = (s: MemberAggregate, cmd: AdjustmentCommand): { events: MemberEvent[]; entryId: string } => {
  const done = s.causes.get(cmd.cause);
  if (done?.length) {
    const e = s.entries.get(done[0]);
    if (e && (e.amount_cents !== cmd.amount_cents || e.reason_code !== cmd.reason_code)) {
      throw new MemberRuleError('idempotency-key-reused', 'This idempotency_key was used for a different adjustment');
    }
    return { events: [], entryId: done[0] };
  }
  if (gone(s)) throw new MemberRuleError('not-found', 'member not found');
  return { events: decideAdjust(s, cmd), entryId: cmd.entryId };
};

export interface ReferralRewardCommand {
  /** the entry id the reward gets when it is new (drawn by the caller) */
  entryId: string;
  amount_cents: number;
  /** once per cause, ever */
  cause: string;
  /** held for review (`under_review`, released by hand) */
  manual: boolean;
  expires_at: string | null;
  at: string;
}

/**
 * A referral reward (decisions §7): one `earn` entry, rule `referral`, once per cause; nothing for
 * a member who is gone (`entryId` null). A member who may not earn now is refused.
 */
export const decideReferralReward = (s: MemberAggregate, cmd: ReferralRewardCommand): { events: MemberEvent[]; entryId: string | null } => {
  const done = s.causes.get(cmd.cause);
  if (done?.length) return { events: [], entryId: done[0] };
  if (gone(s)) return { events: [], entryId: null };
  const refusal = earningRefusal(s);
  if (refusal) throw new MemberRuleError('invalid-state', refusal);
  const entry: EntryData = {
    id: cmd.entryId, type: 'earn', status: cmd.manual ? 'under_review' : 'posted', amount_cents: cmd.amount_cents, reason_code: 'referral', rule: 'referral',
    parent_entry_id: null, release_at: null, expires_at: cmd.expires_at, created_at: cmd.at, order_ref: null,
    cause: cmd.cause, release_on: cmd.manual ? 'manual' : null,
  };
  return { events: withinMoneyLimits(s, [{ type: 'EntryRecorded', data: entry }]), entryId: cmd.entryId };
};

/**
 * Erasure (DELETE /v1/members/{id}): releases open reservations, voids open vouchers (a `reverse`
 * entry each), forfeits the balance (`expire`, reason `erasure`) and marks the member erased.
 * `entryIds` hands out fresh entry ids (one per restored voucher, one for the forfeit). Nothing
 * for a member already erased.
 */
export const decideErase = (s: MemberAggregate, cmd: { member_id: string; at: string; entryIds: () => string }): MemberEvent[] => {
  if (s.state === 'deleted' || s.state === 'anonymised') return [];
  const { at } = cmd;
  const events: MemberEvent[] = [];
  for (const r of s.reservations.values()) {
    if (r.status === 'open') events.push({ type: 'ReservationReleased', data: { reservation_id: r.id, at, reason: 'erasure' } });
  }
  let restored = 0;
  for (const v of s.vouchers.values()) {
    if (v.status !== 'created') continue;
    const reverseId = cmd.entryIds();
    restored += v.amount_cents;
    events.push({ type: 'EntryRecorded', data: {
      id: reverseId, type: 'reverse', status: 'posted', amount_cents: v.amount_cents, reason_code: 'voucher_voided', rule: null,
      parent_entry_id: v.entry_id, release_at: null, expires_at: null, created_at: at, order_ref: null, cause: `void:${v.id}`,
    } });
    events.push({ type: 'VoucherRestored', data: { redemption_id: v.id, reverse_entry_id: reverseId, reason: 'erasure', at } });
  }
  const remaining = s.available + restored;
  if (remaining > 0) {
    events.push({ type: 'EntryRecorded', data: {
      id: cmd.entryIds(), type: 'expire', status: 'posted', amount_cents: -remaining, reason_code: 'erasure', rule: null,
      parent_entry_id: null, release_at: null, expires_at: null, created_at: at, order_ref: null, cause: `erasure:${cmd.member_id}`,
    } });
  }
  events.push({ type: 'MemberErased', data: { at } });
  return events;
};

/**
 * Reverses what is left of a migration credit (DELETE /admin/v1/migrations/{batch_id}): one
 * `reverse` entry, once per entry. `reversed` is false only for an erased member (whose balance
 * was forfeited already: nothing is left to take back); a credit already reversed, or let go by
 * the member state once fully taken back, counts as reversed.
 */
export const decideMigrationReversal = (
  s: MemberAggregate,
  cmd: { credit_entry_id: string; entryId: string; batch_id: string; at: string },
): { events: MemberEvent[]; reversed: boolean } => {
  const cause = `migration-reverse:${cmd.credit_entry_id}`;
  const e = s.entries.get(cmd.credit_entry_id);
  if (!e) return { events: [], reversed: true };
  if (s.causes.has(cause) || e.status === 'reversed') return { events: [], reversed: true };
  if (s.state === 'deleted' || s.state === 'anonymised') return { events: [], reversed: false };
  const left = e.amount_cents - e.reversed_cents;
  if (left <= 0) return { events: [], reversed: true };
  return {
    events: [{ type: 'EntryRecorded', data: {
      id: cmd.entryId, type: 'reverse', status: 'posted', amount_cents: -left, reason_code: 'migration_reversed', rule: null,
      parent_entry_id: e.id, release_at: null, expires_at: null, created_at: cmd.at, order_ref: null, cause, actor: 'admin', batch_id: cmd.batch_id,
    } }],
    reversed: true,
  };
};
