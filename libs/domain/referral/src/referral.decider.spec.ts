import type { ReferralEvent, ReferralTerms, Rule } from '@loyalty/contracts';
import {
  ReferralRuleError, ReferralState, decideCreate, decideOrderPaid, decideReview, decideRewarded, foldReferral, initialReferralState,
  referralTerms, rewardCause, toReferralView,
} from './referral.decider';

const T0 = '2025-03-01T10:00:00.000Z';
const T1 = '2025-03-02T10:00:00.000Z';
const T2 = '2025-03-03T10:00:00.000Z';
const BEFORE = '2025-02-28T10:00:00.000Z';

const TERMS: ReferralTerms = { rule_id: 'ref', rule_version: 1, min_order_cents: 5_000, amount_cents: 1_000, friend_amount_cents: 500, expiry_months: null, timing: 'immediate' };

const created = (status: 'pending' | 'held' = 'pending'): ReferralEvent => ({
  type: 'ReferralCreated',
  data: { referral_id: 'RF-1', code: 'ABCD1234', advocate_id: 'M-A', friend_id: 'M-F', status, hold_reasons: status === 'held' ? ['same_email'] : [], at: T0 },
});

/** given these events, when `decide` runs, then these events (or this refusal) */
const given = (...events: ReferralEvent[]): ReferralState => foldReferral(events);
const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    if (e instanceof ReferralRuleError) return e.code;
    throw e;
  }
  throw new Error('expected a refusal');
};

const createCmd = { referral_id: 'RF-1', code: 'ABCD1234', advocate_id: 'M-A', friend_id: 'M-F', hold_reasons: [], friend_has_paid_order: false, at: T0 };
const order = (gross: number, paidAt = T1) => ({ order: { order_ref: 'O-1', gross_cents: gross, paid_at: paidAt }, terms: TERMS, at: paidAt });

