import type { Rule, RuleType, Timing } from '@loyalty/contracts';

/** One line of an order as the merchant sends it. */
export interface OrderLine {
  /** The line total in minor units (not the unit price). */
  amount_cents: number;
  /** Informational only: `amount_cents` already is the line total. */
  quantity?: number;
  /** Gift-card lines never earn. */
  gift_card?: boolean;
  tags?: string[] | null;
}

export interface EarnInput {
  /** The order's eligible merchandise total in minor units (after any voucher). */
  grossCents: number;
  /** Order lines; `null`, absent or empty means "no lines": earning uses `grossCents`. */
  lines?: OrderLine[] | null;
  /** The programme's rules, in the programme's order. */
  rules: Rule[];
  /** The member's current tier `earn_multiplier` (1 when no tier), e.g. 1 or 1.5. */
  tierMultiplier: number;
  /** ISO 8601 processing time; decides which campaigns are active. */
  at: string;
  /** Minor units already issued per campaign rule id (budget accounting). */
  campaignIssuedCents: Record<string, number>;
}

/** What one rule earns on one order (or on enrolment, for a signup bonus). */
export interface EarnLine {
  rule_id: string;
  rule_name: string;
  rule_type: RuleType;
  rule_version: number;
  /** Always a positive integer in minor units: zero results are omitted. */
  amount_cents: number;
  timing: Timing;
  expiry_months: number | null;
}
