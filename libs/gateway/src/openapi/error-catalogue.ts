import { PROBLEM_SLUGS, ProblemSlug } from '@loyalty/platform';

export interface CatalogueEntry {
  slug: ProblemSlug;
  status: number;
  title: string;
  /** When the service answers with it. */
  meaning: string;
  /** What the caller should do. */
  action: string;
  /** Safe to retry unchanged (with the same idempotency key)? */
  retryable: boolean;
}

/** An entry's text, one row of the table below: when it is answered, what to do, whether a retry is safe. */
type Text = [meaning: string, action: string, retryable: boolean];

/**
 * The error catalogue behind every problem's `type` URL (`/docs/api/errors#<slug>`). Typed by
 * ProblemSlug, so a slug added to the platform without an entry here does not compile.
 */
const TEXT: Record<ProblemSlug, Text> = {
  validation: ['The body, query or a header failed validation. `errors` lists each failing field as `{path, message}`, the path a JSON pointer such as `/events/3/gross_cents` (headers as `/headers/idempotency-key`). Nothing was done: in a batch of events, one invalid event refuses the whole batch.',
    'Fix the fields named in `errors` and send again. Amounts must be integers in minor units.', false],
  'malformed-json': ['The body is not valid JSON.',
    'Send a JSON body with `Content-Type: application/json`.', false],
  unauthenticated: ['The `Authorization: Bearer` key is missing, unknown, revoked or expired (a rotated key stops working 24 hours after the rotation). On `/admin/v1` the admin token is missing or wrong.',
    'Send a current key (`svc_live_…` or `svc_test_…`). Check it with `GET /v1/ping`.', false],
  'insufficient-scope': ['The key is valid but lacks the scope the endpoint needs (`ingest`, `read`, `act` or `webhooks`); the detail names it. The call still counted against the rate limit.',
    'Use a key with that scope, or ask the programme admin for one.', false],
  'not-found': ['No such resource in this programme and mode: an unknown id, a resource of another programme, or a live resource asked for with a test key (and vice versa). Also an unknown path.',
    'Check the id and which key (live or test) you use. Member ids accept `M-…`, `ref:<external_ref>` and `phone:<E.164>` (`+` as `%2B`).', false],
  'phone-conflict': ['The phone number belongs to a different member (enrolment, resolve, PATCH).',
    'Resolve the member by that phone first, or send the enrolment without the phone.', false],
  'invalid-state': ['Confirm, void or release on a redemption or reservation in a state that forbids it (for example voiding a used voucher, or confirming a released reservation); approve or reject on an entry or referral that is not waiting for it.',
    'Read the resource to see its status. Repeating the call that put it in its current state is an idempotent 200.', false],
  conflict: ['The request conflicts with the current state of the resource, for example a friend who was already referred.',
    'Read the resource and decide; do not retry unchanged.', false],
  'idempotency-key-reused': ['This `Idempotency-Key` was already used with a different request body (keys are kept 30 days).',
    'Use a new key per intent. Reuse a key only to retry the very same request.', false],
  'idempotency-in-progress': ['A request with this `Idempotency-Key` is still running. Body `reason: "in_progress"`, header `Retry-After`.',
    'Wait `Retry-After` seconds and retry with the same key and body: you get the original result.', true],
  'balance-insufficient': ['The member’s spendable balance (available minus reserved) is below the amount asked.',
    'Read the member’s `balances.spendable_cents` (or ask for a quote) and redeem at most that.', false],
  'rule-ineligible': ['The programme’s own rules refuse: below the minimum redemption, above the maximum share of the order, a blocked payment method, or a self-referral / a friend who already ordered.',
    'Ask `POST /v1/redemption-quotes` for the allowed range and stay within it; the detail says which rule refused.', false],
  'redemption-not-allowed': ['The member’s state forbids spending: `prospect` (not enrolled), `paused`, `suspended` or `deleted`.',
    'Enrol a prospect (`POST /v1/members` with its email, or PATCH `accepted_terms_version`); paused and suspended members need the programme admin.', false],
  'payload-too-large': ['The body is larger than 1 MiB.',
    'Send fewer events per batch (at most 100) or a smaller body.', false],
  'rate-limited': ['The key’s token bucket is empty (default: burst 50, refilling at 10 requests per second; a batch of n events costs ceil(n/10) tokens). Header `Retry-After` and body `retry_after` give the wait in seconds. Nothing was done.',
    'Wait `Retry-After` seconds, then retry with the same idempotency key. Slow down when `X-RateLimit-Remaining` falls under 10. A higher limit is set per key by the programme admin.', true],
  backlog: ['More than 20,000 events are waiting to be processed for this programme; new events are refused (`reason: "backlog"`) until the queue drains. Nothing was accepted.',
    'Retry later with the same idempotency keys; resending is safe.', true],
  'method-not-allowed': ['The path exists but not with this HTTP method.',
    'Check the method in the API reference.', false],
  internal: ['An unexpected server error. The request may or may not have taken effect.',
    'Retry with the same idempotency key (safe: a completed call is replayed, not repeated). Quote `X-Request-Id` to support if it persists.', true],
  unavailable: ['A service the request needs is temporarily unavailable (starting, overloaded, or a dependency is down).',
    'Retry after a short backoff with the same idempotency key.', true],
};

