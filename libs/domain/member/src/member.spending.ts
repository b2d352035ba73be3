import type { ProgramSettings } from '@loyalty/contracts';
import type { EntryData, MemberEvent } from './member.events';
import { MemberAggregate, Reservation, Voucher, spendableOf } from './member.state';
import { MemberRuleError, canSpend } from './member.decider';

/**
 * Spending points (decisions §6): vouchers, direct redemptions, checkout reservations and quotes.
 * Pure: ids, codes and time arrive in the command; refusals are MemberRuleErrors. A terminal
 * call repeated on the same outcome decides no events (an idempotent 200); any other call on a
 * resolved voucher or reservation is `invalid-state`.
 */

/** The redemption settings of a programme, sanitised to integers (settings are stored as given). */
export interface SpendingRules {
  min_redeem_cents: number;
  /** max_order_share_pct in basis points (100 % = 10 000), clamped to 0…10 000 */
  max_order_share_bps: number;
  blocked_payment_methods: string[];
}

const nonNegativeInt = (v: unknown, fallback: number): number =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : fallback;

export const spendingRules = (s: Partial<Readonly<Pick<ProgramSettings, 'min_redeem_cents' | 'max_order_share_pct'>> & { blocked_payment_methods: readonly string[] }>): SpendingRules => {
  const pct = typeof s.max_order_share_pct === 'number' && Number.isFinite(s.max_order_share_pct) ? s.max_order_share_pct : 100;
  return {
    min_redeem_cents: nonNegativeInt(s.min_redeem_cents, 0),
    // the one place a (possibly fractional) percentage is touched: rounded once to basis points
    max_order_share_bps: Math.min(10_000, Math.max(0, Math.round(pct * 100))),
    blocked_payment_methods: Array.isArray(s.blocked_payment_methods) ? s.blocked_payment_methods.filter((m) => typeof m === 'string') : [],
  };
};

/** floor(eligible × share), exact (BigInt), for a non-negative safe integer. */
export const orderShareCap = (rules: SpendingRules, eligibleTotalCents: number): number =>
  Number((BigInt(eligibleTotalCents) * BigInt(rules.max_order_share_bps)) / 10_000n);

/** Payment methods compare case-insensitively, ignoring surrounding spaces. */
export const tenderBlocked = (rules: SpendingRules, paymentMethod: string | null | undefined): boolean => {
  if (paymentMethod === null || paymentMethod === undefined) return false;
  const m = paymentMethod.trim().toLowerCase();
  return rules.blocked_payment_methods.some((b) => b.trim().toLowerCase() === m);
};

export interface Quote { spendable_cents: number; minimum_cents: number; maximum_cents: number; tender_blocked: boolean }

/**
 * What a checkout may redeem now (nothing is held). maximum = min(spendable, floor(eligible ×
 * share)), and 0 when that is below the minimum, the tender is blocked or the member may not spend.
 */
export const quoteRedemption = (s: MemberAggregate, rules: SpendingRules, eligibleTotalCents: number, paymentMethod: string | null | undefined): Quote => {
  const spendable = spendableOf(s);
  const blocked = tenderBlocked(rules, paymentMethod);
  let maximum = Math.max(0, Math.min(spendable, orderShareCap(rules, eligibleTotalCents)));
  if (maximum < rules.min_redeem_cents || blocked || !canSpend(s)) maximum = 0;
  return { spendable_cents: spendable, minimum_cents: rules.min_redeem_cents, maximum_cents: maximum, tender_blocked: blocked };
};

/** The member must exist and be in a state that may spend (402 otherwise). */
export const assertMaySpend = (s: MemberAggregate): void => {
  if (!s.exists) throw new MemberRuleError('not-found', 'member not found');
  if (!canSpend(s)) throw new MemberRuleError('redemption-not-allowed', `a ${s.state} member cannot redeem points`);
};

