import fc from 'fast-check';
import type { Tier } from '@loyalty/contracts';
import { evaluateTier, metricValue, qualifies, tierCriteria } from './tier.evaluator';
import type { TierMetrics } from './tier.evaluator';
import { aTier } from './testing/program.fixture';

const metrics = (overrides: Partial<TierMetrics> = {}): TierMetrics => ({ spend: 0, points: 0, orders: 0, ...overrides });

describe('tierCriteria', () => {
  it('given no criteria when read then the single threshold applies', () => {
    expect(tierCriteria(aTier({ threshold_type: 'orders', threshold_value: 5 }))).toEqual([{ metric: 'orders', threshold: 5 }]);
  });

  it('given criteria when read then they replace the single threshold', () => {
    const criteria = [{ metric: 'spend' as const, threshold: 100 }];
    expect(tierCriteria(aTier({ threshold_type: 'orders', threshold_value: 5, criteria }))).toEqual(criteria);
  });
});

describe('metricValue', () => {
  it('reads each metric and rejects unknown ones', () => {
    const m = metrics({ spend: 1, points: 2, orders: 3 });
    expect([metricValue(m, 'spend'), metricValue(m, 'points'), metricValue(m, 'orders')]).toEqual([1, 2, 3]);
    expect(() => metricValue(m, 'visits' as never)).toThrow(TypeError);
  });
});

describe('qualifies', () => {
  describe('given a single threshold (empty criteria)', () => {
    const gold = aTier({ threshold_type: 'spend', threshold_value: 50_000 });

    it('when the metric is below then it does not qualify', () => {
      expect(qualifies(gold, metrics({ spend: 49_999, points: 1e9, orders: 1e9 }))).toBe(false);
    });

    it('when the metric equals the threshold then it qualifies (>=)', () => {
      expect(qualifies(gold, metrics({ spend: 50_000 }))).toBe(true);
    });

    it('when the metric is above then it qualifies', () => {
      expect(qualifies(gold, metrics({ spend: 50_001 }))).toBe(true);
    });

    it.each([
      ['points', { points: 10 }, true],
      ['points', { points: 9 }, false],
      ['orders', { orders: 10 }, true],
      ['orders', { orders: 9, spend: 1e9 }, false],
    ] as const)('when the threshold type is %p and metrics are %p then qualifies is %p', (type, m, expected) => {
      expect(qualifies(aTier({ threshold_type: type, threshold_value: 10 }), metrics(m))).toBe(expected);
    });
  });

  describe('given several criteria', () => {
    const criteria = [
      { metric: 'spend' as const, threshold: 100_000 },
      { metric: 'orders' as const, threshold: 10 },
    ];

    it.each([
      [{ spend: 100_000, orders: 10 }, true],
      [{ spend: 100_000, orders: 9 }, false],
      [{ spend: 99_999, orders: 10 }, false],
      [{ spend: 0, orders: 0 }, false],
    ])('when mode is all and metrics are %p then qualifies is %p', (m, expected) => {
      expect(qualifies(aTier({ criteria, criteria_mode: 'all' }), metrics(m))).toBe(expected);
    });

    it.each([
      [{ spend: 100_000, orders: 10 }, true],
      [{ spend: 100_000, orders: 0 }, true],
      [{ spend: 0, orders: 10 }, true],
      [{ spend: 99_999, orders: 9 }, false],
    ])('when mode is any and metrics are %p then qualifies is %p', (m, expected) => {
      expect(qualifies(aTier({ criteria, criteria_mode: 'any' }), metrics(m))).toBe(expected);
    });

    it('when the mode is unknown (unvalidated input) then it throws', () => {
      expect(() => qualifies(aTier({ criteria, criteria_mode: 'most' as never }), metrics())).toThrow(TypeError);
    });
  });

  it('given a zero threshold when evaluated then every member qualifies', () => {
    expect(qualifies(aTier({ threshold_value: 0 }), metrics())).toBe(true);
  });

  it('property: "all" implies "any", and each implies its single-criterion tiers accordingly', () => {
    const criterion = fc.record({
      metric: fc.constantFrom('spend', 'points', 'orders' as const),
      threshold: fc.integer({ min: 0, max: 1_000 }),
    });
    const metricsArb = fc.record({
      spend: fc.integer({ min: 0, max: 1_000 }),
      points: fc.integer({ min: 0, max: 1_000 }),
      orders: fc.integer({ min: 0, max: 1_000 }),
    });
    fc.assert(
      fc.property(fc.array(criterion, { minLength: 1, maxLength: 4 }), metricsArb, (criteria, m) => {
        const all = qualifies(aTier({ criteria, criteria_mode: 'all' }), m);
        const any = qualifies(aTier({ criteria, criteria_mode: 'any' }), m);
        const each = criteria.map((c) => qualifies(aTier({ threshold_type: c.metric, threshold_value: c.threshold }), m));
        expect(all).toBe(each.every(Boolean));
        expect(any).toBe(each.some(Boolean));
        if (all) expect(any).toBe(true);
      }),
    );
  });
});

