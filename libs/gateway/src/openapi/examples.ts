/**
 * Realistic examples for the API description: one coffee-shop programme, one member (Ada), one
 * order. Redocly checks every example against its schema (no-invalid-media-type-examples).
 */
export const EX_IDS = {
  program: 'P-01JD8X0Q4F2M7B9C3D5E6G7H8J',
  member: 'M-01JD8X3Q7R5V2M9K4T6W8Y0ZAB',
  friend: 'M-01JD8X5C2N8P4Q6R7S9T0V1W2X',
  entry: 'LE-01JD8X6H3K5M7N9P1Q2R4S6T8V',
  entry2: 'LE-01JD8X7J4M6N8P0Q2R3S5T7V9W',
  event: 'EV-01JD8X6F8A2B4C6D8E0F2G4H6J',
  redemption: 'RD-01JD8X9A1B3C5D7E9F1G3H5J7K',
  reservation: 'RS-01JD8XA2C4D6E8F0G2H4J6K8M0',
  referral: 'RF-01JD8XB3D5E7F9G1H3J5K7M9N1',
  webhook: 'WE-01JD8XC4E6F8G0H2J4K6M8N0P2',
  delivery: 'WD-01JD8XD5F7G9H1J3K5M7N9P1Q3',
};

const T0 = '2025-03-14T09:26:53.589Z';
const T1 = '2025-03-14T09:27:10.102Z';

export const EX_MEMBER = {
  id: EX_IDS.member, email: 'ada@example.com', phone: '+14155550100', external_ref: 'cust_42', state: 'active',
  referral_code: 'K7M2Q9TX', tier: { name: 'Gold', level: 2, earn_multiplier: 1.5, benefits: { free_shipping: true } },
  balances: {
    pending_cents: 0, available_cents: 1200, reserved_cents: 0, spendable_cents: 1200, lifetime_earned_cents: 1200, lifetime_redeemed_cents: 0,
  },
  expiring_30d_cents: 0, enrolled_at: T0, marketing_consent: true, accepted_terms_version: '2025-01', created_at: T0,
};
export const EX_NEW_MEMBER = {
  ...EX_MEMBER, state: 'registered', tier: null,
  balances: { pending_cents: 0, available_cents: 0, reserved_cents: 0, spendable_cents: 0, lifetime_earned_cents: 0, lifetime_redeemed_cents: 0 },
};
export const EX_PROSPECT = { ...EX_NEW_MEMBER, email: null, external_ref: null, state: 'prospect', enrolled_at: null, marketing_consent: false, accepted_terms_version: null };
export const EX_DELETED = { ...EX_NEW_MEMBER, email: null, phone: null, external_ref: null, state: 'deleted' };

export const EX_ENTRY = {
  id: EX_IDS.entry, type: 'earn', status: 'posted', amount_cents: 1200, currency: 'beans', reason_code: null, rule: 'base',
  parent_entry_id: null, release_at: null, expires_at: null, created_at: T1, order_ref: 'ord_1',
};
export const EX_ADJUSTMENT = { ledger_entry_id: EX_IDS.entry2, amount_cents: 500, reason_code: 'goodwill', status: 'posted', member_id: EX_IDS.member, created_at: T1 };

export const EX_EVENT_ACCEPTED = { id: EX_IDS.event, type: 'order.paid', status: 'queued', replayed: false };
export const EX_EVENT_STATUS = {
  id: EX_IDS.event, type: 'order.paid', status: 'completed', error: null, ledger_entry_ids: [EX_IDS.entry], received_at: T0, processed_at: T1,
  order_ref: 'ord_1', idempotency_key: 'order.paid:ord_1',
};
export const EX_ORDER_PAID = {
  type: 'order.paid', order_ref: 'ord_1', gross_cents: 12000, customer_ref: 'cust_42', currency: 'USD',
  lines: [{ product_ref: 'sku_espresso_beans', amount_cents: 12000, quantity: 2, tags: ['coffee'] }],
};

export const EX_REDEMPTION = {
  id: EX_IDS.redemption, status: 'created', mode: 'voucher', amount_cents: 500, code: 'RWD-7KQ2-M9XT', order_ref: null,
  ledger_entry_id: EX_IDS.entry2, expires_at: '2025-03-17T09:27:10.102Z', created_at: T1, member_id: EX_IDS.member,
};
export const EX_RESERVATION = {
  id: EX_IDS.reservation, status: 'open', member_id: EX_IDS.member, amount_cents: 500, cart_ref: 'cart_981', order_ref: null,
  ledger_entry_id: null, expires_at: '2025-03-14T09:42:10.102Z', created_at: T1,
};
export const EX_QUOTE = { spendable_cents: 1200, minimum_cents: 100, maximum_cents: 1200, tender_blocked: false };

