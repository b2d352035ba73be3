import { INestApplicationContext } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { getMetadataStorage } from 'class-validator';
import { CUSTOMER_EVENT_TYPES, ORDER_AMOUNT_EVENT_TYPES } from '@loyalty/contracts';
import { PROBLEM_SLUGS, PUBLIC_ROUTE, ProblemSlug } from '@loyalty/platform';
import { ADMIN_KEY, SCOPES_KEY } from '../auth/auth.decorators';
import { IDEMPOTENT_KEY } from '../idempotency/idempotency.interceptor';
import { ERROR_CATALOGUE } from './error-catalogue';
import { OPERATION_DOCS, OperationDoc, SuccessDoc, TAGS } from './operations';
import { Schema, ref } from './schema-kit';
import { COMPONENT_SCHEMAS } from './schemas';

/** The base URL examples and the committed document use; the served document names the real one. */
export const EXAMPLE_BASE_URL = 'https://loyalty.example.com';

type Json = Record<string, unknown>;
type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';
const METHODS: HttpMethod[] = ['get', 'post', 'put', 'patch', 'delete'];

/** What the controllers declare about a route: who may call it and whether it honours Idempotency-Key. */
export interface RouteFacts { admin: boolean; public: boolean; scopes: string[]; idempotent: boolean }

const INTRO = `Points, tiers, referrals and vouchers for any commerce stack.

**Authentication.** Every \`/v1\` request carries \`Authorization: Bearer <key>\`. Keys belong to one programme and one mode:
\`svc_live_…\` keys see the live programme, \`svc_test_…\` keys an isolated sandbox with the same rules and tiers. Each key has
scopes: \`ingest\` (send events), \`read\` (every GET), \`act\` (enrol, update, erase, adjust, redeem, quote, reserve, refer) and
\`webhooks\` (manage webhook endpoints). Server-side use only: a key must never reach a browser. The admin plane (\`/admin/v1\`)
takes the operator's admin token instead.

**Money.** Amounts and points are integers in minor units (cents, paise): \`gross_cents: 12000\` is 120.00. No floats, no rounding
on your side.

**Shapes.** Success bodies are \`{ "data": … }\`; lists add \`"pagination": { "cursor": "…" }\`: pass it back as \`?cursor=\` until
it is null. Times are ISO 8601 UTC. Member ids are \`M-…\`; wherever a member is named you may also write \`ref:<external_ref>\` or
\`phone:<E.164>\`. Within \`/v1\` responses only gain fields: ignore fields you do not know.

**Events are asynchronous.** \`POST /v1/events\` answers 202 once an event is queued; \`GET /v1/events/{id}\` tells when it completed
and which ledger entries it wrote.

**Idempotency.** Send \`Idempotency-Key\` on writes: the same key and body return the original response (\`Idempotent-Replay: true\`);
the same key with another body is a 409. Keys are kept 30 days.

**Rate limit.** A token bucket per key: burst 50, refilling at 10 requests per second (a batch of n events costs ceil(n/10)).
Every response carries \`X-RateLimit-Limit\` and \`X-RateLimit-Remaining\`; a 429 carries \`Retry-After\` (seconds).

**Errors** are RFC 9457 problems (\`application/problem+json\`) whose \`type\` links to the [error catalogue](/docs/api/errors).
Every response carries \`X-Request-Id\`.`;

