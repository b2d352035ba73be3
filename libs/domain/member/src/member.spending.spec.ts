import type { MemberEvent } from './member.events';
import { MemberAggregate, balancesOf, memberEvolver } from './member.state';
import { refold as fold } from './testing/member.builder';
import { MemberRuleError } from './member.decider';
import {
  SpendingRules, decideConfirmRedemption, decideConfirmReservation, decideExpireRedemption, decideExpireReservation,
  decideIssueRedemption, decideOpenReservation, decideReleaseReservation, decideVoidRedemption, orderShareCap,
  quoteRedemption, redemptionByCause, reservationByCause, spendingRules,
} from './member.spending';

const T0 = '2030-01-01T00:00:00.000Z';
const LATER = '2030-01-05T00:00:00.000Z';
const EXP = '2030-01-04T00:00:00.000Z';


const member = (credit: number, state: 'registered' | 'prospect' | 'paused' | 'suspended' | 'deleted' = 'registered'): MemberAggregate => {
  const events: MemberEvent[] = [
    { type: 'MemberCreated', data: { member_id: 'M-1', state: state === 'prospect' ? 'prospect' : 'registered', referral_code: 'ABCDEFGH', pii: { v: 1, kid: 'k', iv: '', tag: '', data: '' }, marketing_consent: false, accepted_terms_version: null, at: T0 } },
  ];
  if (credit) {
    events.push({ type: 'EntryRecorded', data: { id: 'LE-credit', type: 'adjust', status: 'posted', amount_cents: credit, reason_code: 'goodwill', rule: null, parent_entry_id: null, release_at: null, expires_at: null, created_at: T0, order_ref: null, cause: 'adjust:1' } });
  }
  if (state === 'paused' || state === 'suspended' || state === 'deleted') {
    events.push({ type: 'MemberStateChanged', data: { from: 'registered', to: state, reason: state, at: T0 } });
  }
  return fold(events);
};

const rules = (over: Partial<SpendingRules> = {}): SpendingRules => ({ ...spendingRules({}), ...over });

const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    if (e instanceof MemberRuleError) return e.code;
    throw e;
  }
  throw new Error('expected a refusal');
};

const issue = (over: Partial<Parameters<typeof decideIssueRedemption>[2]> = {}) => ({
  redemption_id: 'RD-1', entry_id: 'LE-r1', code: 'RWD-AAAA-BBBB', mode: 'voucher' as const, amount_cents: 300,
  order_ref: null, expires_at: EXP, cause: 'redeem:key-1', at: T0, ...over,
});

