import type { ProblemSlug } from '@loyalty/platform';
import * as X from './examples';
import { Schema, ref } from './schema-kit';

/**
 * What each operation answers, keyed by `METHOD /path` as Nest routes it. Paths, parameters,
 * request bodies, scopes and idempotency come from the controllers and DTOs; this table adds what
 * they cannot say: the 2xx bodies, the operation's own problems, words and examples.
 *
 * The problems every operation shares are derived in document.ts, not listed here: 401 (any
 * authenticated route), 403 (a scope is required), 404 (a path parameter names a resource), 400/413/
 * 422 (a body or query), 409 idempotency (an `Idempotency-Key` route), 429 and 5XX.
 *
 * To document a new endpoint: add its entry here (and any new schema to schemas.ts); the unit test
 * `openapi.spec.ts` fails while an operation is missing, and `npm run api:generate` refreshes the
 * committed document, the SDK types and docs/errors.md.
 */
export interface SuccessDoc {
  description: string;
  /** schema of `data` (a component name or an inline schema); omit for 204 */
  data?: string | Schema;
  /** `data` is an array of it plus `pagination` */
  list?: boolean;
  /** `data` is an array of it, without pagination (short, bounded lists) */
  array?: boolean;
  example?: unknown;
}

export interface OperationDoc {
  summary: string;
  description: string;
  /** overrides the controller's tag */
  tag?: string;
  ok: Record<number, SuccessDoc>;
  /** problems particular to this operation */
  errors?: ProblemSlug[];
  /** example request body */
  request?: unknown;
  /** extra response headers on success (name → description) */
  headers?: Record<string, string>;
  /** corrections to parameters Nest reads from `@Query('name')`/`@Param('name')` (it cannot see their types) */
  params?: Record<string, { required?: boolean; description?: string; schema?: Schema }>;
}

const MEMBER_ID_FORMS = 'The member: `M-…`, `ref:<external_ref>` or `phone:<E.164>` (`+` as `%2B`).';
const list = (data: string, description: string, example: unknown): Record<number, SuccessDoc> => ({ 200: { description, data, list: true, example } });
const one = (data: string, description: string, example: unknown, status = 200): Record<number, SuccessDoc> => ({ [status]: { description, data, example } });

