import './lean-async-bind';
import { parse as parseQuery } from 'node:querystring';
import type { Server } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Per app: who answers a URL Fastify's router refuses (see onFrameworkError). */
const frameworkErrors = new WeakMap<FastifyInstance, (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void>();

/**
 * The HTTP adapter of every process: Nest on Fastify (decisions §HTTP adapter; it replaced
 * Express, whose routing and response path cost 0.1–0.2 ms of CPU per request). Configured so
 * that what a client sees is what the Express app answered:
 * - paths match case-insensitively, with or without one trailing slash (Express's defaults), and a
 *   path parameter may be of any length (Fastify's default stops at 100 characters);
 * - the query string is parsed by Node's querystring (Express 5's "simple" parser): a repeated key
 *   is an array, `a[b]` is a key named `a[b]`, `;` is part of a value;
 * - keep-alive and request timeouts are Node's defaults (Fastify's are 72 s and none);
 * - a request in flight while the app closes is answered, never a 503 (Express never refused one);
 * - no Fastify logger (our own logger writes the access log), no Fastify `clientError` answer (the
 *   gateway writes its own; other processes get Node's, as with Express).
 * Bodies are read by the gateway (configure-http.ts); a service process takes JSON only.
 */
export const createHttpAdapter = (): FastifyAdapter => {
  const adapter = new ExpressCompatibleFastifyAdapter({
    logger: false,
    trustProxy: false,
    return503OnClosing: false,
    keepAliveTimeout: 5_000,
    requestTimeout: 300_000,
    connectionTimeout: 0,
    exposeHeadRoutes: true,
    routerOptions: {
      caseSensitive: false,
      ignoreTrailingSlash: true,
      ignoreDuplicateSlashes: false,
      maxParamLength: 65_536,
      querystringParser: expressQuery,
    },
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const handler = frameworkErrors.get(adapter.getInstance());
      if (handler) return handler(error, request, reply);
      // no route can take a URL that does not decode: what Express's router answered (no route)
      return reply.callNotFound();
    },
    // Nest's middleware (middie) is not used: the HTTP edge is written as Fastify hooks
    skipMiddie: true,
  } as ConstructorParameters<typeof ExpressCompatibleFastifyAdapter>[0]);
  // Fastify answers unparsable HTTP with its own JSON; without a listener Node answers as it did under Express
  (adapter.getInstance().server as Server).removeAllListeners('clientError');
  return adapter;
};

/** The Fastify instance under a Nest app made with createHttpAdapter. */
export const fastifyOf = (app: INestApplication): FastifyInstance => app.getHttpAdapter().getInstance() as FastifyInstance;

/** Who answers a URL Fastify's router refuses (a path that does not percent-decode): the gateway sets its problem answer. */
export const onFrameworkError = (app: INestApplication, handler: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void): void => {
  frameworkErrors.set(fastifyOf(app), handler);
};

/** Express 5's "simple" query parser (Node's querystring); a fragment, which Express's URL parsing dropped, is not part of the query. */
const expressQuery = (query: string): Record<string, unknown> => {
  const hash = query.indexOf('#');
  return parseQuery(hash < 0 ? query : query.slice(0, hash));
};

/** `req.path` as Express computed it: the request target's path, before any `?` or `#`, not decoded. */
export const pathOf = (req: { raw: { url?: string } } | { url?: string }): string => {
  const url = ('raw' in req ? req.raw.url : req.url) ?? '/';
  let end = url.length;
  const q = url.indexOf('?');
  if (q >= 0) end = q;
  const h = url.indexOf('#');
  if (h >= 0 && h < end) end = h;
  if (url.charCodeAt(0) !== 0x2f /* / */) {
    // absolute-form (a proxy's request target): its path
    try { return new URL(url).pathname; } catch { return url.slice(0, end); }
  }
  return url.slice(0, end);
};

/**
 * Nest's Fastify adapter, answering a controller's return value as Nest's Express adapter did.
 * A plain JSON body (a literal object or array, the API's answers) is Fastify's own path: the same
 * bytes, Content-Type and length. What Express's `send` did differently for the rest is kept: the
 * freshness test (see isFreshForExpress), nothing for null, and text/html for a string.
 */
class ExpressCompatibleFastifyAdapter extends FastifyAdapter {
  override reply(response: FastifyReply, body: unknown, statusCode?: number): FastifyReply {
    if (statusCode) response.status(statusCode);
    if (body !== null && typeof body === 'object' && !Buffer.isBuffer(body) && isPlain(body) && response.getHeader('content-type') === undefined) {
      const status = response.statusCode;
      if (status !== 204 && status !== 304 && !(status >= 100 && status < 200)) return super.reply(response, body);
    }
    if (isFreshForExpress(response)) return sendNotModified(response);
    if (body === null || body === undefined) return response.send();
    if (typeof body === 'string' || typeof body === 'number' || typeof body === 'boolean') {
      if (response.getHeader('content-type') === undefined) response.type('text/html; charset=utf-8');
      return response.send(String(body));
    }
    return super.reply(response, body);
  }
}

/** A literal object or an array: what JSON.stringify writes as JSON (never a stream, a file or a class with its own toJSON contract we have not seen). */
const isPlain = (v: object): boolean => {
  if (Array.isArray(v)) return true;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

const NO_CACHE = /(?:^|,)\s*?no-cache\s*?(?:,|$)/;

/**
 * Express's `res.send` answered 304 to a fresh request (`req.fresh`): a GET or HEAD whose answer
 * is 2xx, sent with `If-None-Match: *` and neither `If-Modified-Since` nor `Cache-Control: no-cache`
 * (no answer of this API carries an ETag or Last-Modified, so nothing else is ever fresh). The
 * answers Express wrote through `send` keep that: the document, the docs pages, /metrics, the
 * ledger-entries JSON page, and a controller's answer that is not plain JSON. Plain JSON answers
 * never had it (decisions, "Plain JSON answers are written directly").
 */
export const isFreshForExpress = (reply: FastifyReply): boolean => {
  const req = reply.request;
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const status = reply.statusCode;
  if (!((status >= 200 && status < 300) || status === 304)) return false;
  const headers = req.headers;
  if (headers['if-none-match'] !== '*' || headers['if-modified-since']) return false;
  const cacheControl = headers['cache-control'];
  return !(cacheControl && NO_CACHE.test(cacheControl));
};

/**
 * Express's 304: no Content-Type, Content-Length or Transfer-Encoding, no body; every other header
 * kept. Written on the raw response: Fastify's HEAD route would add `content-length: 0`.
 */
export const sendNotModified = (reply: FastifyReply): FastifyReply => {
  const headers = reply.getHeaders();
  delete headers['content-type'];
  delete headers['content-length'];
  delete headers['transfer-encoding'];
  const res = reply.raw;
  res.removeHeader('content-type');
  res.removeHeader('content-length');
  res.removeHeader('transfer-encoding');
  for (const name of Object.keys(headers)) if (res.hasHeader(name)) delete headers[name]; // set on the raw response already (its name's case kept)
  reply.hijack();
  res.writeHead(304, headers as Record<string, string | string[] | number>);
  res.end();
  return reply;
};