describe('spending rules', () => {
  it('defaults to no minimum, 100 % share and no blocked tenders; rounds a fractional share to basis points once', () => {
    expect(spendingRules({})).toEqual({ min_redeem_cents: 0, max_order_share_bps: 10_000, blocked_payment_methods: [] });
    expect(spendingRules({ max_order_share_pct: 33.335 }).max_order_share_bps).toBe(3334);
    expect(spendingRules({ max_order_share_pct: 250 }).max_order_share_bps).toBe(10_000);
    expect(spendingRules({ min_redeem_cents: -5 }).min_redeem_cents).toBe(0);
  });

  it('floors the share of the order with integer arithmetic', () => {
    expect(orderShareCap(rules({ max_order_share_bps: 5000 }), 999)).toBe(499);
    expect(orderShareCap(rules({ max_order_share_bps: 3333 }), 100)).toBe(33);
    expect(orderShareCap(rules(), Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe('quote', () => {
  it('maximum = min(spendable, floor(eligible × share))', () => {
    const s = member(1000);
    expect(quoteRedemption(s, rules({ max_order_share_bps: 5000 }), 1500, 'card')).toEqual({ spendable_cents: 1000, minimum_cents: 0, maximum_cents: 750, tender_blocked: false });
    expect(quoteRedemption(s, rules({ max_order_share_bps: 5000 }), 5000, 'card').maximum_cents).toBe(1000);
    expect(quoteRedemption(s, rules(), 0, 'card').maximum_cents).toBe(0);
  });

  it('is 0 below the minimum, for a blocked tender (case-insensitive) and for a member who may not spend', () => {
    const s = member(1000);
    expect(quoteRedemption(s, rules({ min_redeem_cents: 500, max_order_share_bps: 1000 }), 4000, 'card')).toEqual({ spendable_cents: 1000, minimum_cents: 500, maximum_cents: 0, tender_blocked: false });
    expect(quoteRedemption(s, rules({ min_redeem_cents: 500 }), 4000, 'card').maximum_cents).toBe(1000);
    expect(quoteRedemption(s, rules({ blocked_payment_methods: ['Gift_Card'] }), 4000, ' gift_card ')).toMatchObject({ maximum_cents: 0, tender_blocked: true });
    expect(quoteRedemption(member(1000, 'prospect'), rules(), 4000, 'card').maximum_cents).toBe(0);
  });

  it('never quotes a negative maximum when the balance went negative', () => {
    const s = fold([{ type: 'EntryRecorded', data: { id: 'LE-neg', type: 'adjust', status: 'posted', amount_cents: -1500, reason_code: 'x', rule: null, parent_entry_id: null, release_at: null, expires_at: null, created_at: T0, order_ref: null, cause: 'adjust:2' } }], member(1000));
    expect(quoteRedemption(s, rules(), 4000, 'card')).toMatchObject({ spendable_cents: -500, maximum_cents: 0 });
  });
});

describe('vouchers and direct redemptions', () => {
  it('debits at once: a posted redeem entry and a created voucher; lifetime_redeemed rises', () => {
    const s = member(1000);
    const events = decideIssueRedemption(s, rules(), issue());
    expect(events.map((e) => e.type)).toEqual(['EntryRecorded', 'VoucherIssued']);
    const after = fold(events, s);
    expect(balancesOf(after)).toMatchObject({ available_cents: 700, spendable_cents: 700, lifetime_redeemed_cents: 300 });
    expect(after.vouchers.get('RD-1')).toMatchObject({ status: 'created', entry_id: 'LE-r1', expires_at: EXP });
    expect(after.entries.get('LE-r1')).toMatchObject({ type: 'redeem', status: 'posted', amount_cents: -300, reason_code: 'voucher' });
    expect(redemptionByCause(after, 'redeem:key-1')?.id).toBe('RD-1');
  });

  it('direct is used at once and has no expiry', () => {
    const after = fold(decideIssueRedemption(member(1000), rules(), issue({ mode: 'direct', order_ref: 'O-1' })), member(1000));
    expect(after.vouchers.get('RD-1')).toMatchObject({ status: 'used', order_ref: 'O-1', expires_at: null });
  });

  it('refuses: 402 for states that may not spend, below the minimum, beyond spendable (reservations count)', () => {
    for (const st of ['prospect', 'paused', 'suspended', 'deleted'] as const) {
      expect(refusal(() => decideIssueRedemption(member(1000, st), rules(), issue()))).toBe('redemption-not-allowed');
    }
    expect(refusal(() => decideIssueRedemption(memberEvolver.initialState(), rules(), issue()))).toBe('not-found');
    expect(refusal(() => decideIssueRedemption(member(1000), rules({ min_redeem_cents: 500 }), issue()))).toBe('rule-ineligible');
    expect(refusal(() => decideIssueRedemption(member(299), rules(), issue()))).toBe('balance-insufficient');
    const held = fold(decideOpenReservation(member(1000), rules(), { reservation_id: 'RS-1', amount_cents: 800, cart_ref: null, eligible_total_cents: null, payment_method: null, expires_at: EXP, cause: null, at: T0 }), member(1000));
    expect(refusal(() => decideIssueRedemption(held, rules(), issue()))).toBe('balance-insufficient');
    expect(decideIssueRedemption(held, rules(), issue({ amount_cents: 200 }))).toHaveLength(2);
  });

  it('confirm: created → used; the same order_ref again decides nothing; another order_ref, a void or an expiry conflict', () => {
    const s = fold(decideIssueRedemption(member(1000), rules(), issue()), member(1000));
    const used = fold(decideConfirmRedemption(s, { redemption_id: 'RD-1', order_ref: 'O-1', at: T0 }), s);
    expect(used.vouchers.get('RD-1')).toMatchObject({ status: 'used', order_ref: 'O-1' });
    expect(decideConfirmRedemption(used, { redemption_id: 'RD-1', order_ref: 'O-1', at: T0 })).toEqual([]);
    expect(refusal(() => decideConfirmRedemption(used, { redemption_id: 'RD-1', order_ref: 'O-2', at: T0 }))).toBe('invalid-state');
    expect(refusal(() => decideVoidRedemption(used, { redemption_id: 'RD-1', reverse_entry_id: 'LE-v', at: T0 }))).toBe('invalid-state');
    expect(refusal(() => decideConfirmRedemption(s, { redemption_id: 'RD-1', order_ref: 'O-1', at: LATER }))).toBe('invalid-state');
    expect(refusal(() => decideConfirmRedemption(s, { redemption_id: 'RD-X', order_ref: 'O-1', at: T0 }))).toBe('not-found');
  });

  it('void: a reverse entry (parent = the redeem entry) returns the points; lifetime_redeemed falls back; void again decides nothing', () => {
    const s = fold(decideIssueRedemption(member(1000), rules(), issue()), member(1000));
    const restored = fold(decideVoidRedemption(s, { redemption_id: 'RD-1', reverse_entry_id: 'LE-v', at: T0 }), s);
    expect(restored.vouchers.get('RD-1')?.status).toBe('restored');
    expect(restored.entries.get('LE-v')).toMatchObject({ type: 'reverse', amount_cents: 300, parent_entry_id: 'LE-r1', status: 'posted' });
    expect(restored.entries.get('LE-r1')?.status).toBe('reversed');
    expect(balancesOf(restored)).toMatchObject({ available_cents: 1000, lifetime_redeemed_cents: 0 });
    expect(decideVoidRedemption(restored, { redemption_id: 'RD-1', reverse_entry_id: 'LE-v2', at: T0 })).toEqual([]);
    expect(refusal(() => decideConfirmRedemption(restored, { redemption_id: 'RD-1', order_ref: 'O-1', at: T0 }))).toBe('invalid-state');
  });

  it('expiry: only an open voucher at or past its expiry; points back, then void and confirm conflict', () => {
    const s = fold(decideIssueRedemption(member(1000), rules(), issue()), member(1000));
    expect(decideExpireRedemption(s, { redemption_id: 'RD-1', reverse_entry_id: 'LE-e', at: T0 })).toEqual([]);
    const expired = fold(decideExpireRedemption(s, { redemption_id: 'RD-1', reverse_entry_id: 'LE-e', at: EXP }), s);
    expect(expired.vouchers.get('RD-1')?.status).toBe('expired');
    expect(expired.entries.get('LE-e')).toMatchObject({ type: 'reverse', reason_code: 'voucher_expired', parent_entry_id: 'LE-r1' });
    expect(balancesOf(expired)).toMatchObject({ available_cents: 1000, lifetime_redeemed_cents: 0 });
    expect(decideExpireRedemption(expired, { redemption_id: 'RD-1', reverse_entry_id: 'LE-e2', at: LATER })).toEqual([]);
    expect(refusal(() => decideVoidRedemption(expired, { redemption_id: 'RD-1', reverse_entry_id: 'LE-v', at: LATER }))).toBe('invalid-state');
    const direct = fold(decideIssueRedemption(member(1000), rules(), issue({ mode: 'direct', order_ref: 'O-1' })), member(1000));
    expect(decideExpireRedemption(direct, { redemption_id: 'RD-1', reverse_entry_id: 'LE-e', at: LATER })).toEqual([]);
  });
});

describe('reservations', () => {
  const open = (over: Partial<Parameters<typeof decideOpenReservation>[2]> = {}) => ({
    reservation_id: 'RS-1', amount_cents: 400, cart_ref: 'cart-1', eligible_total_cents: 2000, payment_method: 'card', expires_at: EXP, cause: 'reserve:k', at: T0, ...over,
  });

  it('holds points: reserved rises and spendable falls, nothing is debited', () => {
    const s = member(1000);
    const after = fold(decideOpenReservation(s, rules(), open()), s);
    expect(balancesOf(after)).toMatchObject({ available_cents: 1000, reserved_cents: 400, spendable_cents: 600, lifetime_redeemed_cents: 0 });
    expect(reservationByCause(after, 'reserve:k')?.id).toBe('RS-1');
  });

  it('rules refuse below the minimum, above the share of the order and for a blocked tender; then the balance', () => {
    const s = member(1000);
    expect(refusal(() => decideOpenReservation(s, rules({ min_redeem_cents: 500 }), open()))).toBe('rule-ineligible');
    expect(refusal(() => decideOpenReservation(s, rules({ max_order_share_bps: 1000 }), open()))).toBe('rule-ineligible');
    expect(decideOpenReservation(s, rules({ max_order_share_bps: 2000 }), open())).toHaveLength(1);
    expect(refusal(() => decideOpenReservation(s, rules({ blocked_payment_methods: ['cash'] }), open({ payment_method: 'CASH' })))).toBe('rule-ineligible');
    expect(refusal(() => decideOpenReservation(s, rules(), open({ amount_cents: 1001, eligible_total_cents: 5000 })))).toBe('balance-insufficient');
    expect(refusal(() => decideOpenReservation(member(1000, 'suspended'), rules(), open()))).toBe('redemption-not-allowed');
  });

  it('confirm: debits the held points once with a redeem entry; the same order_ref again decides nothing', () => {
    const s = fold(decideOpenReservation(member(1000), rules(), open()), member(1000));
    const events = decideConfirmReservation(s, { reservation_id: 'RS-1', order_ref: 'O-9', entry_id: 'LE-c', at: T0 });
    const after = fold(events, s);
    expect(after.reservations.get('RS-1')).toMatchObject({ status: 'confirmed', order_ref: 'O-9', entry_id: 'LE-c' });
    expect(after.entries.get('LE-c')).toMatchObject({ type: 'redeem', amount_cents: -400, reason_code: 'reservation', order_ref: 'O-9' });
    expect(balancesOf(after)).toMatchObject({ available_cents: 600, reserved_cents: 0, spendable_cents: 600, lifetime_redeemed_cents: 400 });
    expect(decideConfirmReservation(after, { reservation_id: 'RS-1', order_ref: 'O-9', entry_id: 'LE-d', at: T0 })).toEqual([]);
    expect(refusal(() => decideConfirmReservation(after, { reservation_id: 'RS-1', order_ref: 'O-8', entry_id: 'LE-d', at: T0 }))).toBe('invalid-state');
    expect(refusal(() => decideReleaseReservation(after, { reservation_id: 'RS-1', at: T0 }))).toBe('invalid-state');
  });

  it('release frees the hold once; expiry frees it only when due; cross-state calls conflict', () => {
    const s = fold(decideOpenReservation(member(1000), rules(), open()), member(1000));
    const released = fold(decideReleaseReservation(s, { reservation_id: 'RS-1', at: T0 }), s);
    expect(balancesOf(released)).toMatchObject({ reserved_cents: 0, spendable_cents: 1000 });
    expect(decideReleaseReservation(released, { reservation_id: 'RS-1', at: T0 })).toEqual([]);
    expect(refusal(() => decideConfirmReservation(released, { reservation_id: 'RS-1', order_ref: 'O', entry_id: 'LE', at: T0 }))).toBe('invalid-state');

    expect(decideExpireReservation(s, { reservation_id: 'RS-1', at: T0 })).toEqual([]);
    expect(refusal(() => decideConfirmReservation(s, { reservation_id: 'RS-1', order_ref: 'O', entry_id: 'LE', at: LATER }))).toBe('invalid-state');
    const expired = fold(decideExpireReservation(s, { reservation_id: 'RS-1', at: EXP }), s);
    expect(expired.reservations.get('RS-1')?.status).toBe('expired');
    expect(balancesOf(expired)).toMatchObject({ reserved_cents: 0, spendable_cents: 1000, available_cents: 1000 });
    expect(refusal(() => decideReleaseReservation(expired, { reservation_id: 'RS-1', at: LATER }))).toBe('invalid-state');
    expect(refusal(() => decideReleaseReservation(s, { reservation_id: 'RS-X', at: T0 }))).toBe('not-found');
  });
});