export const EX_RULE = {
  id: 'rule_1', name: 'Base', type: 'base', version: 1, earn_rate_pct: 10, timing: 'immediate', tags: null,
  min_order_cents: null, cap_per_order_cents: null, expiry_months: null,
};
export const EX_TIER = {
  name: 'Gold', level: 2, threshold_type: 'spend', threshold_value: 100000, criteria: [], criteria_mode: 'any', window: 'rolling_365',
  window_days: null, earn_multiplier: 1.5, benefits: { free_shipping: true },
};
export const EX_SETTINGS = {
  earn_on: 'order.paid', return_window_days: 30, negative_balance: 'allow', write_off_after_days: null, expiry: { policy: 'none' },
  expiry_warning_days: 30, min_redeem_cents: 100, max_order_share_pct: 100, blocked_payment_methods: [], voucher_ttl_seconds: 259200,
  reservation_ttl_seconds: 900, referral_daily_limit: 10, referral_link_template: 'https://shop.example.com/r/{code}', erasure_grace_days: 0,
};
export const EX_PROGRAM = { id: EX_IDS.program, program_name: 'Coffee Club', currency_name: 'beans', rules: [EX_RULE], tiers: [EX_TIER], settings: EX_SETTINGS };
export const EX_LIABILITY = {
  outstanding_cents: 1842500, available_cents: 1530000, pending_cents: 312500, lifetime_issued_cents: 2950000, lifetime_redeemed_cents: 1107500,
  members: 1843, negative_balance_cents: 4200, as_of: T1,
};
export const EX_ROLL_FORWARD = {
  from: '2026-09-30T23:59:59.000Z', to: '2026-10-31T23:59:59.000Z',
  opening: { outstanding_cents: 10000, available_cents: 9000, pending_cents: 1000, members: 4 },
  closing: { outstanding_cents: 11150, available_cents: 11000, pending_cents: 150, members: 5 },
  movements: { earned_cents: 3000, adjusted_cents: -100, redeemed_cents: 1500, restored_cents: 200, expired_cents: 300, reversed_cents: 100, rejected_cents: 50 },
  breakage: { rate_bps: 1875, expected_redemption_cents: 9060 },
};

export const EX_REFERRAL = {
  id: EX_IDS.referral, code: 'K7M2Q9TX', advocate_id: EX_IDS.member, friend_id: EX_IDS.friend, status: 'pending', created_at: T1,
  hold_reasons: [], order_ref: null, qualified_at: null, rewarded_at: null, rejected_at: null, advocate_entry_id: null, friend_entry_id: null,
};
export const EX_REFERRAL_DETAILS = { code: 'K7M2Q9TX', link: 'https://shop.example.com/r/K7M2Q9TX', stats: { pending: 1, qualified: 0, rewarded: 2 } };

export const EX_WEBHOOK = {
  id: EX_IDS.webhook, url: 'https://shop.example.com/hooks/loyalty', events: ['balance.updated', 'redemption.created'], status: 'active',
  failure_count: 0, disabled_at: null, created_at: T0,
};
export const EX_WEBHOOK_CREATED = { ...EX_WEBHOOK, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw6UYJmMz4Yxc=' };
export const EX_WEBHOOK_TEST = { delivery_id: EX_IDS.delivery, status_code: 200, ok: true, duration_ms: 84, error: null };
export const EX_DELIVERY = {
  id: EX_IDS.delivery, type: 'balance.updated', status: 'delivered', attempts: 1, next_attempt_at: null, last_status_code: 200,
  last_error: null, delivered_at: T1, created_at: T1,
};

export const EX_PING = { pong: true, mode: 'test', scopes: ['ingest', 'read', 'act', 'webhooks'], program_id: EX_IDS.program };

const KEY_LIVE = 'svc_live_4eC39HqLyjWDarjtT1zdp7dcA9bZ2xQm';
const KEY_TEST = 'svc_test_9aB7cD5eF3gH1iJ0kL2mN4oP6qR8sT0uV';
export const EX_ADMIN_PROGRAM_CREATED = {
  ...EX_PROGRAM, created_at: T0,
  keys: { live: { id: 'K-01JD8X0Q4F2M7B9C3D5E6G7H8K', key: KEY_LIVE, scopes: ['ingest', 'read', 'act', 'webhooks'] }, test: { id: 'K-01JD8X0Q4F2M7B9C3D5E6G7H8M', key: KEY_TEST, scopes: ['ingest', 'read', 'act', 'webhooks'] } },
};
export const EX_KEY_RECORD = {
  id: 'K-01JD8X0Q4F2M7B9C3D5E6G7H8K', mode: 'live', name: null, scopes: ['ingest', 'read', 'act', 'webhooks'], prefix: 'svc_live_4eC',
  created_at: T0, expires_at: null, revoked_at: null,
};
export const EX_ISSUED_KEY = {
  id: 'K-01JD8X0Q4F2M7B9C3D5E6G7H8N', key: 'svc_live_Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed', mode: 'live', scopes: ['read'], name: 'reporting',
  created_at: T1, rate_limit: { burst: 50, per_second: 10 },
};
export const EX_ADMIN_PROGRAM = { ...EX_PROGRAM, created_at: T0, updated_at: T1, keys: [EX_KEY_RECORD] };