const pascal = (slug: string): string => slug.split('-').map((w) => w[0].toUpperCase() + w.slice(1)).join('');
const problemExample = (slug: ProblemSlug): Json => {
  const def = PROBLEM_SLUGS[slug];
  const body: Json = { type: `${EXAMPLE_BASE_URL}/docs/api/errors#${slug}`, title: def.title, status: def.status };
  const entry = ERROR_CATALOGUE.find((e) => e.slug === slug)!;
  const details: Partial<Record<ProblemSlug, Json>> = {
    validation: { detail: 'The request is invalid', errors: [{ path: '/gross_cents', message: 'gross_cents must be an integer (minor units)' }] },
    'rate-limited': { detail: 'Rate limit of 10/s (burst 50) exceeded', retry_after: 1 },
    'idempotency-in-progress': { detail: 'A request with this Idempotency-Key is still running', reason: 'in_progress' },
    backlog: { detail: 'More than 20000 events are waiting for this programme', reason: 'backlog' },
    unauthenticated: { detail: 'Missing API key: send Authorization: Bearer <key>' },
    'insufficient-scope': { detail: 'This endpoint needs the act scope' },
    'not-found': { detail: 'member not found' },
  };
  return { ...body, ...(details[slug] ?? { detail: entry.meaning.split('. ')[0].replace(/`/g, '') }) };
};

const HEADERS: Record<string, Json> = {
  'X-Request-Id': { description: 'The request id: your `X-Request-Id` if it was valid, else a new one. Quote it to support.', required: true, schema: { type: 'string' } },
  'X-RateLimit-Limit': { description: 'The key\'s burst size (on calls authenticated by an API key)', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Tokens left in the key\'s bucket; slow down under 10', schema: { type: 'integer' } },
  'Retry-After': { description: 'Seconds to wait before retrying (at least 1)', schema: { type: 'integer', minimum: 1 } },
  'Idempotent-Replay': { description: '`true` when this is the stored response of an earlier call with the same Idempotency-Key', schema: { type: 'string', enum: ['true'] } },
};
const h = (name: string): Json => ({ $ref: `#/components/headers/${name}` });
const baseHeaders = (merchant: boolean): Json => ({
  'X-Request-Id': h('X-Request-Id'),
  ...(merchant ? { 'X-RateLimit-Limit': h('X-RateLimit-Limit'), 'X-RateLimit-Remaining': h('X-RateLimit-Remaining') } : {}),
});

/** One problem response for a status: every slug it may carry, each with an example. */
const problemResponse = (slugs: ProblemSlug[], merchant: boolean): Json => {
  const headers: Json = { ...baseHeaders(merchant) };
  if (slugs.some((s) => s === 'rate-limited' || s === 'idempotency-in-progress')) headers['Retry-After'] = h('Retry-After');
  if (slugs.includes('unauthenticated')) {
    delete headers['X-RateLimit-Limit'];
    delete headers['X-RateLimit-Remaining'];
  }
  return {
    description: slugs.map((s) => `\`${s}\`: ${PROBLEM_SLUGS[s].title}`).join('; '),
    headers,
    content: {
      'application/problem+json': {
        schema: ref('Problem'),
        examples: Object.fromEntries(slugs.map((s) => [s, { summary: PROBLEM_SLUGS[s].title, value: problemExample(s) }])),
      },
    },
  };
};

const dataSchema = (ok: SuccessDoc): Schema => {
  const item = typeof ok.data === 'string' ? ref(ok.data) : (ok.data as Schema);
  if (ok.list) return { type: 'object', required: ['data', 'pagination'], properties: { data: { type: 'array', items: item }, pagination: ref('Pagination') } };
  if (ok.array) return { type: 'object', required: ['data'], properties: { data: { type: 'array', items: item } } };
  return { type: 'object', required: ['data'], properties: { data: item } };
};

/** Route facts by operationId (`<Controller>_<method>`, Nest's default), read from the controllers' metadata. */
export const routeFacts = (app: INestApplicationContext): Map<string, RouteFacts> => {
  const facts = new Map<string, RouteFacts>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const ctrl = wrapper.metatype as (new (...a: unknown[]) => unknown) | null;
      if (!ctrl?.prototype) continue;
      for (const name of Object.getOwnPropertyNames(ctrl.prototype)) {
        if (name === 'constructor') continue;
        const handler = (ctrl.prototype as Record<string, unknown>)[name];
        if (typeof handler !== 'function') continue;
        const meta = <T>(key: string): T | undefined => Reflect.getMetadata(key, handler) ?? Reflect.getMetadata(key, ctrl);
        facts.set(`${ctrl.name}_${name}`, {
          admin: meta<boolean>(ADMIN_KEY) === true,
          public: meta<boolean>(PUBLIC_ROUTE) === true,
          scopes: meta<string[]>(SCOPES_KEY) ?? [],
          idempotent: Boolean(meta<boolean | 'command'>(IDEMPOTENT_KEY)),
        });
      }
    }
  }
  return facts;
};

/** Properties that hold whole numbers (DTOs validate them as integers; reflection says only `number`). */
const INTEGER_NAME = /(_cents|_days|_seconds|_months|_pct_int)$|^(limit|level|quantity|threshold|threshold_value|version|seconds|max_order_share_pct|referral_daily_limit|burst)$/;

/** OpenAPI 3.0 leftovers in the DTO schemas → 3.1: `nullable` becomes a type array; whole-number fields become integers. */
const to31 = (node: unknown, key?: string): void => {
  if (Array.isArray(node)) { node.forEach((n) => to31(n)); return; }
  if (!node || typeof node !== 'object') return;
  const o = node as Json;
  if (key && INTEGER_NAME.test(key) && o.type === 'number') o.type = 'integer';
  if (o.nullable === true) {
    delete o.nullable;
    if (typeof o.type === 'string') o.type = [o.type, 'null'];
  }
  if (o.properties && typeof o.properties === 'object') {
    for (const [k, v] of Object.entries(o.properties as Json)) to31(v, k);
  }
  for (const [k, v] of Object.entries(o)) if (k !== 'properties') to31(v);
};

type ValidationMeta = { propertyName: string; name?: string; type: string; constraints?: unknown[]; each?: boolean };

/**
 * Request DTO schemas as the validators see them. Reflection types `number | null` or `string[]`
 * unions as `object` and every number as `number`; class-validator's metadata knows better (IsInt,
 * IsIn, IsString each, …), so the document says what the API accepts.
 */
const fixDtoSchemas = (schemas: Json): void => {
  const storage = getMetadataStorage() as unknown as { validationMetadatas: Map<Function, ValidationMeta[]> };
  const classes = new Map([...storage.validationMetadatas.keys()].map((c) => [c.name, c]));
  for (const [name, schema] of Object.entries(schemas)) {
    const cls = classes.get(name);
    const props = (schema as Json).properties as Record<string, Json> | undefined;
    if (!cls || !props) continue;
    const metas = getMetadataStorage().getTargetValidationMetadatas(cls, '', true, false) as unknown as ValidationMeta[];
    for (const [prop, p] of Object.entries(props)) {
      const mine = metas.filter((m) => m.propertyName === prop);
      const has = (n: string) => mine.find((m) => m.name === n);
      const whole = has('isInt') ?? has('isSafeInteger');
      const reflectedBadly = p.type === 'object' && !p.properties && !p.$ref && !p.allOf && !p.additionalProperties;
      if (whole && !has('isArray')) { p.type = 'integer'; continue; }
      if (!reflectedBadly) continue;
      const isIn = has('isIn');
      if (has('isArray')) {
        p.type = 'array';
        const item = mine.find((m) => m.each && m.name === 'isString') ? { type: 'string' } : {};
        p.items = item;
      } else if (isIn) {
        p.type = 'string';
        p.enum = [...((isIn.constraints?.[0] as unknown[]) ?? [])];
      } else if (has('isISO8601') || has('isDateTime')) {
        p.type = 'string';
        p.format = 'date-time';
      } else if (has('isString')) p.type = 'string';
      else if (has('isBoolean')) p.type = 'boolean';
      else if (has('isNumber')) p.type = 'number';
      else if (has('isObject')) p.additionalProperties = true;
    }
  }
  // one inbound event shape per type, so `type` tells them apart (the DTOs share a base with every type)
  const narrow = (schema: string, types: readonly string[]) => {
    const t = ((schemas[schema] as Json | undefined)?.properties as Record<string, Json> | undefined)?.type;
    if (t) t.enum = [...types];
  };
  narrow('CustomerEventDto', CUSTOMER_EVENT_TYPES);
  narrow('OrderAmountEventDto', ORDER_AMOUNT_EVENT_TYPES);
  narrow('OrderCancelledEventDto', ['order.cancelled']);
  narrow('OrderRefundedEventDto', ['order.refunded']);
  const batch = ((schemas.EventBatchDto as Json | undefined)?.properties as Record<string, Json> | undefined)?.events;
  if (batch) batch.items = ref('InboundEvent');
  schemas.InboundEvent = {
    description: 'One commerce event; `type` selects its shape',
    oneOf: ['CustomerEventDto', 'OrderAmountEventDto', 'OrderCancelledEventDto', 'OrderRefundedEventDto'].map(ref),
    discriminator: {
      propertyName: 'type',
      mapping: Object.fromEntries([
        ...CUSTOMER_EVENT_TYPES.map((t) => [t, '#/components/schemas/CustomerEventDto']),
        ...ORDER_AMOUNT_EVENT_TYPES.map((t) => [t, '#/components/schemas/OrderAmountEventDto']),
        ['order.cancelled', '#/components/schemas/OrderCancelledEventDto'], ['order.refunded', '#/components/schemas/OrderRefundedEventDto'],
      ]),
    },
  };
};

/** A human description of a path parameter. */
const describeParam = (path: string, name: string): string => {
  if (name === 'pid') return 'The programme id (`P-…`)';
  if (name === 'kid') return 'The key id';
  if (name === 'batch_id') return 'The migration batch id';
  if (name === 'command') return '`suspend`, `reinstate`, `pause` or `resume`';
  if (path.startsWith('/admin/v1/members/')) return 'The member id (`M-…`)';
  if (/^\/v1\/members\/\{id\}/.test(path)) return 'The member: `M-…`, `ref:<external_ref>` or `phone:<E.164>` (`+` as `%2B`)';
  const prefixes: [RegExp, string][] = [
    [/\/events\//, 'The event id (`EV-…`)'], [/\/redemptions\//, 'The redemption id (`RD-…`)'],
    [/\/redemption-reservations\//, 'The reservation id (`RS-…`)'], [/\/referrals\//, 'The referral id (`RF-…`)'],
    [/\/webhook_endpoints\//, 'The webhook endpoint id (`WE-…`)'], [/\/ledger-entries\//, 'The ledger entry id (`LE-…`)'],
  ];
  return prefixes.find(([re]) => re.test(path))?.[1] ?? 'The resource id';
};

/** The derived problems of an operation plus its own, grouped by status. */
const problemsOf = (method: HttpMethod, path: string, op: Json, facts: RouteFacts, doc: OperationDoc | undefined): Map<number, ProblemSlug[]> => {
  const slugs = new Set<ProblemSlug>();
  const params = (op.parameters as Json[] | undefined) ?? [];
  if (!facts.public) slugs.add('unauthenticated');
  if (!facts.admin && !facts.public) slugs.add('rate-limited');
  if (facts.scopes.length) slugs.add('insufficient-scope');
  if (params.some((p) => p.in === 'path')) slugs.add('not-found');
  if (op.requestBody || method === 'post' || method === 'put' || method === 'patch') {
    slugs.add('malformed-json'); slugs.add('payload-too-large'); slugs.add('validation');
  }
  if (params.some((p) => p.in === 'query')) slugs.add('validation');
  if (facts.idempotent) { slugs.add('idempotency-key-reused'); slugs.add('idempotency-in-progress'); slugs.add('validation'); }
  for (const s of doc?.errors ?? []) slugs.add(s);
  slugs.add('internal'); slugs.add('unavailable');
  const byStatus = new Map<number, ProblemSlug[]>();
  for (const s of Object.keys(PROBLEM_SLUGS) as ProblemSlug[]) {
    if (!slugs.has(s)) continue;
    const st = PROBLEM_SLUGS[s].status;
    byStatus.set(st, [...(byStatus.get(st) ?? []), s]);
  }
  void path;
  return byStatus;
};

/** Completes one operation from its route facts and its entry in OPERATION_DOCS. */
const completeOperation = (method: HttpMethod, path: string, op: Json, facts: RouteFacts, doc: OperationDoc | undefined, components: { responses: Json }): void => {
  const merchant = !facts.admin && !facts.public;
  op.summary = doc?.summary ?? `${method.toUpperCase()} ${path}`;
  const scopeLine = facts.admin ? 'Admin token.' : facts.public ? 'No authentication.'
    : facts.scopes.length ? `Scope: ${facts.scopes.map((s) => `\`${s}\``).join(' or ')}.` : 'Any valid API key.';
  op.description = `${doc?.description ?? 'Not yet described.'}\n\n${scopeLine}${facts.idempotent ? ' Honours `Idempotency-Key`.' : ''}`;
  if (doc?.tag) op.tags = [doc.tag];
  if (op.operationId) op.operationId = String(op.operationId).replace(/Controller_/, '_');

  op.security = facts.public ? [] : facts.admin ? [{ adminToken: [] }]
    : facts.scopes.length ? facts.scopes.map((s) => ({ merchantKey: [s] })) : [{ merchantKey: [] }];

  const params = ((op.parameters as Json[] | undefined) ?? []).filter((p) => !(p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key'));
  for (const p of params) {
    if (p.in === 'path') p.description = describeParam(path, String(p.name));
    to31(p.schema, String(p.name));
    Object.assign(p, doc?.params?.[String(p.name)] ?? {});
  }
  const eventsPost = method === 'post' && path === '/v1/events';
  if (facts.idempotent || eventsPost || (facts.admin && path.endsWith('/migrations'))) {
    params.push({
      name: 'Idempotency-Key', in: 'header', required: false,
      description: eventsPost
        ? 'The idempotency key of a single event (at most 128 characters); in a batch use each event\'s `id`'
        : 'Unique per intent (1 to 255 characters): a retry with the same key and body returns the original response',
      schema: { type: 'string', minLength: 1, maxLength: eventsPost ? 128 : 255 },
      example: eventsPost ? 'order.paid:ord_1' : 'enrol-ada-1',
    });
  }
  op.parameters = params;

  const json = op.requestBody ? ((op.requestBody as Json).content as Json)['application/json'] as Json | undefined : undefined;
  if (json && eventsPost) json.schema = { oneOf: [ref('InboundEvent'), ref('EventBatchDto')] };
  if (json && doc?.request !== undefined) json.example = doc.request;

  const responses: Json = {};
  for (const [status, ok] of Object.entries(doc?.ok ?? { 200: { description: 'Success' } as SuccessDoc })) {
    const headers: Json = { ...baseHeaders(merchant) };
    // a call that passed authentication always carries the key's rate-limit state
    if (merchant) for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining']) headers[name] = { ...HEADERS[name], required: true };
    if (facts.idempotent) headers['Idempotent-Replay'] = h('Idempotent-Replay');
    for (const [name, description] of Object.entries(doc?.headers ?? {})) headers[name] = { description, schema: { type: 'string' } };
    responses[status] = ok.data === undefined ? { description: ok.description, headers } : {
      description: ok.description, headers,
      content: { 'application/json': { schema: dataSchema(ok), ...(ok.example !== undefined ? { example: ok.example } : {}) } },
    };
  }
  for (const [status, slugs] of problemsOf(method, path, op, facts, doc)) {
    if (slugs.length === 1) {
      const name = `${pascal(slugs[0])}${merchant ? '' : 'Admin'}`;
      components.responses[name] ??= problemResponse(slugs, merchant);
      responses[String(status)] = { $ref: `#/components/responses/${name}` };
    } else {
      responses[String(status)] = problemResponse(slugs, merchant);
    }
  }
  op.responses = responses;
};

/** Operations of the document without an entry in OPERATION_DOCS (the unit test insists on none). */
export const undocumentedOperations = (document: OpenAPIObject): string[] =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => (item as Json)[m]).map((m) => `${m.toUpperCase()} ${path}`)).filter((k) => !OPERATION_DOCS[k]);

