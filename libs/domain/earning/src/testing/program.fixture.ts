/** Test builders (used by the specs only; not exported from the library). */
import type { Rule, Tier } from '@loyalty/contracts';

export function aRule(overrides: Partial<Rule> = {}): Rule {
  return {
    id: 'R-base',
    name: 'Base earn',
    type: 'base',
    version: 1,
    earn_rate_pct: 1,
    timing: 'paid',
    tags: null,
    min_order_cents: null,
    cap_per_order_cents: null,
    expiry_months: null,
    ...overrides,
  };
}

export function aTier(overrides: Partial<Tier> = {}): Tier {
  return {
    name: 'Silver',
    level: 1,
    threshold_type: 'spend',
    threshold_value: 0,
    criteria: [],
    criteria_mode: 'all',
    window: 'lifetime',
    window_days: null,
    earn_multiplier: 1,
    benefits: {},
    ...overrides,
  };
}
