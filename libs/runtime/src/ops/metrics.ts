import type { NextFunction, Request, Response } from 'express';
import { Counter, Gauge } from 'prom-client';
import { StateCacheStats, stateCacheStats } from '@loyalty/event-store';
import { METRICS, metricsRegistry } from '@loyalty/platform';

export { metricsRegistry } from '@loyalty/platform';

/** Records every request's duration under its route pattern (never the raw path: ids would explode the label set). */
export const metricsMiddleware = (req: Request, res: Response, next: NextFunction): void => {
  const end = METRICS.httpDuration.startTimer();
  res.on('finish', () => {
    const route = (req.route?.path as string | undefined) ?? 'unmatched';
    end({ method: req.method, route, status: String(res.statusCode) });
  });
  next();
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