const assertAmount = (amount: number): void => {
  if (!Number.isSafeInteger(amount) || amount < 1) throw new MemberRuleError('rule-ineligible', 'amount_cents must be a positive integer');
};

const assertSpendable = (s: MemberAggregate, amount: number): void => {
  const spendable = spendableOf(s);
  if (spendable < amount) throw new MemberRuleError('balance-insufficient', `spendable balance ${spendable} is below ${amount}`);
};

const isDue = (expiresAt: string | null, at: string): boolean => expiresAt !== null && Date.parse(at) >= Date.parse(expiresAt);

const redeemEntry = (p: { id: string; amount_cents: number; reason_code: string; order_ref: string | null; cause: string; actor?: string | null; at: string }): EntryData => ({
  id: p.id, type: 'redeem', status: 'posted', amount_cents: -p.amount_cents, reason_code: p.reason_code, rule: null,
  parent_entry_id: null, release_at: null, expires_at: null, created_at: p.at, order_ref: p.order_ref, cause: p.cause, actor: p.actor ?? null,
});

const restoreEntry = (v: Voucher, p: { id: string; reason_code: string; cause: string; at: string }): EntryData => ({
  id: p.id, type: 'reverse', status: 'posted', amount_cents: v.amount_cents, reason_code: p.reason_code, rule: null,
  parent_entry_id: v.entry_id, release_at: null, expires_at: null, created_at: p.at, order_ref: null, cause: p.cause,
});

// ---------- vouchers and direct redemptions ----------

export interface IssueRedemption {
  redemption_id: string;
  entry_id: string;
  code: string;
  mode: 'voucher' | 'direct';
  amount_cents: number;
  order_ref: string | null;
  /** voucher: now + voucher TTL; direct: null */
  expires_at: string | null;
  /** idempotency cause recorded on the redeem entry (e.g. `redeem:<Idempotency-Key>`) */
  cause: string;
  /** the request's fingerprint, when its Idempotency-Key is claimed with the append (a retry must match it) */
  fingerprint?: string;
  actor?: string | null;
  at: string;
}

/** The redemption an earlier command with this cause created, if any (a retry). */
export const redemptionByCause = (s: MemberAggregate, cause: string): Voucher | null => {
  const entryId = s.causes.get(cause)?.[0];
  if (!entryId) return null;
  for (const v of s.vouchers.values()) if (v.entry_id === entryId) return v;
  return null;
};

/** Debits at once: a posted `redeem` entry, then the voucher (`created`) or direct redemption (`used`). */
export const decideIssueRedemption = (s: MemberAggregate, rules: SpendingRules, cmd: IssueRedemption): MemberEvent[] => {
  assertMaySpend(s);
  assertAmount(cmd.amount_cents);
  if (cmd.mode === 'direct' && !cmd.order_ref) throw new MemberRuleError('rule-ineligible', 'a direct redemption needs an order_ref');
  if (cmd.amount_cents < rules.min_redeem_cents) {
    throw new MemberRuleError('rule-ineligible', `the programme's minimum redemption is ${rules.min_redeem_cents}`);
  }
  assertSpendable(s, cmd.amount_cents);
  return [
    { type: 'EntryRecorded', data: redeemEntry({ id: cmd.entry_id, amount_cents: cmd.amount_cents, reason_code: cmd.mode, order_ref: cmd.order_ref, cause: cmd.cause, actor: cmd.actor, at: cmd.at }) },
    { type: 'VoucherIssued', data: {
      redemption_id: cmd.redemption_id, code: cmd.code, mode: cmd.mode, amount_cents: cmd.amount_cents, entry_id: cmd.entry_id,
      order_ref: cmd.order_ref, expires_at: cmd.mode === 'direct' ? null : cmd.expires_at, at: cmd.at,
      ...(cmd.fingerprint ? { fingerprint: cmd.fingerprint } : {}),
    } },
  ];
};

