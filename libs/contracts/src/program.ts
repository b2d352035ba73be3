/** Programme configuration as the admin plane stores it and the public API shows it (decisions §5, §6, §9). */

export const RULE_TYPES = ['base', 'category_boost', 'campaign', 'signup_bonus', 'referral'] as const;
export type RuleType = (typeof RULE_TYPES)[number];

export const TIMINGS = ['immediate', 'paid', 'fulfilled', 'delivered', 'return_window', 'manual'] as const;
export type Timing = (typeof TIMINGS)[number];

export interface Rule {
  id: string;
  name: string;
  type: RuleType;
  version: number;
  /** Percent of the eligible amount, e.g. 1 = 1 %, 2.5 = 2.5 %. Held internally as basis points. */
  earn_rate_pct: number;
  timing: Timing;
  tags: string[] | null;
  min_order_cents: number | null;
  cap_per_order_cents: number | null;
  expiry_months: number | null;
  /** campaign only */
  starts_at?: string | null;
  ends_at?: string | null;
  budget_cents?: number | null;
  /** campaign only: 'base' (on the whole eligible amount) or 'category_boost' (on tagged lines). Default base. */
  applies_to?: 'base' | 'category_boost' | null;
  /** signup_bonus and referral: fixed amount */
  amount_cents?: number | null;
  /** referral: credit for the friend too */
  friend_amount_cents?: number | null;
}

export const TIER_METRICS = ['spend', 'points', 'orders'] as const;
export type TierMetric = (typeof TIER_METRICS)[number];
export const TIER_WINDOWS = ['lifetime', 'calendar_year', 'rolling_365', 'custom'] as const;
export type TierWindow = (typeof TIER_WINDOWS)[number];

export interface Tier {
  name: string;
  level: number;
  threshold_type: TierMetric;
  threshold_value: number;
  criteria: { metric: TierMetric; threshold: number }[];
  criteria_mode: 'all' | 'any';
  window: TierWindow;
  window_days: number | null;
  earn_multiplier: number;
  benefits: Record<string, unknown>;
}

export interface ExpiryPolicy {
  policy: 'none' | 'fixed_days' | 'end_of_period' | 'inactivity';
  days?: number | null;
  period?: 'month' | 'quarter' | 'year' | null;
}

export interface ProgramSettings {
  earn_on: 'order.paid' | 'order.placed' | 'order.fulfilled';
  return_window_days: number;
  negative_balance: 'allow' | 'block';
  write_off_after_days: number | null;
  expiry: ExpiryPolicy;
  expiry_warning_days: number;
  min_redeem_cents: number;
  max_order_share_pct: number;
  blocked_payment_methods: string[];
  voucher_ttl_seconds: number;
  reservation_ttl_seconds: number;
  referral_daily_limit: number;
  referral_link_template: string | null;
  erasure_grace_days: number;
}

export const DEFAULT_SETTINGS: ProgramSettings = {
  earn_on: 'order.paid',
  return_window_days: 30,
  negative_balance: 'allow',
  write_off_after_days: null,
  expiry: { policy: 'none' },
  expiry_warning_days: 30,
  min_redeem_cents: 0,
  max_order_share_pct: 100,
  blocked_payment_methods: [],
  voucher_ttl_seconds: 259_200,
  reservation_ttl_seconds: 900,
  referral_daily_limit: 10,
  referral_link_template: null,
  erasure_grace_days: 0,
};

export interface Program {
  id: string;
  program_name: string;
  currency_name: string;
  rules: Rule[];
  tiers: Tier[];
  settings: ProgramSettings;
  created_at: string;
  updated_at: string;
}
