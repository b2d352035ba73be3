import type { INestApplication } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import { StateCacheStats, stateCacheStats } from '@loyalty/event-store';
import { METRICS, metricsRegistry } from '@loyalty/platform';
import { fastifyOf } from '../http/http-adapter';

export { metricsRegistry } from '@loyalty/platform';

/**
 * Set on a raw request the HTTP edge answered itself, before routing (a NUL in the URL, a body that
 * is not JSON): such a request has no route. See installHttpMetrics.
 */
export const ANSWERED_AT_EDGE = Symbol.for('loyalty.http.answeredAtEdge');
/** Set on the Fastify instance once the gateway's HTTP edge (configure-http.ts) is installed. */
export const EDGE_INSTALLED = Symbol.for('loyalty.http.edgeInstalled');

/** A route's label: its pattern (never the raw path: ids would explode the label set), or what the route names itself. */
export const routeLabel = (req: FastifyRequest): string =>
  ((req.routeOptions.config as { metricsRoute?: string } | undefined)?.metricsRoute ?? req.routeOptions.url) ?? 'unmatched';

const TRACKED = Symbol('loyalty.http.tracked');
/** Per app: records one request (set by installHttpMetrics). */
const trackers = new WeakMap<object, (req: FastifyRequest, reply: FastifyReply) => void>();

/**
 * Records every request's duration under its route pattern. As under Express, where this was a
 * middleware: installed after the gateway's edge (the standalone app), requests the edge answers
 * itself are not recorded; installed before it (the distributed gateway), they are, as `unmatched`.
 */
export const installHttpMetrics = (app: INestApplication): void => {
  const fastify = fastifyOf(app);
  const afterEdge = (fastify as unknown as Record<symbol, unknown>)[EDGE_INSTALLED] === true;
  const track = (req: FastifyRequest, reply: FastifyReply): void => {
    const raw = req.raw as unknown as Record<symbol, unknown>;
    if (raw[TRACKED]) return;
    raw[TRACKED] = true;
    const end = METRICS.httpDuration.startTimer();
    reply.raw.on('finish', () => {
      const atEdge = raw[ANSWERED_AT_EDGE] === true;
      if (atEdge && afterEdge) return;
      end({ method: req.method, route: atEdge || req.is404 ? 'unmatched' : routeLabel(req), status: String(reply.raw.statusCode) });
    });
  };
  trackers.set(fastify, track);
  fastify.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    track(req, reply);
    done();
  });
};

/** Records a request Fastify answers without running its hooks (a URL its router refuses), if the app records requests. */
export const trackHttpRequest = (app: INestApplication, req: FastifyRequest, reply: FastifyReply): void => {
  trackers.get(fastifyOf(app))?.(req, reply);
};

/** The state caches' figures summed by cache name (a process may hold several instances of one). */
const cacheSums = (pick: (c: StateCacheStats) => number): Map<string, number> => {
  const out = new Map<string, number>();
  for (const c of stateCacheStats()) out.set(c.name, (out.get(c.name) ?? 0) + pick(c));
  return out;
};

/** Counters are read from the caches at scrape time: each scrape adds what happened since the last one. */
const cacheCounter = (name: string, help: string, pick: (c: StateCacheStats) => number): Counter => {
  const seen = new Map<string, number>();
  return new Counter({
    name, help, labelNames: ['cache'], registers: [metricsRegistry],
    collect() {
      for (const [cache, total] of cacheSums(pick)) {
        const delta = total - (seen.get(cache) ?? 0);
        if (delta > 0) this.inc({ cache }, delta);
        seen.set(cache, Math.max(total, seen.get(cache) ?? 0));
      }
    },
  });
};

cacheCounter('loyalty_state_cache_hits_total', 'Aggregate state cache lookups that found the stream (issue 13)', (c) => c.hits);
cacheCounter('loyalty_state_cache_misses_total', 'Aggregate state cache lookups that had to fold from a snapshot and the stream', (c) => c.misses);
cacheCounter('loyalty_state_cache_evictions_total', 'States evicted to stay within the byte budget', (c) => c.evictions);

const cacheGauge = (name: string, help: string, pick: (c: StateCacheStats) => number): Gauge => new Gauge({
  name, help, labelNames: ['cache'], registers: [metricsRegistry],
  collect() {
    for (const [cache, v] of cacheSums(pick)) this.set({ cache }, v);
  },
});

cacheGauge('loyalty_state_cache_bytes', 'Estimated bytes of the cached aggregate states', (c) => c.bytes());
cacheGauge('loyalty_state_cache_max_bytes', 'The byte budget of the state cache (LOYALTY_STATE_CACHE_BYTES, LOYALTY_FOLD_CACHE_BYTES)', (c) => c.maxBytes);
cacheGauge('loyalty_state_cache_entries', 'Streams whose state is cached', (c) => c.entries());
