import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, operations, paths } from './schema';

/**
 * The typed TypeScript client of the Loyalty programme API. Types are generated from the OpenAPI
 * document (libs/sdk/openapi.json) into ./schema.ts by openapi-typescript (`npm run api:types`, which
 * build and typecheck run first; the file is not committed); requests go
 * through openapi-fetch, so every path, parameter, body and response is checked by the compiler.
 *
 *   const loyalty = createLoyaltyClient({ baseUrl: 'http://localhost:3000', apiKey: process.env.LOYALTY_KEY! });
 *   const { data, error } = await loyalty.GET('/v1/members/{id}', { params: { path: { id: 'ref:cust_42' } } });
 *
 * Server-side only: an API key must never reach a browser.
 */
export type { components, operations, paths };
export type Schemas = components['schemas'];
/** The API's resources (a `Problem` is an RFC 9457 problem: branch on the slug after `#` in `type`, see /docs/api/errors). */
export type {
  Member, LedgerEntry, EventStatus, EventAccepted, Redemption, Reservation, Quote, Program, Liability, Referral, WebhookEndpoint, Problem,
} from './schema';
export type LoyaltyClient = Client<paths>;

export interface LoyaltyClientOptions {
  /** Where the service runs, e.g. http://localhost:3000 (no trailing slash). */
  baseUrl: string;
  /** A `svc_live_…` or `svc_test_…` key (or, for /admin/v1, the admin token). */
  apiKey: string;
  /** A fetch implementation (default: the global fetch). */
  fetch?: (request: Request) => Promise<Response>;
  /** Extra middleware (logging, retries, tracing). */
  middleware?: Middleware[];
}

/** A client that sends `Authorization: Bearer <apiKey>` on every request. */
export const createLoyaltyClient = (options: LoyaltyClientOptions): LoyaltyClient => {
  const client = createClient<paths>({ baseUrl: options.baseUrl, ...(options.fetch ? { fetch: options.fetch } : {}) });
  client.use({
    onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${options.apiKey}`);
      return request;
    },
  });
  for (const m of options.middleware ?? []) client.use(m);
  return client;
};

/** The problem slug of an error body (`validation`, `rate-limited`, …), or null when it is not a problem. */
export const problemSlug = (error: unknown): string | null => {
  const type = (error as { type?: unknown } | null)?.type;
  return typeof type === 'string' && type.includes('#') ? type.slice(type.lastIndexOf('#') + 1) : null;
};