export const OPERATION_DOCS: Record<string, OperationDoc> = {
  // ---- programme, keys, finance ----
  'GET /v1/ping': {
    summary: 'Verify a key', tag: 'programme',
    description: 'Checks the API key: answers with its mode (`live` or `test`), its scopes and the programme it belongs to. Any valid key may call it.',
    ok: one('Ping', 'The key is valid', { data: X.EX_PING }),
  },
  'GET /v1/programs': {
    summary: 'Read the programme',
    description: 'The programme the key belongs to: its rules, tiers and settings as they are in force now. Events earn under the rules in force when they are processed.',
    ok: one('Program', 'The programme', { data: X.EX_PROGRAM }),
  },
  'GET /v1/programmes': {
    summary: 'Read the programme (alias)',
    description: 'The same as `GET /v1/programs`, under the British spelling.',
    ok: one('Program', 'The programme', { data: X.EX_PROGRAM }),
  },
  'GET /v1/tenant/liability/roll-forward': {
    summary: 'Roll the liability forward over a period', tag: 'finance',
    description: 'Opening and closing positions at `from` and `to` (programme time; `from` < `to` ≤ now), the movements of the entries created in (`from`, `to`] by kind, and breakage. opening + movements = closing exactly, and periods chain.',
    ok: one('RollForward', 'The roll-forward, in minor units', { data: X.EX_ROLL_FORWARD }),
  },
  'GET /v1/ledger-entries': {
    summary: "List every member's entries of a period", tag: 'finance',
    description: 'Entries created in (`from`, `to`], oldest first (created_at, then id), with `member_id` and `order_ref`; cursor pagination (limit 1–1000, default 100). With `Accept: text/csv` the whole period streams as RFC 4180 CSV (no pagination).',
    ok: list('JournalEntry', 'A page of entries', { data: [], pagination: { cursor: null } }),
  },
  'GET /admin/v1/programs/{pid}/finance/roll-forward': {
    summary: 'Roll the liability forward (admin)', tag: 'admin',
    description: 'The roll-forward of a programme and mode (`mode`, default live), as `GET /v1/tenant/liability/roll-forward` answers it; what `finance roll-forward` of the admin CLI prints.',
    ok: one('RollForward', 'The roll-forward, in minor units', { data: X.EX_ROLL_FORWARD }),
  },
  'GET /v1/tenant/liability': {
    summary: 'Read the points liability', tag: 'finance',
    description: 'What the programme owes its members now: outstanding points (available plus pending), lifetime issued and redeemed, and the number of members. The figure is cached for 30 seconds per programme and mode (`Cache-Control: max-age=30`).',
    ok: one('Liability', 'The liability, in minor units', { data: X.EX_LIABILITY }),
    headers: { 'Cache-Control': '`max-age=30`: the figure is cached for 30 seconds' },
  },

  // ---- members ----
  'GET /v1/members': {
    summary: 'List members',
    description: 'Members of the programme (of the key\'s mode), oldest first, 25 per page by default (at most 100). Filter by exact `email` or by `state`. Walk the pages with `pagination.cursor`.',
    ok: list('Member', 'A page of members', { data: [X.EX_MEMBER], pagination: { cursor: null } }),
  },
  'POST /v1/members': {
    summary: 'Enrol a member',
    description: 'Enrols a customer: records that they accepted the programme terms. The email anchors identity. Enrolling an unknown email creates the member (201, state `registered`); enrolling a known one, or a prospect seen on an order, answers 200 with the member, enriched with the phone and external ref you send. A phone that belongs to another member is a 409. Send an `Idempotency-Key` to retry safely.',
    ok: { 201: { description: 'Enrolled: a new member', data: 'Member', example: { data: X.EX_NEW_MEMBER } }, 200: { description: 'Already enrolled (or a prospect now enrolled): the member', data: 'Member', example: { data: X.EX_MEMBER } } },
    errors: ['phone-conflict'],
    request: { email: 'ada@example.com', phone: '+14155550100', external_ref: 'cust_42', accepted_terms_version: '2025-01', marketing_consent: true },
  },
  'POST /v1/members/resolve': {
    summary: 'Find or create a member by identifiers',
    description: 'Looks a member up by `email`, `phone` or `external_ref` (at least one). 200 with the matching member; 201 with a new silent `prospect` when none matches (prospects earn but cannot spend until enrolled); 409 `phone-conflict` when the identifiers point to different members.',
    ok: { 200: { description: 'The matching member', data: 'Member', example: { data: X.EX_MEMBER } }, 201: { description: 'A new prospect', data: 'Member', example: { data: X.EX_PROSPECT } } },
    errors: ['phone-conflict'],
    request: { phone: '+14155550100' },
  },
  'GET /v1/members/{id}': {
    summary: 'Read a member',
    description: `A member with balances, tier and the points expiring within 30 days. ${MEMBER_ID_FORMS}`,
    ok: one('Member', 'The member', { data: X.EX_MEMBER }),
  },
  'PATCH /v1/members/{id}': {
    summary: 'Update a member',
    description: `Updates \`phone\`, \`external_ref\`, \`marketing_consent\` or \`accepted_terms_version\` (which enrols a prospect). \`email\` never changes through the API: sending it is a 422. ${MEMBER_ID_FORMS}`,
    ok: one('Member', 'The updated member', { data: X.EX_MEMBER }),
    errors: ['phone-conflict'],
    request: { phone: '+14155550199', marketing_consent: false },
  },
  'DELETE /v1/members/{id}': {
    summary: 'Erase a member',
    description: `Honours an erasure request: open reservations are released, open vouchers voided, the remaining balance forfeited by an \`expire\` entry (reason \`erasure\`), and email, phone and external ref erased everywhere. The id still resolves to the tombstone (state \`deleted\`); the same email can enrol again as a new member. ${MEMBER_ID_FORMS}`,
    ok: one('Member', 'The erased member (state `deleted`)', { data: X.EX_DELETED }),
  },
  'GET /v1/members/{id}/ledger': {
    summary: "Read a member's ledger",
    description: `The member's ledger entries, oldest first, 50 per page by default (at most 200). The ledger is append-only: corrections are \`reverse\` entries pointing at their parent. ${MEMBER_ID_FORMS}`,
    ok: list('LedgerEntry', 'A page of ledger entries', { data: [X.EX_ENTRY], pagination: { cursor: null } }),
  },
  'POST /v1/members/{id}/adjust': {
    summary: 'Adjust a balance',
    description: `A manual credit (positive \`amount_cents\`) or debit (negative), with a \`reason_code\`. The API key is recorded as the audited actor. Idempotent by the \`Idempotency-Key\` header or the body's \`idempotency_key\`. ${MEMBER_ID_FORMS}`,
    ok: one('Adjustment', 'The adjust entry written', { data: X.EX_ADJUSTMENT }, 201),
    errors: ['invalid-state', 'idempotency-key-reused'],
    request: { amount_cents: 500, reason_code: 'goodwill', note: 'Late delivery, order ord_1' },
  },

  // ---- events ----
  'POST /v1/events': {
    summary: 'Send commerce events',
    description: 'Sends one event, or a batch `{ "events": [...] }` of 1 to 100. Processing is asynchronous: the answer says the event was accepted (`queued`); poll `GET /v1/events/{id}` for the outcome and the ledger entries it wrote. The idempotency key is the `Idempotency-Key` header (single events), else the event\'s `id`, else `<type>:<order_ref>` (`order.refunded:<order_ref>:<refund_ref>` for refunds): a replay answers 200 with `replayed: true` and is not processed again. A batch of n events costs ceil(n/10) rate-limit tokens. One invalid event refuses the whole batch (422, paths such as `/events/3/gross_cents`). 429 `backlog` when more than 20,000 events wait for the programme.',
    ok: {
      202: {
        description: 'Accepted for asynchronous processing: EventAccepted for a single event, an array of BatchEventResult for a batch',
        data: { oneOf: [ref('EventAccepted'), { type: 'array', items: ref('BatchEventResult') }] },
        example: { data: X.EX_EVENT_ACCEPTED },
      },
      200: { description: 'A single event whose idempotency key is already known: the original, with `replayed: true`', data: 'EventAccepted', example: { data: { ...X.EX_EVENT_ACCEPTED, status: 'completed', replayed: true } } },
    },
    errors: ['backlog'],
    request: X.EX_ORDER_PAID,
  },
  'GET /v1/events': {
    summary: 'List events',
    description: 'Events sent, newest first, with their status and, for failed ones, why (for example an older `aggregate_version` or an unmatched customer). Filter by `status`, `order_ref` or `type`.',
    ok: list('EventStatus', 'A page of events', { data: [X.EX_EVENT_STATUS], pagination: { cursor: null } }),
  },
  'GET /v1/events/{id}': {
    summary: 'Read an event\'s status',
    description: 'Where an event is in processing: `queued` → `running` → `completed` (with the ledger entries it wrote) or `failed` (with the reason in `error`).',
    ok: one('EventStatus', 'The event status', { data: X.EX_EVENT_STATUS }),
  },

  // ---- redemptions ----
  'POST /v1/members/{id}/redemptions': {
    summary: 'Redeem points (voucher or direct)',
    description: `Debits points at once. \`mode: voucher\` (default) returns a single-use code \`RWD-XXXX-XXXX\` that is open (\`created\`) until confirmed with an order, voided, or expired (programme TTL, default 72 hours: the points come back). \`mode: direct\` needs an \`order_ref\` and is \`used\` at once. 402 when the member's state forbids spending (a prospect, paused, suspended or deleted member). ${MEMBER_ID_FORMS}`,
    ok: one('Redemption', 'The redemption (value already debited)', { data: X.EX_REDEMPTION }, 201),
    errors: ['redemption-not-allowed', 'balance-insufficient', 'rule-ineligible'],
    request: { amount_cents: 500, mode: 'voucher' },
  },
  'GET /v1/redemptions': {
    summary: 'Look a voucher up by code',
    description: 'Finds a voucher by its code: its value, owner, status and whether it can still be used (`valid`).',
    ok: one('RedemptionLookup', 'The voucher', { data: { ...X.EX_REDEMPTION, valid: true } }),
    errors: ['not-found'],
  },
  'GET /v1/redemptions/{id}': {
    summary: 'Read a redemption',
    description: 'A voucher or direct redemption by id.',
    ok: one('Redemption', 'The redemption', { data: X.EX_REDEMPTION }),
  },
  'POST /v1/redemptions/{id}/confirm': {
    summary: 'Confirm a voucher',
    description: 'Marks an open voucher `used` by an order. Confirming a used voucher again with the same `order_ref` is an idempotent 200; any other cross-state call is 409 `invalid-state`.',
    ok: one('Redemption', 'The voucher, now `used`', { data: { ...X.EX_REDEMPTION, status: 'used', order_ref: 'ord_2' } }),
    errors: ['invalid-state'],
    request: { order_ref: 'ord_2' },
  },
  'POST /v1/redemptions/{id}/void': {
    summary: 'Void a voucher',
    description: 'Voids an open voucher: the points go back to the wallet at once (a `reverse` entry). Voiding a restored voucher again is an idempotent 200; voiding a used one is 409 `invalid-state`.',
    ok: one('Redemption', 'The voucher, now `restored`', { data: { ...X.EX_REDEMPTION, status: 'restored' } }),
    errors: ['invalid-state'],
  },

  // ---- checkout ----
  'POST /v1/redemption-quotes': {
    summary: 'Quote a redemption at checkout',
    description: 'What the member may redeem on this cart, without holding anything: the spendable balance, the programme minimum, and the maximum (limited by the programme\'s share of the order; 0 when the payment method is blocked).',
    ok: one('Quote', 'The quote', { data: X.EX_QUOTE }),
    errors: ['not-found'],
    request: { member_id: 'ref:cust_42', eligible_total_cents: 4500, payment_method: 'card' },
  },
  'POST /v1/redemption-reservations': {
    summary: 'Hold points for a checkout',
    description: 'Holds points for a cart: `reserved_cents` rises and `spendable_cents` falls; nothing is debited yet. Confirm with the order (or send the order event with `reservation_id`), or release it; it lapses by itself after the programme\'s reservation TTL (default 15 minutes). Send an `Idempotency-Key`.',
    ok: one('Reservation', 'The reservation, `open`', { data: X.EX_RESERVATION }, 201),
    errors: ['not-found', 'redemption-not-allowed', 'balance-insufficient', 'rule-ineligible'],
    request: { member_id: 'ref:cust_42', amount_cents: 500, cart_ref: 'cart_981', eligible_total_cents: 4500, payment_method: 'card' },
  },
  'GET /v1/redemption-reservations/{id}': {
    summary: 'Read a reservation',
    description: 'A checkout reservation by id.',
    ok: one('Reservation', 'The reservation', { data: X.EX_RESERVATION }),
  },
  'POST /v1/redemption-reservations/{id}/confirm': {
    summary: 'Confirm a reservation',
    description: 'Debits the held points for the order (a `redeem` entry). Repeating it is an idempotent 200; confirming a released or expired reservation is 409 `invalid-state`.',
    ok: one('Reservation', 'The reservation, `confirmed`', { data: { ...X.EX_RESERVATION, status: 'confirmed', order_ref: 'ord_2', ledger_entry_id: X.EX_IDS.entry2 } }),
    errors: ['invalid-state', 'balance-insufficient'],
    request: { order_ref: 'ord_2' },
  },
  'POST /v1/redemption-reservations/{id}/release': {
    summary: 'Release a reservation',
    description: 'Gives the held points back (an abandoned cart costs nothing). Repeating it is an idempotent 200; releasing a confirmed reservation is 409 `invalid-state`.',
    ok: one('Reservation', 'The reservation, `released`', { data: { ...X.EX_RESERVATION, status: 'released' } }),
    errors: ['invalid-state'],
  },

  // ---- referrals ----
  'POST /v1/referrals': {
    summary: 'Record a referral',
    description: 'Links a friend (enrol them first) to the advocate who owns `code`. The advocate is rewarded when the friend\'s first qualifying order arrives. A referral the fraud checks distrust (same phone or normalised email as the advocate, or over the advocate\'s daily limit) comes back `held` and pays nothing until the programme admin approves it. Self-referral or a friend who already ordered: 422 `rule-ineligible`; a friend already referred: 409.',
    ok: one('Referral', 'The referral: `pending` or `held`', { data: X.EX_REFERRAL }, 201),
    errors: ['not-found', 'conflict', 'rule-ineligible'],
    request: { code: 'K7M2Q9TX', friend_member_id: 'ref:cust_77' },
  },
  'GET /v1/referrals/{id}': {
    summary: 'Read a referral',
    description: 'A referral by id, with what explains its status (hold reasons, the qualifying order, the reward entries).',
    ok: one('Referral', 'The referral', { data: X.EX_REFERRAL }),
  },
  'GET /v1/members/{id}/referral': {
    summary: "Read a member's referral details", tag: 'referrals',
    description: `The member's referral code, share link (from the programme's link template, or null) and counters of the referrals they made. ${MEMBER_ID_FORMS}`,
    ok: one('ReferralDetails', 'The referral details', { data: X.EX_REFERRAL_DETAILS }),
  },

  // ---- webhooks ----
  'GET /v1/webhook_endpoints': {
    summary: 'List webhook endpoints',
    description: 'Every webhook endpoint of the programme (of the key\'s mode), secrets hidden. One page: `pagination.cursor` is always null.',
    ok: list('WebhookEndpoint', 'The endpoints', { data: [X.EX_WEBHOOK], pagination: { cursor: null } }),
  },
  'POST /v1/webhook_endpoints': {
    summary: 'Register a webhook endpoint',
    description: 'Registers an https URL for the listed event kinds. The answer carries the signing `secret`, shown this once. Deliveries follow the Standard Webhooks specification (headers `webhook-id`, `webhook-timestamp`, `webhook-signature`), at least once, retried with backoff; 20 consecutive failures (or a 410) disable the endpoint. http is accepted only for a loopback host with a test key; URLs resolving to private addresses are refused in live mode.',
    ok: one('WebhookEndpointCreated', 'The endpoint and its secret (shown once)', { data: X.EX_WEBHOOK_CREATED }, 201),
    request: { url: 'https://shop.example.com/hooks/loyalty', events: ['balance.updated', 'redemption.created'] },
  },
  'GET /v1/webhook_endpoints/{id}': {
    summary: 'Read a webhook endpoint',
    description: 'An endpoint with its health: `failure_count` counts consecutive failed attempts; `disabled_at` is set once disabled.',
    ok: one('WebhookEndpoint', 'The endpoint', { data: X.EX_WEBHOOK }),
  },
  'DELETE /v1/webhook_endpoints/{id}': {
    summary: 'Delete a webhook endpoint',
    description: 'Stops deliveries to the endpoint and deletes it.',
    ok: { 204: { description: 'Deleted' } },
  },
  'POST /v1/webhook_endpoints/{id}/test': {
    summary: 'Send a test delivery',
    description: 'Sends a signed `webhook.test` delivery to the endpoint now and reports what the receiver answered (200 whatever it said).',
    ok: one('WebhookTestResult', 'What the receiver answered', { data: X.EX_WEBHOOK_TEST }),
  },
  'GET /v1/webhook_endpoints/{id}/deliveries': {
    summary: "List an endpoint's deliveries",
    description: 'The endpoint\'s recent deliveries, newest first: status, attempts, the last answer and the next attempt.',
    ok: list('WebhookDelivery', 'A page of deliveries', { data: [X.EX_DELIVERY], pagination: { cursor: null } }),
  },

  // ---- admin plane ----
  'POST /admin/v1/programs': {
    summary: 'Create a programme',
    description: 'Creates a programme with its settings, rules and tiers, and issues a live and a test key with all four scopes. The keys are shown this once.',
    ok: one('AdminProgramCreated', 'The programme and its two keys', { data: X.EX_ADMIN_PROGRAM_CREATED }, 201),
    request: { program_name: 'Coffee Club', currency_name: 'beans', rules: [{ type: 'base', name: 'Base', earn_rate_pct: 10, timing: 'immediate' }] },
  },
  'GET /admin/v1/programs/{pid}': {
    summary: 'Read a programme (admin)',
    description: 'The programme with its keys (never the keys themselves: their prefixes).',
    ok: one('AdminProgram', 'The programme', { data: X.EX_ADMIN_PROGRAM }),
  },
  'PATCH /admin/v1/programs/{pid}': {
    summary: 'Update a programme',
    description: 'Changes the name, currency name or settings; settings merge key by key.',
    ok: one('Program', 'The programme', { data: X.EX_PROGRAM }),
    request: { settings: { min_redeem_cents: 100 } },
  },
  'PUT /admin/v1/programs/{pid}/rules': {
    summary: 'Replace the earning rules',
    description: 'Replaces the rules; each changed rule\'s `version` rises. Events earn under the rules in force when they are processed.',
    ok: one('Program', 'The programme', { data: X.EX_PROGRAM }),
    request: { rules: [{ id: 'rule_1', type: 'base', name: 'Base', earn_rate_pct: 10, timing: 'immediate' }] },
  },
  'PUT /admin/v1/programs/{pid}/tiers': {
    summary: 'Replace the tiers',
    description: 'Replaces the tiers. Upgrades apply as soon as an event crosses a threshold; downgrades when the window is re-evaluated.',
    ok: one('Program', 'The programme', { data: X.EX_PROGRAM }),
    request: { tiers: [{ name: 'Gold', level: 2, threshold_type: 'spend', threshold_value: 100000, window: 'rolling_365', earn_multiplier: 1.5 }] },
  },
  'POST /admin/v1/programs/{pid}/keys': {
    summary: 'Issue an API key',
    description: 'Issues a key for a mode with the scopes given (and optionally its own rate limit). The key is shown this once and stored hashed.',
    ok: one('IssuedKey', 'The key (shown once)', { data: X.EX_ISSUED_KEY }, 201),
    request: { mode: 'live', scopes: ['read'], name: 'reporting' },
  },
  'GET /admin/v1/programs/{pid}/keys': {
    summary: "List a programme's keys",
    description: 'Every key of the programme, live and test, with its prefix and whether it is revoked or rotating out.',
    ok: { 200: { description: 'The keys', data: 'ApiKeyRecord', array: true, example: { data: [X.EX_KEY_RECORD] } } },
  },
  'POST /admin/v1/keys/{kid}/rotate': {
    summary: 'Rotate a key',
    description: 'Issues a replacement with the same mode and scopes; the old key keeps working for 24 hours (`old_key_expires_at`).',
    ok: one('RotatedKey', 'The new key (shown once)', { data: { ...X.EX_ISSUED_KEY, old_key_expires_at: '2025-03-15T09:27:10.102Z' } }, 201),
  },
  'DELETE /admin/v1/keys/{kid}': {
    summary: 'Revoke a key',
    description: 'Revokes a key at once, on every gateway replica.',
    ok: one('KeyRevoked', 'Revoked', { data: { id: 'K-01JD8X0Q4F2M7B9C3D5E6G7H8N', revoked: true } }),
  },
  'POST /admin/v1/programs/{pid}/test-clock/advance': {
    summary: "Advance the sandbox's clock",
    description: 'Moves the sandbox\'s clock forward; every time-based behaviour of the sandbox (releases, expiry, voucher and reservation TTLs, tier windows, expiring-soon notices) follows at once. Live mode always uses real time.',
    ok: one('TestClock', 'The sandbox clock', { data: { program_id: X.EX_IDS.program, mode: 'test', now: '2025-04-13T09:27:10.102Z', sweeps: ['fulfilled', 'fulfilled', 'fulfilled'] } }),
    request: { seconds: 2592000 },
  },
  'GET /admin/v1/programs/{pid}/rejected-calls': {
    summary: 'List rejected calls',
    params: { limit: { required: false, description: 'At most this many (1 to 500)', schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 } } },
    description: 'Calls the API refused for this programme in the last 14 days, newest first (at most `limit`, default 100, up to 500).',
    ok: { 200: { description: 'The rejected calls', data: 'RejectedCall', array: true, example: { data: [{ method: 'POST', path: '/v1/events', status: 422, slug: 'validation', detail: 'The request is invalid', mode: 'live', key_id: 'K-01JD8X0Q4F2M7B9C3D5E6G7H8K', request_id: '9b1f2c7e-4a8d-4f4e-9d3a-1c2b3d4e5f60', at: '2025-03-14T09:26:53.589Z' }] } } },
  },
  'POST /admin/v1/members/{id}/{command}': {
    summary: 'Suspend, reinstate, pause or resume a member',
    params: { command: { schema: { type: 'string', enum: ['suspend', 'reinstate', 'pause', 'resume'] } } },
    description: '`command` is `suspend`, `reinstate`, `pause` or `resume`. Paused and suspended members neither earn nor spend; reinstate and resume return the member to the previous state.',
    ok: one('Member', 'The member', { data: { ...X.EX_MEMBER, state: 'suspended' } }),
    errors: ['invalid-state'],
    request: { mode: 'live' },
  },
  'POST /admin/v1/programs/{pid}/migrations': {
    summary: 'Import migrated balances',
    description: 'Imports balances from a previous system as one `adjust` entry (reason `migration`) per member, creating members as needed; never replay historical orders (they would earn again). An `Idempotency-Key` makes a retry land in the same batch. Reversible as a batch.',
    ok: one('MigrationResult', 'The batch', { data: { batch_id: 'MB-01JD8XE6G8H0J2K4M6N8P0Q2R4', imported: 2, members_created: 1 } }, 201),
    request: { mode: 'live', entries: [{ email: 'ada@example.com', amount_cents: 2500 }, { email: 'bob@example.com', external_ref: 'cust_7', amount_cents: 800 }] },
  },
  'DELETE /admin/v1/migrations/{batch_id}': {
    summary: 'Reverse a migration batch',
    description: 'Reverses every entry of the batch with a `reverse` entry; repeating it reverses nothing more.',
    ok: one('MigrationReversal', 'The reversal', { data: { batch_id: 'MB-01JD8XE6G8H0J2K4M6N8P0Q2R4', reversed: 2, entries: 2 } }),
  },
  'POST /admin/v1/programs/{pid}/sandbox/wipe': {
    summary: 'Wipe the sandbox',
    description: 'Deletes the sandbox\'s members, ledgers, events and read models; the live programme, keys, rules and tiers stay.',
    ok: one('SandboxWiped', 'Wiped', { data: { wiped: true, program_id: X.EX_IDS.program, mode: 'test' } }),
  },
  'POST /admin/v1/ledger-entries/{id}/approve': {
    summary: 'Approve an entry under review',
    description: 'Posts an earn entry waiting `under_review` (timing `manual`). Repeating it is an idempotent 200; approving a rejected entry is 409.',
    ok: one('AdminLedgerEntry', 'The entry, `posted`', { data: { ...X.EX_ENTRY, member_id: X.EX_IDS.member } }),
    errors: ['invalid-state'],
  },
  'POST /admin/v1/ledger-entries/{id}/reject': {
    summary: 'Reject an entry under review',
    description: 'Rejects an earn entry waiting `under_review`: it never becomes available. Approving after rejecting is 409.',
    ok: one('AdminLedgerEntry', 'The entry, `rejected`', { data: { ...X.EX_ENTRY, status: 'rejected', member_id: X.EX_IDS.member } }),
    errors: ['invalid-state'],
  },
  'POST /admin/v1/referrals/{id}/approve': {
    summary: 'Approve a held referral',
    description: 'Releases a `held` referral: back to `pending`, or straight to `qualified`/`rewarded` if the friend\'s qualifying order already came.',
    ok: one('Referral', 'The referral', { data: X.EX_REFERRAL }),
    errors: ['invalid-state'],
  },
  'POST /admin/v1/referrals/{id}/reject': {
    summary: 'Reject a held referral',
    description: 'Rejects a `held` referral: it never pays.',
    ok: one('Referral', 'The referral, `rejected`', { data: { ...X.EX_REFERRAL, status: 'rejected', rejected_at: '2025-03-15T10:00:00.000Z' } }),
    errors: ['invalid-state'],
  },
};

/** Tags, by feature, in reading order. */
export const TAGS: { name: string; description: string }[] = [
  { name: 'programme', description: 'The key and the programme it belongs to: rules, tiers, settings.' },
  { name: 'members', description: 'Enrolment, identity (`M-…`, `ref:…`, `phone:…`), balances, ledgers, adjustments and erasure.' },
  { name: 'events', description: 'Commerce events in (orders, customers); processing is asynchronous, so read each event\'s status.' },
  { name: 'redemptions', description: 'Vouchers and direct redemptions: points debited at once.' },
  { name: 'checkout', description: 'Quotes and reservations: hold points for a cart, then confirm with the order or release.' },
  { name: 'referrals', description: 'Referral codes, links and rewards.' },
  { name: 'webhooks', description: 'Signed outbound notifications of balances, ledger entries, tiers, referrals and redemptions.' },
  { name: 'finance', description: 'The points liability, its roll-forward and the journal of entries (closing the books).' },
  { name: 'admin', description: 'The admin plane (`/admin/v1`), for the programme operator only: programmes, keys, migrations, sandbox, reviews. Authenticated by the admin token.' },
];
