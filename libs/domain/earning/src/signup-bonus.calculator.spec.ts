import { signupBonus } from './signup-bonus.calculator';
import { aRule } from './testing/program.fixture';

const AT = '2024-06-15T12:00:00.000Z';

describe('signupBonus', () => {
  it('given a signup_bonus rule when a member enrols then it earns the fixed amount with the rule identity', () => {
    const rule = aRule({ id: 'S1', name: 'Welcome', type: 'signup_bonus', version: 2, amount_cents: 500, timing: 'immediate', expiry_months: 6 });
    expect(signupBonus([rule], AT)).toEqual([
      {
        rule_id: 'S1',
        rule_name: 'Welcome',
        rule_type: 'signup_bonus',
        rule_version: 2,
        amount_cents: 500,
        timing: 'immediate',
        expiry_months: 6,
      },
    ]);
  });

  it('given other rule types when a member enrols then they are ignored', () => {
    const rules = [
      aRule({ id: 'B', type: 'base', amount_cents: 999 }),
      aRule({ id: 'R', type: 'referral', amount_cents: 1_000 }),
      aRule({ id: 'C', type: 'campaign', amount_cents: 1_000 }),
      aRule({ id: 'S', type: 'signup_bonus', amount_cents: 250 }),
    ];
    expect(signupBonus(rules, AT).map((line) => line.rule_id)).toEqual(['S']);
  });

  it('given several signup bonuses when a member enrols then each earns, in the rules order', () => {
    const rules = [
      aRule({ id: 'S2', type: 'signup_bonus', amount_cents: 100 }),
      aRule({ id: 'S1', type: 'signup_bonus', amount_cents: 200 }),
    ];
    expect(signupBonus(rules, AT).map((line) => [line.rule_id, line.amount_cents])).toEqual([
      ['S2', 100],
      ['S1', 200],
    ]);
  });

  it('given a missing, null or zero amount when a member enrols then no line is produced', () => {
    const rules = [
      aRule({ id: 'S0', type: 'signup_bonus' }),
      aRule({ id: 'S1', type: 'signup_bonus', amount_cents: null }),
      aRule({ id: 'S2', type: 'signup_bonus', amount_cents: 0 }),
    ];
    expect(signupBonus(rules, AT)).toEqual([]);
  });

  it('given a time-limited welcome offer when a member enrols outside it then nothing is earned', () => {
    const rule = aRule({
      type: 'signup_bonus',
      amount_cents: 500,
      starts_at: '2024-07-01T00:00:00.000Z',
      ends_at: '2024-08-01T00:00:00.000Z',
    });
    expect(signupBonus([rule], AT)).toEqual([]);
    expect(signupBonus([rule], '2024-07-01T00:00:00.000Z')).toHaveLength(1);
    expect(signupBonus([rule], '2024-08-01T00:00:00.000Z')).toEqual([]);
  });

  it('given invalid input when a member enrols then it throws', () => {
    expect(() => signupBonus([], 'today')).toThrow(RangeError);
    expect(() => signupBonus([aRule({ type: 'signup_bonus', amount_cents: 1.5 })], AT)).toThrow(RangeError);
  });
});