export const ERROR_CATALOGUE: CatalogueEntry[] = (Object.keys(PROBLEM_SLUGS) as ProblemSlug[]).map((slug) => {
  const [meaning, action, retryable] = TEXT[slug];
  return { slug, status: PROBLEM_SLUGS[slug].status, title: PROBLEM_SLUGS[slug].title, meaning, action, retryable };
});

const escapeHtml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
/** `code` spans and nothing else: the catalogue's text is ours, escaped first. */
const inline = (s: string): string => escapeHtml(s).replace(/`([^`]+)`/g, '<code>$1</code>');

/** The catalogue as a self-contained HTML page (no scripts, no external assets): served at /docs/api/errors. */
export const errorCatalogueHtml = (): string => `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Error catalogue · Loyalty programme API</title>
<style>
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #1d2433; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.15rem; margin: 0 0 .4rem; }
section { border: 1px solid #d9dde6; border-radius: 6px; padding: .9rem 1.1rem; margin: 1rem 0; }
section:target { border-color: #e0234d; box-shadow: 0 0 0 2px #e0234d33; }
.status { display: inline-block; font-weight: 600; padding: 0 .45rem; border-radius: 4px; background: #eef1f6; margin-right: .4rem; }
code { background: #f3f4f7; padding: 0 .25rem; border-radius: 3px; }
dt { font-weight: 600; margin-top: .4rem; } dd { margin-left: 0; }
table { border-collapse: collapse; } td, th { border: 1px solid #d9dde6; padding: .25rem .6rem; text-align: left; }
</style>
</head>
<body>
<h1>Error catalogue</h1>
<p>Every error is an RFC 9457 problem (<code>application/problem+json</code>) whose <code>type</code> is
<code>{base_url}/docs/api/errors#&lt;slug&gt;</code>: it links to the entry below. Branch on the slug (the part after
<code>#</code>) or on <code>status</code>, never on <code>title</code> or <code>detail</code> text. Every response carries
<code>X-Request-Id</code>; quote it to support. <a href="/docs">API reference</a></p>
<table>
<thead><tr><th>slug</th><th>status</th><th>retry unchanged?</th></tr></thead>
<tbody>
${ERROR_CATALOGUE.map((e) => `<tr><td><a href="#${e.slug}"><code>${e.slug}</code></a></td><td>${e.status}</td><td>${e.retryable ? 'yes, same idempotency key' : 'no'}</td></tr>`).join('\n')}
</tbody>
</table>
${ERROR_CATALOGUE.map((e) => `<section id="${e.slug}">
<h2><span class="status">${e.status}</span><code>${e.slug}</code> · ${escapeHtml(e.title)}</h2>
<dl>
<dt>What it means</dt><dd>${inline(e.meaning)}</dd>
<dt>What to do</dt><dd>${inline(e.action)}</dd>
<dt>Retry unchanged</dt><dd>${e.retryable ? 'Yes, with the same idempotency key' : 'No'}</dd>
</dl>
</section>`).join('\n')}
</body>
</html>
`;

/** The same catalogue as Markdown (docs/errors.md is generated from it). */
export const errorCatalogueMarkdown = (): string => [
  '# Error catalogue',
  '',
  '<!-- Generated by `npm run api:generate` from libs/gateway/src/openapi/error-catalogue.ts; do not edit by hand. -->',
  '',
  'Every error is an RFC 9457 problem (`application/problem+json`):',
  '',
  '```json',
  '{ "type": "https://loyalty.example.com/docs/api/errors#validation", "title": "Validation failed", "status": 422,',
  '  "detail": "The request is invalid", "errors": [{ "path": "/gross_cents", "message": "gross_cents must be an integer (minor units)" }] }',
  '```',
  '',
  '`type` links to the entry below on the running service (`/docs/api/errors#<slug>`). Branch on the slug or the',
  'status, never on `title` or `detail`. Every response carries `X-Request-Id`; quote it to support.',
  '',
  '| slug | status | retry unchanged? |',
  '|---|---|---|',
  ...ERROR_CATALOGUE.map((e) => `| [\`${e.slug}\`](#${e.slug}) | ${e.status} | ${e.retryable ? 'yes, same idempotency key' : 'no'} |`),
  '',
  ...ERROR_CATALOGUE.flatMap((e) => [
    `## ${e.slug}`,
    '',
    `**${e.status} ${e.title}.** ${e.meaning}`,
    '',
    `What to do: ${e.action}`,
    '',
  ]),
].join('\n');