describe('evaluateTier', () => {
  const bronze = aTier({ name: 'Bronze', level: 0, threshold_value: 0 });
  const silver = aTier({ name: 'Silver', level: 1, threshold_value: 10_000 });
  const gold = aTier({ name: 'Gold', level: 2, threshold_value: 50_000 });
  const tiers = [gold, bronze, silver]; // deliberately unsorted

  it.each([
    [0, 'Bronze'],
    [9_999, 'Bronze'],
    [10_000, 'Silver'],
    [49_999, 'Silver'],
    [50_000, 'Gold'],
    [1_000_000, 'Gold'],
  ])('given spend %p when evaluated then the highest qualifying tier is %p', (spend, name) => {
    expect(evaluateTier(tiers, () => metrics({ spend }))?.name).toBe(name);
  });

  it('given no qualifying tier when evaluated then it is null', () => {
    expect(evaluateTier([silver, gold], () => metrics({ spend: 5 }))).toBeNull();
    expect(evaluateTier([], () => metrics())).toBeNull();
  });

  it('given per-tier windows when evaluated then each tier is judged on its own metrics', () => {
    const goldYearly = aTier({ name: 'Gold', level: 2, threshold_value: 50_000, window: 'calendar_year' });
    const silverLifetime = aTier({ name: 'Silver', level: 1, threshold_value: 10_000, window: 'lifetime' });
    const metricsFor = (tier: Tier): TierMetrics =>
      tier.window === 'lifetime' ? metrics({ spend: 80_000 }) : metrics({ spend: 20_000 });
    expect(evaluateTier([goldYearly, silverLifetime], metricsFor)?.name).toBe('Silver');
  });

  it('given a higher tier with any-mode criteria when evaluated then meeting one criterion is enough', () => {
    const vip = aTier({
      name: 'VIP',
      level: 3,
      criteria_mode: 'any',
      criteria: [
        { metric: 'spend', threshold: 1_000_000 },
        { metric: 'orders', threshold: 50 },
      ],
    });
    expect(evaluateTier([...tiers, vip], () => metrics({ spend: 20_000, orders: 50 }))?.name).toBe('VIP');
  });

  it('given two qualifying tiers of the same level when evaluated then the first listed wins', () => {
    const a = aTier({ name: 'A', level: 1 });
    const b = aTier({ name: 'B', level: 1 });
    expect(evaluateTier([a, b], () => metrics())?.name).toBe('A');
    expect(evaluateTier([b, a], () => metrics())?.name).toBe('B');
  });

  it('property: the result qualifies and no qualifying tier has a higher level', () => {
    const tierArb = fc.record({
      level: fc.integer({ min: 0, max: 10 }),
      threshold_type: fc.constantFrom('spend', 'points', 'orders' as const),
      threshold_value: fc.integer({ min: 0, max: 1_000 }),
    });
    fc.assert(
      fc.property(
        fc.array(tierArb.map((t) => aTier(t)), { maxLength: 6 }),
        fc.record({ spend: fc.nat(1_000), points: fc.nat(1_000), orders: fc.nat(1_000) }),
        (list, m) => {
          const result = evaluateTier(list, () => m);
          const qualifying = list.filter((tier) => qualifies(tier, m));
          if (result === null) {
            expect(qualifying).toEqual([]);
          } else {
            expect(qualifies(result, m)).toBe(true);
            expect(Math.max(...qualifying.map((tier) => tier.level))).toBe(result.level);
          }
        },
      ),
    );
  });
});
