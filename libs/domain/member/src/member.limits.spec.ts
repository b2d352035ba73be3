import type { EarnLine } from '@loyalty/domain-earning';
import { MemberRuleError, decideAdjust } from './member.decider';
import { OrderStepCommand, decideOrderStep, decideSignupBonus } from './member.earning';
import { MAX_MINOR_UNITS, assertMoneyStaysExact } from './member.limits';
import { balancesOf } from './member.state';
import { T0, created, entry, fold } from './testing/member.builder';

const MAX = MAX_MINOR_UNITS;
const adjust = (amount: number, cause = `adj-${amount}`) => ({ entryId: `LE-${cause}`, amount_cents: amount, reason_code: 'goodwill', note: null, cause, actor: null, at: T0 });
const refusalOf = (f: () => unknown): { code: string; message: string } | 'accepted' => {
  try {
    f();
    return 'accepted';
  } catch (e) {
    if (e instanceof MemberRuleError) return { code: e.code, message: e.message };
    throw e;
  }
};
const line = (amount: number): EarnLine => ({ rule_id: 'base', rule_name: 'Base', rule_type: 'base', rule_version: 1, amount_cents: amount, timing: 'paid', expiry_months: null });
const order = (amount: number): OrderStepCommand => ({
  order: { order_ref: 'O-1', earn_entry_ids: [], fulfilled_at: null, delivered: false },
  at: T0, expiry: { policy: 'none' }, return_window_days: 30, entryId: (cause) => `LE-${cause}`,
  earn: { lines: [line(amount)] }, refund: null, cancel: false, activity: null,
});

describe('money stays exact (2^53 − 1 minor units)', () => {
  it('accepts an adjust up to the limit exactly', () => {
    const s = fold([created()]);
    const events = decideAdjust(s, adjust(MAX));
    expect(balancesOf(fold(events, s)).available_cents).toBe(MAX);
  });

  it('refuses a second adjust that would pass the limit with rule-ineligible, deciding nothing', () => {
    const s = fold([created(), entry({ type: 'adjust', amount_cents: MAX })]);
    expect(refusalOf(() => decideAdjust(s, adjust(MAX)))).toEqual({ code: 'rule-ineligible', message: expect.stringMatching(/past 9007199254740991/) });
    expect(refusalOf(() => decideAdjust(s, adjust(1)))).toMatchObject({ code: 'rule-ineligible' });
    expect(balancesOf(s).available_cents).toBe(MAX);
    // a debit is fine; crediting it back is not: the lifetime total is already at the limit
    const after = fold(decideAdjust(s, adjust(-10)), s);
    expect(balancesOf(after).available_cents).toBe(MAX - 10);
    expect(refusalOf(() => decideAdjust(after, adjust(10, 'back')))).toMatchObject({ code: 'rule-ineligible' });
  });

  it('counts pending points and the lifetime total, not only the available balance', () => {
    const pending = fold([created(), entry({ type: 'earn', amount_cents: MAX - 5, status: 'pending' })]);
    expect(refusalOf(() => decideAdjust(pending, adjust(6)))).toMatchObject({ code: 'rule-ineligible' });
    expect(refusalOf(() => decideAdjust(pending, adjust(5)))).toBe('accepted');
    // lifetime earned stays high after the points are spent
    const spent = fold([created(), entry({ type: 'adjust', amount_cents: MAX }), entry({ type: 'redeem', amount_cents: -MAX })]);
    expect(balancesOf(spent).available_cents).toBe(0);
    expect(refusalOf(() => decideAdjust(spent, adjust(1)))).toMatchObject({ code: 'rule-ineligible' });
  });

  it('refuses a debit that would take the balance below -(2^53 − 1)', () => {
    const s = fold([created(), entry({ type: 'adjust', amount_cents: -MAX })]);
    expect(refusalOf(() => decideAdjust(s, adjust(-1)))).toMatchObject({ code: 'rule-ineligible' });
    expect(refusalOf(() => decideAdjust(s, adjust(1)))).toBe('accepted');
  });

  it('refuses an order earn that would pass the limit (the event fails; nothing is recorded)', () => {
    const s = fold([created(), entry({ type: 'adjust', amount_cents: MAX - 100 })]);
    expect(decideOrderStep(s, order(100)).events).toHaveLength(1);
    expect(refusalOf(() => decideOrderStep(s, order(101)))).toMatchObject({ code: 'rule-ineligible' });
  });

  it('refuses a signup bonus that would pass the limit', () => {
    const s = fold([created(), entry({ type: 'adjust', amount_cents: MAX })]);
    const rules = [{ id: 'signup', name: 'Signup', type: 'signup_bonus', version: 1, earn_rate_pct: 0, timing: 'immediate', tags: null, min_order_cents: null, cap_per_order_cents: null, expiry_months: null, amount_cents: 500 }] as never;
    expect(refusalOf(() => decideSignupBonus(s, { member_id: 'M-TEST', rules, expiry: { policy: 'none' }, at: T0, entryId: (c) => `LE-${c}` }))).toMatchObject({ code: 'rule-ineligible' });
  });

  it('adds many entries of one decision exactly (no rounding on the way)', () => {
    const s = fold([created()]);
    const half = entry({ type: 'adjust', amount_cents: 2 ** 52 });
    expect(() => assertMoneyStaysExact(s, [half, half])).toThrow(/past/);
    expect(() => assertMoneyStaysExact(s, [half, entry({ type: 'adjust', amount_cents: 2 ** 52 - 1 })])).not.toThrow();
  });
});
