import {
  EVENT_STATUSES, INBOUND_EVENT_TYPES, LEDGER_ENTRY_STATUSES, LEDGER_ENTRY_TYPES, MEMBER_STATES, REFERRAL_STATUSES, RULE_TYPES,
  TIER_METRICS, TIER_WINDOWS, TIMINGS, WEBHOOK_EVENT_KINDS,
} from '@loyalty/contracts';
import { PROBLEM_SLUGS } from '@loyalty/platform';
import { Schema, arrayOf, bool, cents, dateTime, enumOf, freeForm, id, int, nullable, num, obj, ref, str } from './schema-kit';

/**
 * Response schemas of the public API and the admin plane (components.schemas). Every 2xx body is
 * `{ data }` (lists add `pagination`); the envelopes are built per operation in operations.ts.
 * The e2e tier validates live responses against these with unknown fields refused, so a field the
 * service adds or drops without this file changing fails a test.
 */
const SCOPES = ['ingest', 'read', 'act', 'webhooks'] as const;
const MODES = ['live', 'test'] as const;

const balances = obj({
  pending_cents: cents('Earned, not yet usable (return window or manual approval)'),
  available_cents: cents('Usable now; negative after a refund took back points already spent'),
  reserved_cents: cents('Held by open checkout reservations'),
  spendable_cents: cents('available minus reserved: what a redemption may take now (never below 0)'),
  lifetime_earned_cents: cents('Running total of posted credits'),
  lifetime_redeemed_cents: cents('Running total of redemptions, net of restored vouchers'),
}, { description: 'Balances, integers in minor units' });

const memberTier = obj({
  name: str(), level: int(undefined, { minimum: 0 }), earn_multiplier: num('Multiplies the base earn rate (at most 4 decimals)'),
  benefits: freeForm('Tenant-defined keys'),
});

const member = obj({
  id: id('M', 'Public member id'),
  email: nullable(str('Identity anchor; null once erased', { format: 'email' })),
  phone: nullable(str('E.164')),
  external_ref: nullable(str("The merchant's own customer id")),
  state: enumOf(MEMBER_STATES, 'prospect → registered (enrolment) → active (first posted earn); paused, suspended by the admin; deleted on erasure, anonymised after the grace period'),
  referral_code: str('8 characters, Crockford base32'),
  tier: nullable(ref('MemberTier')),
  balances: ref('Balances'),
  expiring_30d_cents: cents('Unspent points whose expiry falls in the next 30 days'),
  enrolled_at: nullable(dateTime('When the member accepted the programme terms; null for a prospect')),
  marketing_consent: bool(),
  accepted_terms_version: nullable(str()),
  created_at: dateTime(),
}, { description: 'A member of the programme' });

const ledgerEntryProps = {
  id: id('LE'),
  type: enumOf(LEDGER_ENTRY_TYPES),
  status: enumOf(LEDGER_ENTRY_STATUSES, 'pending → posted (released) | under_review → posted | rejected; reversed once a reverse entry fully cancels it'),
  amount_cents: cents('Signed: credits positive, debits negative'),
  currency: str('The programme currency name'),
  reason_code: nullable(str('Why (adjustments, expiry, erasure, migration)')),
  rule: nullable(str('The rule that earned it')),
  parent_entry_id: nullable(str('The entry a reverse entry corrects')),
  release_at: nullable(dateTime('When a pending entry is released')),
  expires_at: nullable(dateTime()),
  created_at: dateTime(),
  order_ref: nullable(str('The order that caused it, if any')),
};
const ledgerEntry = obj(ledgerEntryProps, { description: 'An append-only ledger entry', optional: ['order_ref'] });

const adjustment = obj({
  ledger_entry_id: id('LE'), amount_cents: cents('Signed amount of the adjust entry'), reason_code: str(),
  status: enumOf(LEDGER_ENTRY_STATUSES), member_id: id('M'), created_at: dateTime(),
});

const eventStatus = obj({
  id: str('Event id (EV-…)'),
  type: enumOf(INBOUND_EVENT_TYPES),
  status: enumOf(EVENT_STATUSES),
  error: nullable(str('Why it failed or was ignored (older aggregate_version, unmatched customer, member cannot earn)')),
  ledger_entry_ids: arrayOf(str()),
  received_at: dateTime(),
  processed_at: nullable(dateTime()),
  order_ref: nullable(str()),
  idempotency_key: str('The header, the event id, or the derived `<type>:<order_ref>` key'),
}, { description: 'Processing status of an event (processing is asynchronous)' });