/**
 * The OpenAPI 3.1 document of the app: Nest's scan of the controllers and DTOs (paths, parameters,
 * bodies), completed from the controllers' auth and idempotency metadata and OPERATION_DOCS.
 * Deterministic: the same code gives the same document (the SDK drift check relies on it).
 */
export const buildOpenApiDocument = (app: INestApplicationContext, opts: { serverUrl?: string } = {}): OpenAPIObject => {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Loyalty programme API')
    .setDescription(INTRO)
    .setVersion('1.0')
    .setLicense('Apache-2.0', 'https://www.apache.org/licenses/LICENSE-2.0')
    .addServer(opts.serverUrl ?? '{base_url}', opts.serverUrl ? 'This service' : 'Where the service runs', opts.serverUrl ? undefined : {
      base_url: { default: 'http://localhost:3000', description: 'The service address (`npm start` listens on http://localhost:3000)' },
    })
    .build();
  const document = SwaggerModule.createDocument(app as never, config);
  const facts = routeFacts(app);
  const components = (document.components ??= {}) as Json;
  components.responses = {};
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const op = (item as Json)[method] as Json | undefined;
      if (!op) continue;
      const f = facts.get(String(op.operationId)) ?? { admin: path.startsWith('/admin/'), public: false, scopes: [], idempotent: false };
      completeOperation(method, path, op, f, OPERATION_DOCS[`${method.toUpperCase()} ${path}`], components as { responses: Json });
    }
  }
  const schemas = (components.schemas ??= {}) as Json;
  to31(schemas);
  fixDtoSchemas(schemas);
  Object.assign(schemas, COMPONENT_SCHEMAS);
  components.headers = HEADERS;
  components.securitySchemes = {
    merchantKey: {
      type: 'http', scheme: 'bearer', bearerFormat: 'svc_live_… or svc_test_… API key',
      description: 'A programme\'s API key: `svc_live_` + 32 characters for the live programme, `svc_test_` for its sandbox. The scopes an operation needs are listed in its security requirement: `ingest`, `read`, `act`, `webhooks`. Keys are issued, rotated (24 h grace) and revoked by the programme admin.',
    },
    adminToken: {
      type: 'http', scheme: 'bearer',
      description: 'The operator\'s admin token (`LOYALTY_ADMIN_TOKEN`), for `/admin/v1` only. Never give it to a merchant system.',
    },
  };
  // responses in a stable order (components.responses fill in as operations are visited)
  components.responses = Object.fromEntries(Object.entries(components.responses as Json).sort(([a], [b]) => a.localeCompare(b)));
  document.tags = TAGS;
    return document;
};
