import { INestApplication } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppConfig, ProblemData, ProblemError, pointer, problem, renderProblem, validation, withRequestId } from '@loyalty/platform';
import { ANSWERED_AT_EDGE, EDGE_INSTALLED, fastifyOf, onFrameworkError, pathOf, trackHttpRequest } from '@loyalty/runtime';
import { GatewayRequest, headerOf } from './request-context';
import { sendProblem } from './problem-response';
import { accessLog } from './access-log';
import { inspectBody, nulInUrl } from './nul-guard';
import { redactUrl } from './redact';
import { BODY_LIMIT_BYTES, readPlainJsonBody } from './plain-json-body';

// body-parser's JSON reader, as the Express app used it: the same charsets (any utf-*, through
// iconv), Content-Encodings (gzip, deflate, br), limit and empty-body rule (`{}`), byte for byte
const bodyParser = require('body-parser') as {
  json(options: { limit: string | number; type: () => boolean; strict: boolean }): (req: IncomingMessage, res: ServerResponse | null, next: (err?: { type?: string }) => void) => void;
};

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * The HTTP edge, as Fastify hooks, before Nest's pipeline: request ids, the access log, NUL in the
 * URL, JSON bodies up to 1 MiB under any Content-Type, malformed JSON, the request id's async
 * context, and answers to unparsable HTTP. Every behaviour is the one the Express app had (pinned
 * by http-edge.e2e-spec.ts); decisions §HTTP adapter says how each was kept.
 */
export const configureHttp = (app: INestApplication, config: AppConfig): void => {
  const fastify = fastifyOf(app);
  (fastify as unknown as Record<symbol, unknown>)[EDGE_INSTALLED] = true;
  fastify.decorateRequest('requestId', '');

  const answerAtEdge = (req: FastifyRequest, reply: FastifyReply, p: ProblemData): void => {
    markAnsweredAtEdge(req);
    sendProblem(reply, p, config.baseUrl);
  };

  /** The first steps of every request (also of one whose URL the router refuses): its id, its access log line, NUL in the URL. Returns false once answered. */
  const begin = (request: FastifyRequest, reply: FastifyReply): boolean => {
    const req = request as GatewayRequest;
    const given = headerOf(req, 'x-request-id');
    const id = given && REQUEST_ID.test(given) ? given : randomUUID();
    req.requestId = id;
    reply.raw.setHeader('X-Request-Id', id);
    accessLog(req, reply);
    const nul = nulInUrl(req.raw.url ?? '/');
    if (!nul) return true;
    if (nul.where === 'path') answerAtEdge(req, reply, { slug: 'not-found', detail: 'No resource has this name' });
    else answerAtEdge(req, reply, validation([{ path: pointer(nul.param), message: 'must not contain NUL characters' }]).problem);
    return false;
  };

  fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!begin(request, reply)) return;
    // Express read any Content-Type; Fastify refuses one it cannot parse (`foo`, an empty value)
    // with a 415 before any body parser runs. body-parser treated it as absent (UTF-8), so it goes.
    const type = request.headers['content-type'];
    if (type !== undefined && !VALID_MEDIA_TYPE.test(type)) delete request.headers['content-type'];
    if (request.is404 && !FASTIFY_READS_BODY.has(request.method)) return unroutedMethod(request, reply);
    done();
  });

  // Bodies: JSON under any Content-Type (or none), on every method but GET and HEAD (and a DELETE
  // without Content-Length); a bare JSON value (`"x"`, `42`) is the body; an empty one is `{}`.
  const json = bodyParser.json({ limit: BODY_LIMIT_BYTES, type: () => true, strict: false });
  const readBody = (request: FastifyRequest, done: (err: Error | null, body?: unknown) => void): void => {
    if (request.method === 'DELETE' && !request.headers['content-length']) return done(null, undefined);
    const raw = request.raw as IncomingMessage & { body?: unknown };
    const parsed = (err?: { type?: string } | null): void => {
      if (!err) {
        const bad = inspectBody(raw.body);
        if (bad === null) return done(null, raw.body);
        return done(atEdge(request, validation([bad])));
      }
      if (err.type === 'entity.too.large') return done(atEdge(request, problem('payload-too-large', 'The body is larger than 1 MiB')));
      return done(atEdge(request, problem('malformed-json', 'The body is not valid JSON')));
    };
    // the common case (a UTF-8 JSON body with its length) without body-parser's machinery; the same result
    if (readPlainJsonBody(raw, (err, body) => { if (!err) raw.body = body; parsed(err); })) return;
    json(raw, null, parsed);
  };
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (request: FastifyRequest, _payload: unknown, done: (err: Error | null, body?: unknown) => void) => readBody(request, done));

  /** Reads the body as for any route (a refused one is answered with its problem), then `then`. */
  const bodyThen = (request: FastifyRequest, reply: FastifyReply, then: () => void): void => {
    readBody(request, (err) => {
      if (err) return sendProblem(reply, (err as ProblemError).problem, config.baseUrl);
      then();
    });
  };

  /**
   * What Express answered a method no route has and Fastify parses no body for (TRACE, PURGE,
   * QUERY, which Fastify also refuses without a Content-Type): the body read as for any method,
   * then 404.
   */
  const unroutedMethod = (request: FastifyRequest, reply: FastifyReply): void => {
    bodyThen(request, reply, () => {
      // answered before the metrics hook (when installed after this one) could see it
      trackHttpRequest(app, request, reply);
      sendProblem(reply, { slug: 'not-found', detail: `no route for ${request.method} ${redactUrl(pathOf(request))}` }, config.baseUrl);
    });
  };

  fastify.addHook('preHandler', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const req = request as GatewayRequest;
    // Fastify skips the parser for a body without Content-Type and with Content-Length: 0, which body-parser read as {}
    if (req.body === undefined && req.headers['content-length'] === '0' && req.headers['content-type'] === undefined) req.body = {};
    // Express matched a route against the raw path (an escape in a fixed segment matched nothing),
    // Fastify against the decoded one
    if (!req.is404 && req.raw.url!.includes('%') && !expressMatches(req.routeOptions.url!, pathOf(req))) {
      reply.callNotFound();
      return;
    }
    // Everything from here on (Nest's pipeline, the bus, the logger) runs as part of the request: its
    // log lines carry request_id and the bus forwards it. Entered after the body is read, whose
    // stream callbacks would not keep the async context.
    withRequestId(req.requestId, done);
  });

  const undecodable = (request: FastifyRequest, reply: FastifyReply): void => {
    const path = pathOf(request);
    const routed = fastify.findRoute({ method: request.method as 'GET', url: path.replace(/%/g, '_') }) !== null;
    sendProblem(reply, routed
      ? { slug: 'not-found', detail: 'No resource has this name' }
      : { slug: 'not-found', detail: `no route for ${request.method} ${redactUrl(path)}` }, config.baseUrl);
  };

  // A path that does not percent-decode: Express routed it on the raw path, then failed to decode
  // the parameter (404, the id names nothing) or found no route
  onFrameworkError(app, (_error, request, reply) => {
    trackHttpRequest(app, request, reply);
    if (!begin(request, reply)) return;
    // Express read the body before routing
    if (request.method !== 'GET' && request.method !== 'HEAD') return bodyThen(request, reply, () => undecodable(request, reply));
    undecodable(request, reply);
  });
  answerUnparsableRequests(app.getHttpServer() as Server, config.baseUrl);
};