const eventAccepted = obj({
  id: str('Event id (EV-…); poll GET /v1/events/{id}'),
  type: enumOf(INBOUND_EVENT_TYPES),
  status: enumOf(EVENT_STATUSES),
  replayed: bool('true when this idempotency key was already known: the original is returned and nothing is enqueued'),
});

const batchEventResult = obj({
  index: int('Position in the batch', { minimum: 0 }),
  accepted: bool(),
  id: nullable(str()),
  status: nullable(enumOf(EVENT_STATUSES)),
  replayed: bool(),
  errors: arrayOf(ref('FieldError')),
});

const redemptionProps = {
  id: id('RD'),
  status: enumOf(['created', 'used', 'restored', 'expired', 'failed', 'pending_creation'], 'created (open voucher) → used (confirmed) | restored (voided) | expired; direct redemptions are used at once'),
  mode: enumOf(['voucher', 'direct']),
  amount_cents: cents('Value debited'),
  code: str('Single-use voucher code', { pattern: '^RWD-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$' }),
  order_ref: nullable(str()),
  ledger_entry_id: id('LE', 'The redeem entry'),
  expires_at: nullable(dateTime('Voucher expiry (the programme TTL, default 72 hours)')),
  created_at: dateTime(),
  member_id: id('M'),
};
const redemption = obj(redemptionProps);
const redemptionLookup = obj({ ...redemptionProps, valid: bool('Open and not expired: it can still be used') });

const reservation = obj({
  id: id('RS'),
  status: enumOf(['open', 'confirmed', 'released', 'expired']),
  member_id: id('M'),
  amount_cents: cents('Points held'),
  cart_ref: nullable(str()),
  order_ref: nullable(str()),
  ledger_entry_id: nullable(str('The redeem entry, once confirmed')),
  expires_at: dateTime('The hold lapses by itself then (default 15 minutes)'),
  created_at: dateTime(),
});

const quote = obj({
  spendable_cents: cents('What the member may spend now'),
  minimum_cents: cents('The programme minimum per redemption'),
  maximum_cents: cents('min(spendable, eligible total × max order share); 0 below the minimum or when the tender is blocked'),
  tender_blocked: bool('The payment method may not be combined with points'),
});

const rule = obj({
  id: str(), name: str(), type: enumOf(RULE_TYPES), version: int('Bumped on every change', { minimum: 1 }),
  earn_rate_pct: num('Percent of the eligible amount (1 = 1 %), at most 2 decimals'),
  timing: enumOf(TIMINGS, 'When the earned points become available'),
  tags: nullable(arrayOf(str())),
  min_order_cents: nullable(cents('Minimum order')), cap_per_order_cents: nullable(cents('Cap per order')),
  expiry_months: nullable(int()),
  starts_at: nullable(dateTime('campaign only')), ends_at: nullable(dateTime('campaign only')),
  budget_cents: nullable(cents('campaign only: total it may issue')),
  applies_to: nullable(enumOf(['base', 'category_boost'], 'campaign only')),
  amount_cents: nullable(cents('signup_bonus and referral: fixed amount')),
  friend_amount_cents: nullable(cents('referral: credit for the friend')),
}, { optional: ['starts_at', 'ends_at', 'budget_cents', 'applies_to', 'amount_cents', 'friend_amount_cents'] });

const tier = obj({
  name: str(), level: int(undefined, { minimum: 0 }), threshold_type: enumOf(TIER_METRICS), threshold_value: int(undefined, { minimum: 0 }),
  criteria: arrayOf(obj({ metric: enumOf(TIER_METRICS), threshold: int(undefined, { minimum: 0 }) }), { description: 'Empty: the single threshold applies' }),
  criteria_mode: enumOf(['all', 'any']), window: enumOf(TIER_WINDOWS), window_days: nullable(int()),
  earn_multiplier: num(), benefits: freeForm('Tenant-defined keys'),
});

const settings = obj({
  earn_on: enumOf(['order.paid', 'order.placed', 'order.fulfilled']),
  return_window_days: int(), negative_balance: enumOf(['allow', 'block']), write_off_after_days: nullable(int()),
  expiry: obj({
    policy: enumOf(['none', 'fixed_days', 'end_of_period', 'inactivity']), days: nullable(int()), period: nullable(enumOf(['month', 'quarter', 'year'])),
  }, { optional: ['days', 'period'] }),
  expiry_warning_days: int(), min_redeem_cents: cents('Minimum redemption'), max_order_share_pct: int(undefined, { minimum: 0, maximum: 100 }),
  blocked_payment_methods: arrayOf(str()), voucher_ttl_seconds: int(), reservation_ttl_seconds: int(), referral_daily_limit: int(),
  referral_link_template: nullable(str('With `{code}`')), erasure_grace_days: int(),
}, { description: 'Programme settings' });