describe('referral decider', () => {
  describe('create', () => {
    it('given no referral when created then it is pending', () => {
      const events = decideCreate(initialReferralState(), createCmd);
      expect(events).toEqual([created('pending')]);
      expect(toReferralView(foldReferral(events))).toMatchObject({ id: 'RF-1', code: 'ABCD1234', advocate_id: 'M-A', friend_id: 'M-F', status: 'pending', created_at: T0 });
    });

    it('given fraud reasons when created then it is held with them', () => {
      const [e] = decideCreate(initialReferralState(), { ...createCmd, hold_reasons: ['same_phone', 'daily_limit'] });
      expect(e).toMatchObject({ type: 'ReferralCreated', data: { status: 'held', hold_reasons: ['same_phone', 'daily_limit'] } });
    });

    it('refuses a self-referral as rule-ineligible, before anything else', () => {
      expect(refusal(() => decideCreate(given(created()), { ...createCmd, friend_id: 'M-A' }))).toBe('rule-ineligible');
    });

    it('given the friend was referred when created again then conflict', () => {
      expect(refusal(() => decideCreate(given(created()), { ...createCmd, referral_id: 'RF-2', advocate_id: 'M-B' }))).toBe('conflict');
    });

    it('given the friend already has a paid order then rule-ineligible', () => {
      expect(refusal(() => decideCreate(initialReferralState(), { ...createCmd, friend_has_paid_order: true }))).toBe('rule-ineligible');
    });
  });

  describe('order paid', () => {
    it('given pending when the friend pays an order at the minimum then qualified, carrying the record', () => {
      const [e] = decideOrderPaid(given(created()), order(5_000));
      expect(e).toMatchObject({ type: 'ReferralQualified', data: { order: { order_ref: 'O-1', gross_cents: 5_000 }, terms: TERMS } });
      expect(e.type === 'ReferralQualified' && e.data.referral).toMatchObject({ id: 'RF-1', status: 'qualified', order_ref: 'O-1', qualified_at: T1 });
    });

    it('given pending when the order is below the minimum then nothing; a later big enough order qualifies', () => {
      const s = given(created());
      expect(decideOrderPaid(s, order(4_999))).toEqual([]);
      expect(decideOrderPaid(s, { ...order(9_000, T2), order: { order_ref: 'O-2', gross_cents: 9_000, paid_at: T2 } })[0].type).toBe('ReferralQualified');
    });

    it('given held when the qualifying order comes then it is remembered and the referral stays held', () => {
      const events = decideOrderPaid(given(created('held')), order(6_000));
      expect(events.map((e) => e.type)).toEqual(['ReferralOrderMatched']);
      const s = foldReferral(events, given(created('held')));
      expect(s.status).toBe('held');
      expect(s.order?.order_ref).toBe('O-1');
    });

    it('given an order paid before the referral existed then the friend was already a customer: rejected', () => {
      const [e] = decideOrderPaid(given(created()), order(9_000, BEFORE));
      expect(e).toMatchObject({ type: 'ReferralRejected', data: { reason: 'friend_already_ordered', actor: null } });
    });

    it('is idempotent: a qualified, rewarded or rejected referral ignores further orders', () => {
      const q = decideOrderPaid(given(created()), order(9_000));
      expect(decideOrderPaid(given(created(), ...q), order(9_000))).toEqual([]);
      expect(decideOrderPaid(given(created('held'), { type: 'ReferralRejected', data: { at: T1, actor: 'admin', reason: 'admin' } }), order(9_000))).toEqual([]);
      expect(decideOrderPaid(initialReferralState(), order(9_000))).toEqual([]);
    });

    it('given no referral rule then there is no minimum and nothing to pay', () => {
      const terms = referralTerms([], T1);
      expect(terms).toMatchObject({ rule_id: null, min_order_cents: 0, amount_cents: 0, friend_amount_cents: 0 });
      expect(decideOrderPaid(given(created()), { ...order(1), terms })[0].type).toBe('ReferralQualified');
    });
  });

  describe('review', () => {
    it('given held without an order when approved then pending; approving again changes nothing', () => {
      const events = decideReview(given(created('held')), { action: 'approve', actor: 'admin', at: T1 });
      expect(events.map((e) => e.type)).toEqual(['ReferralApproved']);
      const s = given(created('held'), ...events);
      expect(s.status).toBe('pending');
      expect(decideReview(s, { action: 'approve', actor: 'admin', at: T2 })).toEqual([]);
      // and the friend's order then qualifies it
      expect(decideOrderPaid(s, order(9_000, T2))[0].type).toBe('ReferralQualified');
    });

    it('given held with its qualifying order when approved then approved and qualified at once', () => {
      const held = given(created('held'), ...decideOrderPaid(given(created('held')), order(6_000)));
      const events = decideReview(held, { action: 'approve', actor: 'admin', at: T2 });
      expect(events.map((e) => e.type)).toEqual(['ReferralApproved', 'ReferralQualified']);
      expect(foldReferral(events, held)).toMatchObject({ status: 'qualified', qualified_at: T2, terms: TERMS });
    });

    it('given held when rejected then rejected; rejecting again is a no-op; approving then is invalid-state', () => {
      const events = decideReview(given(created('held')), { action: 'reject', actor: 'admin', at: T1 });
      expect(events).toEqual([{ type: 'ReferralRejected', data: { at: T1, actor: 'admin', reason: 'admin' } }]);
      const s = given(created('held'), ...events);
      expect(s.status).toBe('rejected');
      expect(decideReview(s, { action: 'reject', actor: 'admin', at: T2 })).toEqual([]);
      expect(refusal(() => decideReview(s, { action: 'approve', actor: 'admin', at: T2 }))).toBe('invalid-state');
    });

    it('refuses to review a referral that was never held', () => {
      expect(refusal(() => decideReview(given(created()), { action: 'approve', actor: 'admin', at: T1 }))).toBe('invalid-state');
      expect(refusal(() => decideReview(given(created()), { action: 'reject', actor: 'admin', at: T1 }))).toBe('invalid-state');
      expect(refusal(() => decideReview(initialReferralState(), { action: 'approve', actor: 'admin', at: T1 }))).toBe('not-found');
    });
  });

  describe('rewarded', () => {
    it('given qualified when the ledger credited both then rewarded with the entries and amounts', () => {
      const s = given(created(), ...decideOrderPaid(given(created()), order(9_000)));
      const events = decideRewarded(s, { advocate_entry_id: 'LE-A', friend_entry_id: 'LE-F', at: T2 });
      expect(events).toEqual([{ type: 'ReferralRewarded', data: { at: T2, advocate_entry_id: 'LE-A', friend_entry_id: 'LE-F', advocate_amount_cents: 1_000, friend_amount_cents: 500 } }]);
      const after = foldReferral(events, s);
      expect(toReferralView(after)).toMatchObject({ status: 'rewarded', rewarded_at: T2, advocate_entry_id: 'LE-A', friend_entry_id: 'LE-F' });
      expect(decideRewarded(after, { advocate_entry_id: 'LE-A', friend_entry_id: 'LE-F', at: T2 })).toEqual([]);
    });

    it('given a credit that wrote nothing (member erased) then its amount is 0', () => {
      const s = given(created(), ...decideOrderPaid(given(created()), order(9_000)));
      const [e] = decideRewarded(s, { advocate_entry_id: null, friend_entry_id: 'LE-F', at: T2 });
      expect(e).toMatchObject({ data: { advocate_amount_cents: 0, friend_amount_cents: 500 } });
    });

    it('given pending (not qualified) then nothing is rewarded', () => {
      expect(decideRewarded(given(created()), { advocate_entry_id: 'LE-A', friend_entry_id: null, at: T2 })).toEqual([]);
    });

    it('keys credits by referral and role', () => {
      expect(rewardCause('RF-1', 'advocate')).toBe('referral:RF-1:advocate');
      expect(rewardCause('RF-1', 'friend')).toBe('referral:RF-1:friend');
    });
  });

  describe('referralTerms', () => {
    const rule = (r: Partial<Rule>): Rule => ({
      id: 'r', name: 'r', type: 'referral', version: 2, earn_rate_pct: 0, timing: 'immediate', tags: null, min_order_cents: null,
      cap_per_order_cents: null, expiry_months: null, ...r,
    });

    it('takes the first referral rule in force, with its amounts and minimum', () => {
      const terms = referralTerms([rule({ id: 'base', type: 'base' }), rule({ id: 'ref', amount_cents: 1_000, friend_amount_cents: 250, min_order_cents: 2_000, expiry_months: 6 })], T1);
      expect(terms).toEqual({ rule_id: 'ref', rule_version: 2, min_order_cents: 2_000, amount_cents: 1_000, friend_amount_cents: 250, expiry_months: 6, timing: 'immediate' });
    });

    it('skips a rule outside its starts_at/ends_at window', () => {
      const rules = [rule({ id: 'old', amount_cents: 1, ends_at: T0 }), rule({ id: 'now', amount_cents: 2, starts_at: T0 })];
      expect(referralTerms(rules, T1).rule_id).toBe('now');
      expect(referralTerms(rules, BEFORE).rule_id).toBe('old');
    });
  });
});