const voucherOf = (s: MemberAggregate, id: string): Voucher => {
  const v = s.vouchers.get(id);
  if (!v) throw new MemberRuleError('not-found', 'redemption not found');
  return v;
};

/** created → used with an order_ref, while not past its expiry; the same order_ref again is a no-op. */
export const decideConfirmRedemption = (s: MemberAggregate, cmd: { redemption_id: string; order_ref: string; at: string }): MemberEvent[] => {
  const v = voucherOf(s, cmd.redemption_id);
  if (v.status === 'used' && v.order_ref === cmd.order_ref) return [];
  if (v.status !== 'created') throw new MemberRuleError('invalid-state', `redemption is ${v.status}${v.status === 'used' ? ' with another order_ref' : ''}`);
  if (isDue(v.expires_at, cmd.at)) throw new MemberRuleError('invalid-state', 'voucher has expired');
  return [{ type: 'VoucherUsed', data: { redemption_id: v.id, order_ref: cmd.order_ref, at: cmd.at } }];
};

/** created → restored: a `reverse` of the redeem entry gives the points back; void again is a no-op. */
export const decideVoidRedemption = (s: MemberAggregate, cmd: { redemption_id: string; reverse_entry_id: string; at: string }): MemberEvent[] => {
  const v = voucherOf(s, cmd.redemption_id);
  if (v.status === 'restored') return [];
  if (v.status !== 'created') throw new MemberRuleError('invalid-state', `redemption is ${v.status}`);
  return [
    { type: 'EntryRecorded', data: restoreEntry(v, { id: cmd.reverse_entry_id, reason_code: 'voucher_voided', cause: `void:${v.id}`, at: cmd.at }) },
    { type: 'VoucherRestored', data: { redemption_id: v.id, reverse_entry_id: cmd.reverse_entry_id, reason: 'voided', at: cmd.at } },
  ];
};

/** A voucher still open at or past its expiry: points back, status `expired`. Anything else decides nothing. */
export const decideExpireRedemption = (s: MemberAggregate, cmd: { redemption_id: string; reverse_entry_id: string; at: string }): MemberEvent[] => {
  const v = s.vouchers.get(cmd.redemption_id);
  if (!v || v.status !== 'created' || !isDue(v.expires_at, cmd.at)) return [];
  return [
    { type: 'EntryRecorded', data: restoreEntry(v, { id: cmd.reverse_entry_id, reason_code: 'voucher_expired', cause: `voucher-expiry:${v.id}`, at: cmd.at }) },
    { type: 'VoucherRestored', data: { redemption_id: v.id, reverse_entry_id: cmd.reverse_entry_id, reason: 'expired', at: cmd.at } },
  ];
};

// ---------- checkout reservations ----------

/** Why the programme's rules refuse a reservation, or null. */
export const reservationRefusal = (rules: SpendingRules, p: { amount_cents: number; eligible_total_cents: number | null; payment_method: string | null }): string | null => {
  if (tenderBlocked(rules, p.payment_method)) return `payment method ${p.payment_method} cannot be combined with points`;
  if (p.amount_cents < rules.min_redeem_cents) return `the programme's minimum redemption is ${rules.min_redeem_cents}`;
  if (p.eligible_total_cents !== null) {
    const cap = orderShareCap(rules, p.eligible_total_cents);
    if (p.amount_cents > cap) return `at most ${cap} may be redeemed on an eligible total of ${p.eligible_total_cents}`;
  }
  return null;
};

export interface OpenReservation {
  reservation_id: string;
  amount_cents: number;
  cart_ref: string | null;
  eligible_total_cents: number | null;
  payment_method: string | null;
  expires_at: string;
  /** idempotency cause (e.g. `reserve:<Idempotency-Key>`), or null */
  cause: string | null;
  /** the request's fingerprint, when its Idempotency-Key is claimed with the append (a retry must match it) */
  fingerprint?: string;
  at: string;
}