const programProps = {
  id: id('P'), program_name: str(), currency_name: str('What members see'),
  rules: arrayOf(ref('Rule')), tiers: arrayOf(ref('Tier')), settings: ref('ProgramSettings'),
};
const program = obj(programProps, { description: 'The programme: rules and tiers in force' });

const liability = obj({
  outstanding_cents: cents('available + pending across members'),
  available_cents: cents('Available across members'),
  pending_cents: cents('Pending across members'),
  lifetime_issued_cents: cents('Posted credits, all time'),
  lifetime_redeemed_cents: cents('Redemptions net of restorations, all time'),
  members: int('Members neither deleted nor anonymised', { minimum: 0 }),
  negative_balance_cents: cents("Members' negative available balances, as a positive number (already netted in outstanding_cents)"),
  as_of: dateTime('The instant of the figure (programme time)'),
}, { description: 'Points liability (today: cached 30 s; with as_of: as it stood then)' });

const financePosition = obj({
  outstanding_cents: cents('available + pending'), available_cents: cents('Available'), pending_cents: cents('Pending'),
  members: int('Members neither deleted nor anonymised', { minimum: 0 }),
});
const rollForward = obj({
  from: dateTime('Start of the period (exclusive)'), to: dateTime('End of the period (inclusive)'),
  opening: ref('FinancePosition'), closing: ref('FinancePosition'),
  movements: obj({
    earned_cents: cents('Earn entries'), adjusted_cents: cents('Adjust entries, signed'), redeemed_cents: cents('Redeem entries'),
    restored_cents: cents('Reverses of redeems'), expired_cents: cents('Expire entries'), reversed_cents: cents('Reverses of earns and adjusts'),
    rejected_cents: cents('Earns rejected in the period'),
  }),
  breakage: obj({ rate_bps: int('floor(10000 × expired ÷ (expired + redeemed − restored)) up to `to`', { minimum: 0 }), expected_redemption_cents: cents('closing outstanding − breakage') }),
}, { description: 'opening + earned + adjusted − redeemed + restored − expired − reversed − rejected = closing' });

const referral = obj({
  id: id('RF'), code: str(), advocate_id: id('M'), friend_id: id('M'), status: enumOf(REFERRAL_STATUSES),
  created_at: dateTime(),
  hold_reasons: arrayOf(enumOf(['same_phone', 'same_email', 'daily_limit'])),
  order_ref: nullable(str("The friend's qualifying order")),
  qualified_at: nullable(dateTime()), rewarded_at: nullable(dateTime()), rejected_at: nullable(dateTime()),
  advocate_entry_id: nullable(str()), friend_entry_id: nullable(str()),
});

const referralDetails = obj({
  code: str('The member’s referral code'), link: nullable(str('Share link from the programme template')),
  stats: obj({ pending: int(), qualified: int(), rewarded: int() }),
});

const webhookEndpointProps = {
  id: id('WE'), url: str(undefined, { format: 'uri' }), events: arrayOf(enumOf(WEBHOOK_EVENT_KINDS)),
  status: enumOf(['active', 'disabled']), failure_count: int('Consecutive failed attempts', { minimum: 0 }),
  disabled_at: nullable(dateTime()), created_at: dateTime(),
};
const webhookEndpoint = obj(webhookEndpointProps);
const webhookEndpointCreated = obj({ ...webhookEndpointProps, secret: str('Signing secret `whsec_…`, shown this once') });
const webhookTestResult = obj({
  delivery_id: id('WD'), status_code: nullable(int('What the receiver answered')), ok: bool('2xx'),
  duration_ms: int(), error: nullable(str()),
});
const webhookDelivery = obj({
  id: id('WD'), type: str('Webhook event kind'), status: enumOf(['pending', 'sending', 'delivered', 'failed']), attempts: int(),
  next_attempt_at: nullable(dateTime()), last_status_code: nullable(int()), last_error: nullable(str()),
  delivered_at: nullable(dateTime()), created_at: dateTime(),
});

const ping = obj({ pong: bool(), mode: enumOf(MODES), scopes: arrayOf(enumOf(SCOPES)), program_id: id('P') });

const pagination = obj({ cursor: nullable(str('Pass back as ?cursor= for the next page; null at the end')) });

