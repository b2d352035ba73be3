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
/** An operation's entry: its summary, what it answers, its description, and what else it needs (tag, problems, request, …). */
const op = (summary: string, ok: Record<number, SuccessDoc>, description: string, more: Omit<OperationDoc, 'summary' | 'ok' | 'description'> = {}): OperationDoc => ({
  summary, description, ok, ...more,
});

export const OPERATION_DOCS: Record<string, OperationDoc> = {
  // ---- programme, keys, finance ----
  'GET /v1/ping': op('Verify a key', one('Ping', 'The key is valid', { data: X.EX_PING }),
    'Checks the API key: answers with its mode (`live` or `test`), its scopes and the programme it belongs to. Any valid key may call it.', { tag: 'programme' }),
  'GET /v1/programs': op('Read the programme', one('Program', 'The programme', { data: X.EX_PROGRAM }),
    'The programme the key belongs to: its rules, tiers and settings as they are in force now. Events earn under the rules in force when they are processed.'),
  'GET /v1/programmes': op('Read the programme (alias)', one('Program', 'The programme', { data: X.EX_PROGRAM }),
    'The same as `GET /v1/programs`, under the British spelling.'),
  'GET /v1/tenant/liability/roll-forward': op('Roll the liability forward over a period', one('RollForward', 'The roll-forward, in minor units', { data: X.EX_ROLL_FORWARD }),
    'Opening and closing positions at `from` and `to` (programme time; `from` < `to` ≤ now), the movements of the entries created in (`from`, `to`] by kind, and breakage. opening + movements = closing exactly, and periods chain.', { tag: 'finance' }),
  'GET /v1/ledger-entries': op("List every member's entries of a period", list('JournalEntry', 'A page of entries', { data: [], pagination: { cursor: null } }),
    'Entries created in (`from`, `to`], oldest first (created_at, then id), with `member_id` and `order_ref`; cursor pagination (limit 1–1000, default 100). With `Accept: text/csv` the whole period streams as RFC 4180 CSV (no pagination).', { tag: 'finance' }),
  'GET /admin/v1/programs/{pid}/finance/roll-forward': op('Roll the liability forward (admin)', one('RollForward', 'The roll-forward, in minor units', { data: X.EX_ROLL_FORWARD }),
    'The roll-forward of a programme and mode (`mode`, default live), as `GET /v1/tenant/liability/roll-forward` answers it; what `finance roll-forward` of the admin CLI prints.', { tag: 'admin' }),
  'GET /v1/tenant/liability': op('Read the points liability', one('Liability', 'The liability, in minor units', { data: X.EX_LIABILITY }),
    'What the programme owes its members now: outstanding points (available plus pending), lifetime issued and redeemed, and the number of members. The figure is cached for 30 seconds per programme and mode (`Cache-Control: max-age=30`).', { tag: 'finance', headers: { 'Cache-Control': '`max-age=30`: the figure is cached for 30 seconds' } }),

  // ---- members ----
  'GET /v1/members': op('List members', list('Member', 'A page of members', { data: [X.EX_MEMBER], pagination: { cursor: null } }),
    'Members of the programme (of the key\'s mode), oldest first, 25 per page by default (at most 100). Filter by exact `email` or by `state`. Walk the pages with `pagination.cursor`.'),
  'POST /v1/members': op('Enrol a member', { 201: { description: 'Enrolled: a new member', data: 'Member', example: { data: X.EX_NEW_MEMBER } }, 200: { description: 'Already enrolled (or a prospect now enrolled): the member', data: 'Member', example: { data: X.EX_MEMBER } } },
    'Enrols a customer: records that they accepted the programme terms. The email anchors identity. Enrolling an unknown email creates the member (201, state `registered`); enrolling a known one, or a prospect seen on an order, answers 200 with the member, enriched with the phone and external ref you send. A phone that belongs to another member is a 409. Send an `Idempotency-Key` to retry safely.', { errors: ['phone-conflict'], request: { email: 'ada@example.com', phone: '+14155550100', external_ref: 'cust_42', accepted_terms_version: '2025-01', marketing_consent: true } }),
  'POST /v1/members/resolve': op('Find or create a member by identifiers', { 200: { description: 'The matching member', data: 'Member', example: { data: X.EX_MEMBER } }, 201: { description: 'A new prospect', data: 'Member', example: { data: X.EX_PROSPECT } } },
    'Looks a member up by `email`, `phone` or `external_ref` (at least one). 200 with the matching member; 201 with a new silent `prospect` when none matches (prospects earn but cannot spend until enrolled); 409 `phone-conflict` when the identifiers point to different members.', { errors: ['phone-conflict'], request: { phone: '+14155550100' } }),
  'GET /v1/members/{id}': op('Read a member', one('Member', 'The member', { data: X.EX_MEMBER }),
    `A member with balances, tier and the points expiring within 30 days. ${MEMBER_ID_FORMS}`),
  'PATCH /v1/members/{id}': op('Update a member', one('Member', 'The updated member', { data: X.EX_MEMBER }),
    `Updates \`phone\`, \`external_ref\`, \`marketing_consent\` or \`accepted_terms_version\` (which enrols a prospect). \`email\` never changes through the API: sending it is a 422. ${MEMBER_ID_FORMS}`, { errors: ['phone-conflict'], request: { phone: '+14155550199', marketing_consent: false } }),
  'DELETE /v1/members/{id}': op('Erase a member', one('Member', 'The erased member (state `deleted`)', { data: X.EX_DELETED }),
    `Honours an erasure request: open reservations are released, open vouchers voided, the remaining balance forfeited by an \`expire\` entry (reason \`erasure\`), and email, phone and external ref erased everywhere. The id still resolves to the tombstone (state \`deleted\`); the same email can enrol again as a new member. ${MEMBER_ID_FORMS}`),
  'GET /v1/members/{id}/ledger': op("Read a member's ledger", list('LedgerEntry', 'A page of ledger entries', { data: [X.EX_ENTRY], pagination: { cursor: null } }),
    `The member's ledger entries, oldest first, 50 per page by default (at most 200). The ledger is append-only: corrections are \`reverse\` entries pointing at their parent. ${MEMBER_ID_FORMS}`),
  'POST /v1/members/{id}/adjust': op('Adjust a balance', one('Adjustment', 'The adjust entry written', { data: X.EX_ADJUSTMENT }, 201),
    `A manual credit (positive \`amount_cents\`) or debit (negative), with a \`reason_code\`. The API key is recorded as the audited actor. Idempotent by the \`Idempotency-Key\` header or the body's \`idempotency_key\`. ${MEMBER_ID_FORMS}`, { errors: ['invalid-state', 'idempotency-key-reused'], request: { amount_cents: 500, reason_code: 'goodwill', note: 'Late delivery, order ord_1' } }),

  // ---- events ----
  'POST /v1/events': op('Send commerce events', {
      202: {
        description: 'Accepted for asynchronous processing: EventAccepted for a single event, an array of BatchEventResult for a batch',
        data: { oneOf: [ref('EventAccepted'), { type: 'array', items: ref('BatchEventResult') }] },
        example: { data: X.EX_EVENT_ACCEPTED },
      },
      200: { description: 'A single event whose idempotency key is already known: the original, with `replayed: true`', data: 'EventAccepted', example: { data: { ...X.EX_EVENT_ACCEPTED, status: 'completed', replayed: true } } },
    },
    'Sends one event, or a batch `{ "events": [...] }` of 1 to 100. Processing is asynchronous: the answer says the event was accepted (`queued`); poll `GET /v1/events/{id}` for the outcome and the ledger entries it wrote. The idempotency key is the `Idempotency-Key` header (single events), else the event\'s `id`, else `<type>:<order_ref>` (`order.refunded:<order_ref>:<refund_ref>` for refunds): a replay answers 200 with `replayed: true` and is not processed again. A batch of n events costs ceil(n/10) rate-limit tokens. One invalid event refuses the whole batch (422, paths such as `/events/3/gross_cents`). 429 `backlog` when more than 20,000 events wait for the programme.', { errors: ['backlog'], request: X.EX_ORDER_PAID }),
  'GET /v1/events': op('List events', list('EventStatus', 'A page of events', { data: [X.EX_EVENT_STATUS], pagination: { cursor: null } }),
    'Events sent, newest first, with their status and, for failed ones, why (for example an older `aggregate_version` or an unmatched customer). Filter by `status`, `order_ref` or `type`.'),
  'GET /v1/events/{id}': op('Read an event\'s status', one('EventStatus', 'The event status', { data: X.EX_EVENT_STATUS }),
    'Where an event is in processing: `queued` → `running` → `completed` (with the ledger entries it wrote) or `failed` (with the reason in `error`).'),

  // ---- redemptions ----
  'POST /v1/members/{id}/redemptions': op('Redeem points (voucher or direct)', one('Redemption', 'The redemption (value already debited)', { data: X.EX_REDEMPTION }, 201),
    `Debits points at once. \`mode: voucher\` (default) returns a single-use code \`RWD-XXXX-XXXX\` that is open (\`created\`) until confirmed with an order, voided, or expired (programme TTL, default 72 hours: the points come back). \`mode: direct\` needs an \`order_ref\` and is \`used\` at once. 402 when the member's state forbids spending (a prospect, paused, suspended or deleted member). ${MEMBER_ID_FORMS}`, { errors: ['redemption-not-allowed', 'balance-insufficient', 'rule-ineligible'], request: { amount_cents: 500, mode: 'voucher' } }),
  'GET /v1/redemptions': op('Look a voucher up by code', one('RedemptionLookup', 'The voucher', { data: { ...X.EX_REDEMPTION, valid: true } }),
    'Finds a voucher by its code: its value, owner, status and whether it can still be used (`valid`).', { errors: ['not-found'] }),
  'GET /v1/redemptions/{id}': op('Read a redemption', one('Redemption', 'The redemption', { data: X.EX_REDEMPTION }),
    'A voucher or direct redemption by id.'),
  'POST /v1/redemptions/{id}/confirm': op('Confirm a voucher', one('Redemption', 'The voucher, now `used`', { data: { ...X.EX_REDEMPTION, status: 'used', order_ref: 'ord_2' } }),
    'Marks an open voucher `used` by an order. Confirming a used voucher again with the same `order_ref` is an idempotent 200; any other cross-state call is 409 `invalid-state`.', { errors: ['invalid-state'], request: { order_ref: 'ord_2' } }),
  'POST /v1/redemptions/{id}/void': op('Void a voucher', one('Redemption', 'The voucher, now `restored`', { data: { ...X.EX_REDEMPTION, status: 'restored' } }),
    'Voids an open voucher: the points go back to the wallet at once (a `reverse` entry). Voiding a restored voucher again is an idempotent 200; voiding a used one is 409 `invalid-state`.', { errors: ['invalid-state'] }),

  // ---- checkout ----
  'POST /v1/redemption-quotes': op('Quote a redemption at checkout', one('Quote', 'The quote', { data: X.EX_QUOTE }),
    'What the member may redeem on this cart, without holding anything: the spendable balance, the programme minimum, and the maximum (limited by the programme\'s share of the order; 0 when the payment method is blocked).', { errors: ['not-found'], request: { member_id: 'ref:cust_42', eligible_total_cents: 4500, payment_method: 'card' } }),
  'POST /v1/redemption-reservations': op('Hold points for a checkout', one('Reservation', 'The reservation, `open`', { data: X.EX_RESERVATION }, 201),
    'Holds points for a cart: `reserved_cents` rises and `spendable_cents` falls; nothing is debited yet. Confirm with the order (or send the order event with `reservation_id`), or release it; it lapses by itself after the programme\'s reservation TTL (default 15 minutes). Send an `Idempotency-Key`.', { errors: ['not-found', 'redemption-not-allowed', 'balance-insufficient', 'rule-ineligible'], request: { member_id: 'ref:cust_42', amount_cents: 500, cart_ref: 'cart_981', eligible_total_cents: 4500, payment_method: 'card' } }),
  'GET /v1/redemption-reservations/{id}': op('Read a reservation', one('Reservation', 'The reservation', { data: X.EX_RESERVATION }),
    'A checkout reservation by id.'),
  'POST /v1/redemption-reservations/{id}/confirm': op('Confirm a reservation', one('Reservation', 'The reservation, `confirmed`', { data: { ...X.EX_RESERVATION, status: 'confirmed', order_ref: 'ord_2', ledger_entry_id: X.EX_IDS.entry2 } }),
    'Debits the held points for the order (a `redeem` entry). Repeating it is an idempotent 200; confirming a released or expired reservation is 409 `invalid-state`.', { errors: ['invalid-state', 'balance-insufficient'], request: { order_ref: 'ord_2' } }),
  'POST /v1/redemption-reservations/{id}/release': op('Release a reservation', one('Reservation', 'The reservation, `released`', { data: { ...X.EX_RESERVATION, status: 'released' } }),
    'Gives the held points back (an abandoned cart costs nothing). Repeating it is an idempotent 200; releasing a confirmed reservation is 409 `invalid-state`.', { errors: ['invalid-state'] }),

  // ---- referrals ----
  'POST /v1/referrals': op('Record a referral', one('Referral', 'The referral: `pending` or `held`', { data: X.EX_REFERRAL }, 201),
    'Links a friend (enrol them first) to the advocate who owns `code`. The advocate is rewarded when the friend\'s first qualifying order arrives. A referral the fraud checks distrust (same phone or normalised email as the advocate, or over the advocate\'s daily limit) comes back `held` and pays nothing until the programme admin approves it. Self-referral or a friend who already ordered: 422 `rule-ineligible`; a friend already referred: 409.', { errors: ['not-found', 'conflict', 'rule-ineligible'], request: { code: 'K7M2Q9TX', friend_member_id: 'ref:cust_77' } }),
  'GET /v1/referrals/{id}': op('Read a referral', one('Referral', 'The referral', { data: X.EX_REFERRAL }),
    'A referral by id, with what explains its status (hold reasons, the qualifying order, the reward entries).'),
  'GET /v1/members/{id}/referral': op("Read a member's referral details", one('ReferralDetails', 'The referral details', { data: X.EX_REFERRAL_DETAILS }),
    `The member's referral code, share link (from the programme's link template, or null) and counters of the referrals they made. ${MEMBER_ID_FORMS}`, { tag: 'referrals' }),

  // ---- webhooks ----
  'GET /v1/webhook_endpoints': op('List webhook endpoints', list('WebhookEndpoint', 'The endpoints', { data: [X.EX_WEBHOOK], pagination: { cursor: null } }),
    'Every webhook endpoint of the programme (of the key\'s mode), secrets hidden. One page: `pagination.cursor` is always null.'),
  'POST /v1/webhook_endpoints': op('Register a webhook endpoint', one('WebhookEndpointCreated', 'The endpoint and its secret (shown once)', { data: X.EX_WEBHOOK_CREATED }, 201),
    'Registers an https URL for the listed event kinds. The answer carries the signing `secret`, shown this once. Deliveries follow the Standard Webhooks specification (headers `webhook-id`, `webhook-timestamp`, `webhook-signature`), at least once, retried with backoff; 20 consecutive failures (or a 410) disable the endpoint. http is accepted only for a loopback host with a test key; URLs resolving to private addresses are refused in live mode.', { request: { url: 'https://shop.example.com/hooks/loyalty', events: ['balance.updated', 'redemption.created'] } }),
  'GET /v1/webhook_endpoints/{id}': op('Read a webhook endpoint', one('WebhookEndpoint', 'The endpoint', { data: X.EX_WEBHOOK }),
    'An endpoint with its health: `failure_count` counts consecutive failed attempts; `disabled_at` is set once disabled.'),
  'DELETE /v1/webhook_endpoints/{id}': op('Delete a webhook endpoint', { 204: { description: 'Deleted' } },
    'Stops deliveries to the endpoint and deletes it.'),
  'POST /v1/webhook_endpoints/{id}/test': op('Send a test delivery', one('WebhookTestResult', 'What the receiver answered', { data: X.EX_WEBHOOK_TEST }),
    'Sends a signed `webhook.test` delivery to the endpoint now and reports what the receiver answered (200 whatever it said).'),
  'GET /v1/webhook_endpoints/{id}/deliveries': op("List an endpoint's deliveries", list('WebhookDelivery', 'A page of deliveries', { data: [X.EX_DELIVERY], pagination: { cursor: null } }),
    'The endpoint\'s recent deliveries, newest first: status, attempts, the last answer and the next attempt.'),

  // ---- admin plane ----
  'POST /admin/v1/programs': op('Create a programme', one('AdminProgramCreated', 'The programme and its two keys', { data: X.EX_ADMIN_PROGRAM_CREATED }, 201),
    'Creates a programme with its settings, rules and tiers, and issues a live and a test key with all four scopes. The keys are shown this once.', { request: { program_name: 'Coffee Club', currency_name: 'beans', rules: [{ type: 'base', name: 'Base', earn_rate_pct: 10, timing: 'immediate' }] } }),
  'GET /admin/v1/programs/{pid}': op('Read a programme (admin)', one('AdminProgram', 'The programme', { data: X.EX_ADMIN_PROGRAM }),
    'The programme with its keys (never the keys themselves: their prefixes).'),
  'PATCH /admin/v1/programs/{pid}': op('Update a programme', one('Program', 'The programme', { data: X.EX_PROGRAM }),
    'Changes the name, currency name or settings; settings merge key by key.', { request: { settings: { min_redeem_cents: 100 } } }),
  'PUT /admin/v1/programs/{pid}/rules': op('Replace the earning rules', one('Program', 'The programme', { data: X.EX_PROGRAM }),
    'Replaces the rules; each changed rule\'s `version` rises. Events earn under the rules in force when they are processed.', { request: { rules: [{ id: 'rule_1', type: 'base', name: 'Base', earn_rate_pct: 10, timing: 'immediate' }] } }),
  'PUT /admin/v1/programs/{pid}/tiers': op('Replace the tiers', one('Program', 'The programme', { data: X.EX_PROGRAM }),
    'Replaces the tiers. Upgrades apply as soon as an event crosses a threshold; downgrades when the window is re-evaluated.', { request: { tiers: [{ name: 'Gold', level: 2, threshold_type: 'spend', threshold_value: 100000, window: 'rolling_365', earn_multiplier: 1.5 }] } }),
  'POST /admin/v1/programs/{pid}/keys': op('Issue an API key', one('IssuedKey', 'The key (shown once)', { data: X.EX_ISSUED_KEY }, 201),
    'Issues a key for a mode with the scopes given (and optionally its own rate limit). The key is shown this once and stored hashed.', { request: { mode: 'live', scopes: ['read'], name: 'reporting' } }),
  'GET /admin/v1/programs/{pid}/keys': op("List a programme's keys", { 200: { description: 'The keys', data: 'ApiKeyRecord', array: true, example: { data: [X.EX_KEY_RECORD] } } },
    'Every key of the programme, live and test, with its prefix and whether it is revoked or rotating out.'),
  'POST /admin/v1/keys/{kid}/rotate': op('Rotate a key', one('RotatedKey', 'The new key (shown once)', { data: { ...X.EX_ISSUED_KEY, old_key_expires_at: '2025-03-15T09:27:10.102Z' } }, 201),
    'Issues a replacement with the same mode and scopes; the old key keeps working for 24 hours (`old_key_expires_at`).'),
  'DELETE /admin/v1/keys/{kid}': op('Revoke a key', one('KeyRevoked', 'Revoked', { data: { id: 'K-01JD8X0Q4F2M7B9C3D5E6G7H8N', revoked: true } }),
    'Revokes a key at once, on every gateway replica.'),
  'POST /admin/v1/programs/{pid}/test-clock/advance': op("Advance the sandbox's clock", one('TestClock', 'The sandbox clock', { data: { program_id: X.EX_IDS.program, mode: 'test', now: '2025-04-13T09:27:10.102Z', sweeps: ['fulfilled', 'fulfilled', 'fulfilled'] } }),
    'Moves the sandbox\'s clock forward; every time-based behaviour of the sandbox (releases, expiry, voucher and reservation TTLs, tier windows, expiring-soon notices) follows at once. Live mode always uses real time.', { request: { seconds: 2592000 } }),
  'GET /admin/v1/programs/{pid}/rejected-calls': op('List rejected calls', { 200: { description: 'The rejected calls', data: 'RejectedCall', array: true, example: { data: [{ method: 'POST', path: '/v1/events', status: 422, slug: 'validation', detail: 'The request is invalid', mode: 'live', key_id: 'K-01JD8X0Q4F2M7B9C3D5E6G7H8K', request_id: '9b1f2c7e-4a8d-4f4e-9d3a-1c2b3d4e5f60', at: '2025-03-14T09:26:53.589Z' }] } } },
    'Calls the API refused for this programme in the last 14 days, newest first (at most `limit`, default 100, up to 500).', { params: { limit: { required: false, description: 'At most this many (1 to 500)', schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 } } } }),
  'POST /admin/v1/members/{id}/{command}': op('Suspend, reinstate, pause or resume a member', one('Member', 'The member', { data: { ...X.EX_MEMBER, state: 'suspended' } }),
    '`command` is `suspend`, `reinstate`, `pause` or `resume`. Paused and suspended members neither earn nor spend; reinstate and resume return the member to the previous state.', { params: { command: { schema: { type: 'string', enum: ['suspend', 'reinstate', 'pause', 'resume'] } } }, errors: ['invalid-state'], request: { mode: 'live' } }),
  'POST /admin/v1/programs/{pid}/migrations': op('Import migrated balances', one('MigrationResult', 'The batch', { data: { batch_id: 'MB-01JD8XE6G8H0J2K4M6N8P0Q2R4', imported: 2, members_created: 1 } }, 201),
    'Imports balances from a previous system as one `adjust` entry (reason `migration`) per member, creating members as needed; never replay historical orders (they would earn again). An `Idempotency-Key` makes a retry land in the same batch. Reversible as a batch.', { request: { mode: 'live', entries: [{ email: 'ada@example.com', amount_cents: 2500 }, { email: 'bob@example.com', external_ref: 'cust_7', amount_cents: 800 }] } }),
  'DELETE /admin/v1/migrations/{batch_id}': op('Reverse a migration batch', one('MigrationReversal', 'The reversal', { data: { batch_id: 'MB-01JD8XE6G8H0J2K4M6N8P0Q2R4', reversed: 2, entries: 2 } }),
    'Reverses every entry of the batch with a `reverse` entry; repeating it reverses nothing more.'),
  'POST /admin/v1/programs/{pid}/sandbox/wipe': op('Wipe the sandbox', one('SandboxWiped', 'Wiped', { data: { wiped: true, program_id: X.EX_IDS.program, mode: 'test' } }),
    'Deletes the sandbox\'s members, ledgers, events and read models; the live programme, keys, rules and tiers stay.'),
  'POST /admin/v1/ledger-entries/{id}/approve': op('Approve an entry under review', one('AdminLedgerEntry', 'The entry, `posted`', { data: { ...X.EX_ENTRY, member_id: X.EX_IDS.member } }),
    'Posts an earn entry waiting `under_review` (timing `manual`). Repeating it is an idempotent 200; approving a rejected entry is 409.', { errors: ['invalid-state'] }),
  'POST /admin/v1/ledger-entries/{id}/reject': op('Reject an entry under review', one('AdminLedgerEntry', 'The entry, `rejected`', { data: { ...X.EX_ENTRY, status: 'rejected', member_id: X.EX_IDS.member } }),
    'Rejects an earn entry waiting `under_review`: it never becomes available. Approving after rejecting is 409.', { errors: ['invalid-state'] }),
  'POST /admin/v1/referrals/{id}/approve': op('Approve a held referral', one('Referral', 'The referral', { data: X.EX_REFERRAL }),
    'Releases a `held` referral: back to `pending`, or straight to `qualified`/`rewarded` if the friend\'s qualifying order already came.', { errors: ['invalid-state'] }),
  'POST /admin/v1/referrals/{id}/reject': op('Reject a held referral', one('Referral', 'The referral, `rejected`', { data: { ...X.EX_REFERRAL, status: 'rejected', rejected_at: '2025-03-15T10:00:00.000Z' } }),
    'Rejects a `held` referral: it never pays.', { errors: ['invalid-state'] }),
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