/** The methods Fastify reads a body for (besides GET and HEAD, which neither read). */
const FASTIFY_READS_BODY = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** A Content-Type Fastify accepts (its content-type.js): `type/subtype`, then parameters. */
const VALID_MEDIA_TYPE = /^\s*[\w!#$%&'*+.^`|~-]+\/[\w!#$%&'*+.^`|~-]+\s*(;|$)/;

/** Marks a request whose body the edge refused (it has no route, for the metrics) and returns the problem. */
const atEdge = (request: FastifyRequest, e: Error): Error => {
  markAnsweredAtEdge(request);
  return e;
};

/** The edge answered this request itself (no route ran): the metrics hook labels it so. */
const markAnsweredAtEdge = (request: FastifyRequest): void => {
  (request.raw as unknown as Record<symbol, unknown>)[ANSWERED_AT_EDGE] = true;
};

const routeRegex = new Map<string, RegExp>();
/** Whether Express 5's router (path-to-regexp, case-insensitive, optional trailing slash) matches the raw path against a route pattern. */
const expressMatches = (pattern: string, rawPath: string): boolean => {
  let re = routeRegex.get(pattern);
  if (!re) {
    const body = pattern.split('/').map((s) => (s.startsWith(':') ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
    re = new RegExp(`^${body}/?$`, 'i');
    routeRegex.set(pattern, re);
  }
  return re.test(rawPath);
};

/**
 * Requests Node's HTTP parser refuses before any middleware runs (a URL or headers over 16 KiB, a
 * broken request line) are answered with a problem too, not Node's bare status line. The slug list
 * is closed (decisions §2): oversized headers are a 413 `payload-too-large`, anything else a 400.
 */
const answerUnparsableRequests = (server: Server, baseUrl: string): void => {
  server.removeAllListeners('clientError');
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const p: ProblemData = err.code === 'HPE_HEADER_OVERFLOW'
      ? { slug: 'payload-too-large', detail: 'The request line and headers are larger than the server accepts (16 KiB)' }
      : { slug: 'malformed-json', detail: 'The request is not valid HTTP' };
    const body = JSON.stringify(renderProblem(p, baseUrl));
    const status = p.slug === 'payload-too-large' ? '413 Payload Too Large' : '400 Bad Request';
    socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
};