/** The reservation an earlier command with this cause opened, if any (a retry). */
export const reservationByCause = (s: MemberAggregate, cause: string): Reservation | null => {
  const id = s.causes.get(cause)?.[0];
  return id ? s.reservations.get(id) ?? null : null;
};

/** Holds points for a checkout: reserved rises, spendable falls, nothing is debited. */
export const decideOpenReservation = (s: MemberAggregate, rules: SpendingRules, cmd: OpenReservation): MemberEvent[] => {
  assertMaySpend(s);
  assertAmount(cmd.amount_cents);
  const refusal = reservationRefusal(rules, cmd);
  if (refusal) throw new MemberRuleError('rule-ineligible', refusal);
  assertSpendable(s, cmd.amount_cents);
  return [{ type: 'ReservationOpened', data: {
    reservation_id: cmd.reservation_id, amount_cents: cmd.amount_cents, cart_ref: cmd.cart_ref, expires_at: cmd.expires_at, at: cmd.at,
    ...(cmd.cause ? { cause: cmd.cause } : {}),
    ...(cmd.cause && cmd.fingerprint ? { fingerprint: cmd.fingerprint } : {}),
  } }];
};

const reservationOf = (s: MemberAggregate, id: string): Reservation => {
  const r = s.reservations.get(id);
  if (!r) throw new MemberRuleError('not-found', 'reservation not found');
  return r;
};

/**
 * open → confirmed: the held points are debited by a `redeem` entry (reason `reservation`).
 * The same order_ref again decides nothing; a reservation past its expiry can no longer be
 * confirmed. Used by POST …/confirm and by order events carrying `reservation_id`.
 */
export const decideConfirmReservation = (s: MemberAggregate, cmd: { reservation_id: string; order_ref: string; entry_id: string; at: string }): MemberEvent[] => {
  const r = reservationOf(s, cmd.reservation_id);
  if (r.status === 'confirmed' && r.order_ref === cmd.order_ref) return [];
  if (r.status !== 'open') throw new MemberRuleError('invalid-state', `reservation is ${r.status}${r.status === 'confirmed' ? ' with another order_ref' : ''}`);
  if (isDue(r.expires_at, cmd.at)) throw new MemberRuleError('invalid-state', 'reservation has expired');
  if (!canSpend(s)) throw new MemberRuleError('redemption-not-allowed', `a ${s.state} member cannot redeem points`);
  return [
    { type: 'ReservationConfirmed', data: { reservation_id: r.id, order_ref: cmd.order_ref, entry_id: cmd.entry_id, at: cmd.at } },
    { type: 'EntryRecorded', data: redeemEntry({ id: cmd.entry_id, amount_cents: r.amount_cents, reason_code: 'reservation', order_ref: cmd.order_ref, cause: `reservation:${r.id}`, at: cmd.at }) },
  ];
};

/** open → released: held points freed; release again is a no-op. */
export const decideReleaseReservation = (s: MemberAggregate, cmd: { reservation_id: string; at: string }): MemberEvent[] => {
  const r = reservationOf(s, cmd.reservation_id);
  if (r.status === 'released') return [];
  if (r.status !== 'open') throw new MemberRuleError('invalid-state', `reservation is ${r.status}`);
  return [{ type: 'ReservationReleased', data: { reservation_id: r.id, at: cmd.at, reason: 'released' } }];
};

/** An open reservation at or past its expiry: held points freed, status `expired`. Anything else decides nothing. */
export const decideExpireReservation = (s: MemberAggregate, cmd: { reservation_id: string; at: string }): MemberEvent[] => {
  const r = s.reservations.get(cmd.reservation_id);
  if (!r || r.status !== 'open' || !isDue(r.expires_at, cmd.at)) return [];
  return [{ type: 'ReservationReleased', data: { reservation_id: r.id, at: cmd.at, reason: 'expired' } }];
};
