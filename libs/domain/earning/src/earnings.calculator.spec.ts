import fc from 'fast-check';
import type { Rule } from '@loyalty/contracts';
import type { EarnInput } from './earn.types';
import { computeEarnings } from './earnings.calculator';
import { aRule } from './testing/program.fixture';

const AT = '2024-06-15T12:00:00.000Z';

function input(overrides: Partial<EarnInput> = {}): EarnInput {
  return { grossCents: 10_000, lines: null, rules: [], tierMultiplier: 1, at: AT, campaignIssuedCents: {}, ...overrides };
}

const amounts = (lines: { amount_cents: number }[]): number[] => lines.map((line) => line.amount_cents);

describe('computeEarnings', () => {
  describe('base rule', () => {
    it('given 1 % on 100.00 when computed then it earns 1.00 with the rule identity on the line', () => {
      const rule = aRule({ id: 'R1', name: 'One percent', version: 3, timing: 'return_window', expiry_months: 12 });
      expect(computeEarnings(input({ rules: [rule] }))).toEqual([
        {
          rule_id: 'R1',
          rule_name: 'One percent',
          rule_type: 'base',
          rule_version: 3,
          amount_cents: 100,
          timing: 'return_window',
          expiry_months: 12,
        },
      ]);
    });

    it('given a fractional result when computed then it floors per rule per order', () => {
      // 2.5 % of 999 = 24.975
      expect(amounts(computeEarnings(input({ grossCents: 999, rules: [aRule({ earn_rate_pct: 2.5 })] })))).toEqual([24]);
    });

    it('given a float-unfriendly rate when computed then the rate is converted once to basis points', () => {
      // 1.15 % → 115 bps; 1.15 * 10000 / 100 in floats is 114.99999999999999
      expect(amounts(computeEarnings(input({ grossCents: 10_000, rules: [aRule({ earn_rate_pct: 1.15 })] })))).toEqual([115]);
    });

    it('given a tier multiplier when computed then base earns rate × multiplier with a single floor', () => {
      // 1 % × 1.5 on 10 001 = 150.015 → 150
      expect(
        amounts(computeEarnings(input({ grossCents: 10_001, tierMultiplier: 1.5, rules: [aRule()] }))),
      ).toEqual([150]);
      // 2.5 % × 1.25 on 999 = 31.21875 → 31 (flooring twice would give floor(24.975→24 × 1.25) = 30)
      expect(
        amounts(computeEarnings(input({ grossCents: 999, tierMultiplier: 1.25, rules: [aRule({ earn_rate_pct: 2.5 })] }))),
      ).toEqual([31]);
    });

    it('given a zero rate or a zero amount when computed then no line is produced', () => {
      expect(computeEarnings(input({ rules: [aRule({ earn_rate_pct: 0 })] }))).toEqual([]);
      expect(computeEarnings(input({ grossCents: 0, rules: [aRule()] }))).toEqual([]);
      expect(computeEarnings(input({ grossCents: 99, rules: [aRule()] }))).toEqual([]); // 0.99 → 0
      expect(computeEarnings(input({ tierMultiplier: 0, rules: [aRule()] }))).toEqual([]);
    });
  });

  describe('eligible amount', () => {
    it('given lines below gross when computed then base earns on the lines total', () => {
      const lines = [{ amount_cents: 4_000 }, { amount_cents: 2_000 }];
      expect(amounts(computeEarnings(input({ grossCents: 10_000, lines, rules: [aRule()] })))).toEqual([60]);
    });

    it('given lines above gross when computed then base earns on gross', () => {
      const lines = [{ amount_cents: 8_000 }, { amount_cents: 8_000 }];
      expect(amounts(computeEarnings(input({ grossCents: 10_000, lines, rules: [aRule()] })))).toEqual([100]);
    });

    it('given a gift-card line when computed then it never earns', () => {
      const lines = [{ amount_cents: 5_000 }, { amount_cents: 5_000, gift_card: true }];
      expect(amounts(computeEarnings(input({ grossCents: 10_000, lines, rules: [aRule()] })))).toEqual([50]);
    });

    it('given only gift-card lines when computed then nothing is earned', () => {
      const lines = [{ amount_cents: 10_000, gift_card: true, tags: ['shoes'] }];
      const rules = [aRule(), aRule({ id: 'B', type: 'category_boost', tags: ['shoes'] })];
      expect(computeEarnings(input({ lines, rules }))).toEqual([]);
    });
  });

  describe('category_boost rule', () => {
    const lines = [
      { amount_cents: 3_000, tags: ['shoes'] },
      { amount_cents: 2_000, tags: ['shirts', 'sale'] },
      { amount_cents: 5_000, tags: ['shoes'], gift_card: true },
    ];
    const boost = (overrides: Partial<Rule> = {}): Rule =>
      aRule({ id: 'B1', name: 'Shoe boost', type: 'category_boost', earn_rate_pct: 5, tags: ['shoes'], ...overrides });

    it('given tagged lines when computed then it earns its extra rate on those non-gift-card lines only', () => {
      expect(amounts(computeEarnings(input({ lines, rules: [boost()] })))).toEqual([150]);
      expect(amounts(computeEarnings(input({ lines, rules: [boost({ tags: ['sale', 'shoes'] })] })))).toEqual([250]);
    });

    it('given a base rule too when computed then both lines appear, in the rules order', () => {
      const result = computeEarnings(input({ lines, rules: [boost(), aRule({ id: 'R1' })] }));
      expect(result.map((line) => [line.rule_id, line.amount_cents])).toEqual([
        ['B1', 150],
        ['R1', 50], // eligible = 5 000 (gift card excluded)
      ]);
    });

    it('given a tier multiplier when computed then the boost is NOT multiplied (base only)', () => {
      expect(amounts(computeEarnings(input({ lines, tierMultiplier: 2, rules: [boost()] })))).toEqual([150]);
    });

    it('given tagged lines above gross when computed then the boosted sum is capped at the eligible amount', () => {
      expect(amounts(computeEarnings(input({ grossCents: 1_000, lines, rules: [boost()] })))).toEqual([50]);
    });

    it('given no lines, no matching tags or a rule without tags when computed then it earns nothing', () => {
      expect(computeEarnings(input({ lines: null, rules: [boost()] }))).toEqual([]);
      expect(computeEarnings(input({ lines, rules: [boost({ tags: ['hats'] })] }))).toEqual([]);
      expect(computeEarnings(input({ lines, rules: [boost({ tags: null })] }))).toEqual([]);
      expect(computeEarnings(input({ lines, rules: [boost({ tags: [] })] }))).toEqual([]);
    });
  });

  describe('minimum order and cap', () => {
    it('given eligible below min_order_cents when computed then the rule is skipped', () => {
      expect(computeEarnings(input({ grossCents: 4_999, rules: [aRule({ min_order_cents: 5_000 })] }))).toEqual([]);
    });

    it('given eligible exactly at min_order_cents when computed then the rule earns', () => {
      expect(amounts(computeEarnings(input({ grossCents: 5_000, rules: [aRule({ min_order_cents: 5_000 })] })))).toEqual([50]);
    });

    it('given gross above but eligible below the minimum when computed then the minimum is judged on eligible', () => {
      const lines = [{ amount_cents: 3_000 }, { amount_cents: 7_000, gift_card: true }];
      expect(computeEarnings(input({ grossCents: 10_000, lines, rules: [aRule({ min_order_cents: 5_000 })] }))).toEqual([]);
    });

    it('given a result above cap_per_order_cents when computed then it is capped', () => {
      expect(amounts(computeEarnings(input({ grossCents: 100_000, rules: [aRule({ cap_per_order_cents: 250 })] })))).toEqual([250]);
    });

    it('given a result below the cap when computed then it is unchanged', () => {
      expect(amounts(computeEarnings(input({ rules: [aRule({ cap_per_order_cents: 250 })] })))).toEqual([100]);
    });

    it('given a zero cap when computed then the rule produces no line', () => {
      expect(computeEarnings(input({ rules: [aRule({ cap_per_order_cents: 0 })] }))).toEqual([]);
    });

    it('given a cap and a tier multiplier when computed then the cap applies after the multiplier', () => {
      expect(
        amounts(computeEarnings(input({ grossCents: 100_000, tierMultiplier: 2, rules: [aRule({ cap_per_order_cents: 1_500 })] }))),
      ).toEqual([1_500]);
    });

    it('given caps and minimums on boosts and campaigns when computed then they apply per rule', () => {
      const lines = [{ amount_cents: 10_000, tags: ['shoes'] }];
      const rules = [
        aRule({ id: 'B', type: 'category_boost', tags: ['shoes'], earn_rate_pct: 10, cap_per_order_cents: 300 }),
        aRule({ id: 'C', type: 'campaign', earn_rate_pct: 10, min_order_cents: 20_000 }),
        aRule({ id: 'D', type: 'campaign', earn_rate_pct: 10, cap_per_order_cents: 700 }),
      ];
      expect(computeEarnings(input({ lines, rules })).map((line) => [line.rule_id, line.amount_cents])).toEqual([
        ['B', 300],
        ['D', 700],
      ]);
    });
  });

  describe('campaign rule', () => {
    const campaign = (overrides: Partial<Rule> = {}): Rule =>
      aRule({
        id: 'C1',
        name: 'Summer double',
        type: 'campaign',
        earn_rate_pct: 2,
        starts_at: '2024-06-01T00:00:00.000Z',
        ends_at: '2024-07-01T00:00:00.000Z',
        ...overrides,
      });

    it('given processing time inside the window when computed then it earns like base', () => {
      expect(computeEarnings(input({ rules: [campaign()] }))).toEqual([
        expect.objectContaining({ rule_id: 'C1', rule_type: 'campaign', amount_cents: 200 }),
      ]);
    });

    it.each([
      ['2024-05-31T23:59:59.999Z', []],
      ['2024-06-01T00:00:00.000Z', [200]],
      ['2024-06-30T23:59:59.999Z', [200]],
      ['2024-07-01T00:00:00.000Z', []],
    ])('given processing time %p when computed then it earns %p', (at, expected) => {
      expect(amounts(computeEarnings(input({ at, rules: [campaign()] })))).toEqual(expected);
    });

    it('given open bounds when computed then the campaign is active', () => {
      expect(amounts(computeEarnings(input({ rules: [campaign({ starts_at: null, ends_at: null })] })))).toEqual([200]);
      expect(amounts(computeEarnings(input({ rules: [aRule({ id: 'C1', type: 'campaign', earn_rate_pct: 2 })] })))).toEqual([200]);
    });

    it('given a tier multiplier when computed then the campaign is NOT multiplied (base only)', () => {
      expect(amounts(computeEarnings(input({ tierMultiplier: 3, rules: [campaign()] })))).toEqual([200]);
    });

    it('given a budget with room when computed then it earns in full', () => {
      expect(
        amounts(computeEarnings(input({ rules: [campaign({ budget_cents: 10_000 })], campaignIssuedCents: { C1: 9_800 } }))),
      ).toEqual([200]);
    });

    it('given a nearly exhausted budget when computed then it earns only the remainder', () => {
      expect(
        amounts(computeEarnings(input({ rules: [campaign({ budget_cents: 10_000 })], campaignIssuedCents: { C1: 9_950 } }))),
      ).toEqual([50]);
    });

    it('given an exhausted or overspent budget when computed then it earns nothing', () => {
      for (const issued of [10_000, 12_000]) {
        expect(
          computeEarnings(input({ rules: [campaign({ budget_cents: 10_000 })], campaignIssuedCents: { C1: issued } })),
        ).toEqual([]);
      }
    });

    it('given no issued record for the campaign when computed then nothing was issued yet', () => {
      expect(
        amounts(computeEarnings(input({ rules: [campaign({ budget_cents: 150 })], campaignIssuedCents: { OTHER: 1_000_000 } }))),
      ).toEqual([150]);
    });

    it('given a cap and a budget when computed then the smaller limit wins', () => {
      const rule = campaign({ budget_cents: 10_000, cap_per_order_cents: 120 });
      expect(amounts(computeEarnings(input({ rules: [rule], campaignIssuedCents: { C1: 9_850 } })))).toEqual([120]);
      expect(amounts(computeEarnings(input({ rules: [rule], campaignIssuedCents: { C1: 9_900 } })))).toEqual([100]);
    });

    it('given the same campaign listed twice when computed then the budget is shared within the order', () => {
      const rule = campaign({ budget_cents: 300 });
      expect(amounts(computeEarnings(input({ rules: [rule, rule] })))).toEqual([200, 100]);
    });

    it('given tags (no applies_to) when computed then it earns like a boost on the tagged lines', () => {
      const lines = [{ amount_cents: 4_000, tags: ['shoes'] }, { amount_cents: 6_000, tags: ['hats'] }];
      expect(amounts(computeEarnings(input({ lines, rules: [campaign({ tags: ['shoes'] })] })))).toEqual([80]);
    });

    it('given applies_to category_boost when computed then it earns on the tagged lines', () => {
      const lines = [{ amount_cents: 4_000, tags: ['shoes'] }, { amount_cents: 6_000 }];
      expect(
        amounts(computeEarnings(input({ lines, rules: [campaign({ applies_to: 'category_boost', tags: ['shoes'] })] }))),
      ).toEqual([80]);
    });

    it('given applies_to base with tags when computed then it earns on the whole eligible amount', () => {
      const lines = [{ amount_cents: 4_000, tags: ['shoes'] }, { amount_cents: 6_000 }];
      expect(
        amounts(computeEarnings(input({ lines, rules: [campaign({ applies_to: 'base', tags: ['shoes'] })] }))),
      ).toEqual([200]);
    });

    it('given an invalid window bound when computed then it throws', () => {
      expect(() => computeEarnings(input({ rules: [campaign({ starts_at: 'June' })] }))).toThrow(RangeError);
    });
  });

  describe('rule types that never earn on orders', () => {
    it('given signup_bonus and referral rules when computed then they produce nothing', () => {
      const rules = [
        aRule({ id: 'S', type: 'signup_bonus', amount_cents: 500, earn_rate_pct: 50 }),
        aRule({ id: 'F', type: 'referral', amount_cents: 1_000, friend_amount_cents: 500, earn_rate_pct: 50 }),
      ];
      expect(computeEarnings(input({ rules }))).toEqual([]);
    });
  });

  describe('all rule types together', () => {
    it('given a full programme when computed then each earning rule yields one line in the rules order', () => {
      const lines = [
        { amount_cents: 6_000, tags: ['shoes'] },
        { amount_cents: 3_000, tags: ['shirts'] },
        { amount_cents: 2_500, gift_card: true },
      ];
      const rules: Rule[] = [
        aRule({ id: 'S', type: 'signup_bonus', amount_cents: 500 }),
        aRule({ id: 'CAMP', type: 'campaign', earn_rate_pct: 1, budget_cents: 1_000 }),
        aRule({ id: 'BASE', type: 'base', earn_rate_pct: 2 }),
        aRule({ id: 'REF', type: 'referral', amount_cents: 1_000 }),
        aRule({ id: 'BOOST', type: 'category_boost', earn_rate_pct: 3, tags: ['shoes'] }),
      ];
      const result = computeEarnings(input({ grossCents: 11_500, lines, rules, tierMultiplier: 1.5 }));
      expect(result.map((line) => [line.rule_id, line.rule_type, line.amount_cents])).toEqual([
        ['CAMP', 'campaign', 90], // 1 % of 9 000
        ['BASE', 'base', 270], // 2 % × 1.5 of 9 000
        ['BOOST', 'category_boost', 180], // 3 % of 6 000
      ]);
    });

    it('given the same input twice when computed then the output is identical (deterministic)', () => {
      const rules = [aRule({ id: 'A' }), aRule({ id: 'B', earn_rate_pct: 2 })];
      expect(computeEarnings(input({ rules }))).toEqual(computeEarnings(input({ rules })));
    });

    it('given no rules when computed then nothing is earned', () => {
      expect(computeEarnings(input())).toEqual([]);
    });
  });

  describe('validation', () => {
    it('given an invalid processing time when computed then it throws', () => {
      expect(() => computeEarnings(input({ at: 'now' }))).toThrow(RangeError);
    });

    it('given a negative or fractional gross when computed then it throws', () => {
      expect(() => computeEarnings(input({ grossCents: -1 }))).toThrow(RangeError);
      expect(() => computeEarnings(input({ grossCents: 1.5 }))).toThrow(RangeError);
    });

    it('given an invalid rate or multiplier when computed then it throws', () => {
      expect(() => computeEarnings(input({ rules: [aRule({ earn_rate_pct: -1 })] }))).toThrow(RangeError);
      expect(() => computeEarnings(input({ tierMultiplier: Number.NaN }))).toThrow(RangeError);
    });

    it('given an unknown rule type (unvalidated input) when computed then it throws', () => {
      expect(() => computeEarnings(input({ rules: [aRule({ type: 'mystery' as never })] }))).toThrow(TypeError);
    });

    it('given a huge order when computed then the arithmetic stays exact', () => {
      const gross = Number.MAX_SAFE_INTEGER;
      const [line] = computeEarnings(input({ grossCents: gross, rules: [aRule({ earn_rate_pct: 1 })] }));
      expect(line?.amount_cents).toBe(Number((BigInt(gross) * 100n) / 10_000n));
    });
  });

  describe('properties', () => {
    const orderLine = fc.record({
      amount_cents: fc.integer({ min: 0, max: 500_000 }),
      gift_card: fc.boolean(),
      tags: fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 3 }),
    });
    const earningRule = fc
      .record({
        type: fc.constantFrom('base', 'category_boost', 'campaign', 'signup_bonus', 'referral' as const),
        earn_rate_pct: fc.integer({ min: 0, max: 10_000 }).map((bps) => bps / 100),
        tags: fc.option(fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 3 })),
        min_order_cents: fc.option(fc.integer({ min: 0, max: 1_000_000 })),
        cap_per_order_cents: fc.option(fc.integer({ min: 0, max: 100_000 })),
        budget_cents: fc.option(fc.integer({ min: 0, max: 100_000 })),
      })
      .map((fields) => aRule(fields));
    const earnInput = fc.record({
      grossCents: fc.integer({ min: 0, max: 5_000_000 }),
      lines: fc.option(fc.array(orderLine, { maxLength: 8 })),
      rules: fc.array(earningRule, { maxLength: 6 }).map((rules) => rules.map((rule, i) => ({ ...rule, id: `R${i}` }))),
      tierMultiplier: fc.integer({ min: 0, max: 50_000 }).map((bps) => bps / 10_000),
      at: fc.constant(AT),
      campaignIssuedCents: fc.dictionary(fc.constantFrom('R0', 'R1', 'R2'), fc.integer({ min: 0, max: 200_000 })),
    });

    it('every line is a positive safe integer from a distinct order-earning rule, in rules order', () => {
      fc.assert(
        fc.property(earnInput, (earn) => {
          const result = computeEarnings(earn);
          const ruleIds = earn.rules.map((rule) => rule.id);
          let last = -1;
          for (const line of result) {
            expect(Number.isSafeInteger(line.amount_cents) && line.amount_cents > 0).toBe(true);
            expect(['base', 'category_boost', 'campaign']).toContain(line.rule_type);
            const index = ruleIds.indexOf(line.rule_id);
            expect(index).toBeGreaterThan(last);
            last = index;
          }
        }),
      );
    });

    it('no line exceeds its cap, and non-base lines never exceed rate × eligible', () => {
      fc.assert(
        fc.property(earnInput, (earn) => {
          const byId = new Map(earn.rules.map((rule) => [rule.id, rule]));
          for (const line of computeEarnings(earn)) {
            const rule = byId.get(line.rule_id) as Rule;
            if (rule.cap_per_order_cents != null) {
              expect(line.amount_cents).toBeLessThanOrEqual(rule.cap_per_order_cents);
            }
            if (rule.type !== 'base') {
              expect(line.amount_cents * 10_000).toBeLessThanOrEqual(earn.grossCents * Math.round(rule.earn_rate_pct * 100));
            }
          }
        }),
      );
    });

    it('a campaign never issues beyond its budget', () => {
      fc.assert(
        fc.property(earnInput, (earn) => {
          const result = computeEarnings(earn);
          for (const rule of earn.rules) {
            if (rule.type !== 'campaign' || rule.budget_cents == null) continue;
            const issuedNow = result
              .filter((line) => line.rule_id === rule.id)
              .reduce((sum, line) => sum + line.amount_cents, 0);
            const before = earn.campaignIssuedCents[rule.id] ?? 0;
            expect(issuedNow).toBeLessThanOrEqual(Math.max(0, rule.budget_cents - before));
          }
        }),
      );
    });

    it('base earning is monotone in the eligible amount and the tier multiplier', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 0, max: 10_000_000 }),
          fc.integer({ min: 0, max: 10_000_000 }),
          fc.integer({ min: 10_000, max: 30_000 }),
          fc.integer({ min: 0, max: 1_000 }),
          (a, b, multBps, rateBps) => {
            const earn = (gross: number, multiplier: number): number =>
              computeEarnings(
                input({ grossCents: gross, tierMultiplier: multiplier, rules: [aRule({ earn_rate_pct: rateBps / 100 })] }),
              )[0]?.amount_cents ?? 0;
            const [low, high] = a <= b ? [a, b] : [b, a];
            expect(earn(low, 1)).toBeLessThanOrEqual(earn(high, 1));
            expect(earn(high, 1)).toBeLessThanOrEqual(earn(high, multBps / 10_000));
          },
        ),
      );
    });
  });
});