const fieldError = obj({ path: str('JSON pointer, e.g. /events/3/gross_cents'), message: str() });
const problem: Schema = {
  type: 'object',
  description: 'RFC 9457 problem details (application/problem+json)',
  required: ['type', 'title', 'status'],
  properties: {
    type: str('`{base_url}/docs/api/errors#<slug>`: the error catalogue entry', { format: 'uri' }),
    title: str(),
    status: int('The HTTP status'),
    detail: str(),
    errors: arrayOf(ref('FieldError'), { description: 'validation only: one per failing field' }),
    retry_after: int('rate-limited only: seconds to wait (also the Retry-After header)'),
    reason: enumOf(['in_progress', 'backlog'], 'idempotency-in-progress and backlog only'),
  },
};

// ---- admin plane ----
const apiKeyShown = obj({ id: str('Key id'), key: str('The key, shown this once'), scopes: arrayOf(enumOf(SCOPES)) });
const issuedKey = obj({
  id: str('Key id'), key: str('svc_live_… or svc_test_…, shown this once'), mode: enumOf(MODES), scopes: arrayOf(enumOf(SCOPES)),
  name: nullable(str()), created_at: dateTime(), rate_limit: obj({ burst: int(), per_second: num() }),
});
const apiKeyRecord = obj({
  id: str(), mode: enumOf(MODES), name: nullable(str()), scopes: arrayOf(enumOf(SCOPES)), prefix: str('First 12 characters'),
  created_at: dateTime(), expires_at: nullable(dateTime('Set on a rotated key: the end of its grace')), revoked_at: nullable(dateTime()),
});
const adminProgramCreated = obj({
  ...programProps, created_at: dateTime(), keys: obj({ live: ref('ApiKeyShown'), test: ref('ApiKeyShown') }),
});
const adminProgram = obj({ ...programProps, created_at: dateTime(), updated_at: dateTime(), keys: arrayOf(ref('ApiKeyRecord')) });

export const COMPONENT_SCHEMAS: Record<string, Schema> = {
  Member: member, Balances: balances, MemberTier: memberTier, LedgerEntry: ledgerEntry, Adjustment: adjustment,
  EventStatus: eventStatus, EventAccepted: eventAccepted, BatchEventResult: batchEventResult,
  Redemption: redemption, RedemptionLookup: redemptionLookup, Reservation: reservation, Quote: quote,
  Program: program, Rule: rule, Tier: tier, ProgramSettings: settings, Liability: liability,
  Referral: referral, ReferralDetails: referralDetails,
  WebhookEndpoint: webhookEndpoint, WebhookEndpointCreated: webhookEndpointCreated, WebhookTestResult: webhookTestResult, WebhookDelivery: webhookDelivery,
  Ping: ping, Pagination: pagination, FieldError: fieldError, Problem: problem,
  ApiKeyShown: apiKeyShown, IssuedKey: issuedKey, RotatedKey: obj({ ...(issuedKey.properties as Record<string, Schema>), old_key_expires_at: dateTime('The old key works until then') }),
  ApiKeyRecord: apiKeyRecord, AdminProgramCreated: adminProgramCreated, AdminProgram: adminProgram,
  KeyRevoked: obj({ id: str(), revoked: bool() }),
  TestClock: obj({ program_id: id('P'), mode: enumOf(['test']), now: dateTime('The sandbox clock after the move'), sweeps: arrayOf(enumOf(['fulfilled', 'rejected'])) }),
  RejectedCall: obj({
    method: str(), path: str(), status: int(), slug: str(), detail: nullable(str()), mode: nullable(enumOf(MODES)), key_id: nullable(str()),
    request_id: nullable(str()), at: dateTime(),
  }),
  MigrationResult: obj({ batch_id: str(), imported: int(), members_created: int() }),
  MigrationReversal: obj({ batch_id: str(), reversed: int('Entries reversed by this call'), entries: int('Entries in the batch') }),
  SandboxWiped: obj({ wiped: bool(), program_id: id('P'), mode: enumOf(['test']) }),
  AdminLedgerEntry: obj({ ...ledgerEntryProps, member_id: id('M') }, { optional: ['order_ref'] }),
  FinancePosition: financePosition, RollForward: rollForward,
  JournalEntry: obj({ ...ledgerEntryProps, member_id: id('M'), order_ref: nullable(str()) }),
};

/** Every problem slug the service can answer with (kept in step with PROBLEM_SLUGS). */
export const PROBLEM_SLUG_LIST = Object.keys(PROBLEM_SLUGS) as (keyof typeof PROBLEM_SLUGS)[];
