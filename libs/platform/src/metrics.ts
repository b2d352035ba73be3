import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The process's Prometheus registry, served at /metrics (issue 11). Every metric is defined here,
 * once per process, so libraries can record without knowing each other. Counters and histograms are
 * O(1) per event; gauges that need a look at the database or the broker (queue depth, lags, breaker
 * states) are computed when Prometheus scrapes, by the probes registered with `onScrape`.
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

type Probe = () => Promise<void> | void;
const probes = new Set<() => Promise<void>>();

/**
 * Registers a probe that sets gauges before a scrape. One run at a time per probe, and not more
 * often than every `minIntervalMs` (a scrape storm costs one query); a failing probe leaves its
 * gauges as they were. Returns the function that removes it.
 */
export const onScrape = (probe: Probe, minIntervalMs = 1_000): (() => void) => {
  let running: Promise<void> | null = null;
  let last = 0;
  const run = (): Promise<void> => {
    if (running) return running;
    if (Date.now() - last < minIntervalMs) return Promise.resolve();
    running = (async () => { try { await probe(); } catch { /* keep the last values */ } finally { last = Date.now(); running = null; } })();
    return running;
  };
  probes.add(run);
  return () => { probes.delete(run); };
};

/** The text Prometheus reads: probes first, then every metric. */
export const renderMetrics = async (): Promise<string> => {
  await Promise.all([...probes].map((p) => p()));
  return metricsRegistry.metrics();
};

const registers = [metricsRegistry];
const counter = <L extends string>(name: string, labelNames: readonly L[], help: string) => new Counter<L>({ name, help, labelNames, registers });
const gauge = <L extends string>(name: string, labelNames: readonly L[], help: string) => new Gauge<L>({ name, help, labelNames, registers });
const histogram = <L extends string>(name: string, labelNames: readonly L[], buckets: number[], help: string) => new Histogram<L>({ name, help, labelNames, buckets, registers });

export const METRICS = {
  httpDuration: histogram('http_request_duration_seconds', ['method', 'route', 'status'], [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    'HTTP request duration by route and status'),
  busRequestDuration: histogram('loyalty_bus_request_duration_seconds', ['pattern', 'outcome'], [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    'Command bus request-reply latency by pattern and outcome (ok, problem: a domain refusal, error: no usable reply)'),
  ingestQueueDepth: gauge('loyalty_ingest_queue_depth', ['mode', 'status'],
    'Inbound events waiting (queued) or being processed (running), by programme mode'),
  ingestOldestQueuedAge: gauge('loyalty_ingest_oldest_queued_age_seconds', ['mode'],
    'Age of the oldest queued inbound event (0 when none), by programme mode'),
  ingestEvents: counter('loyalty_ingest_events_total', ['mode', 'outcome'],
    'Inbound events processed by this process, by mode and outcome (completed, failed, retried)'),
  kafkaConsumerLag: gauge('loyalty_kafka_consumer_lag', ['group', 'topic'],
    'Messages not yet committed by a consumer group, by group and topic'),
  projectionLagEvents: gauge('loyalty_projection_lag_events', ['projection'],
    'Events in the store a projection has not applied yet'),
  projectionLagSeconds: gauge('loyalty_projection_lag_seconds', ['projection'],
    'Age of the oldest event a projection has not applied yet (0 when caught up)'),
  webhookDeliveries: counter('loyalty_webhook_deliveries_total', ['outcome'],
    'Webhook delivery attempts by outcome (delivered, failed, short_circuited: held back by an open breaker)'),
  webhookBreakers: gauge('loyalty_webhook_circuit_breakers', ['state'],
    'Per-endpoint circuit breakers of this process by state (closed, open, half_open)'),
  points: counter('loyalty_points_total', ['kind', 'mode'],
    'Points (minor units) issued, redeemed and expired, as the ledger records them, by programme mode'),
};
