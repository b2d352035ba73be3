/**
 * OpenTelemetry tracing (issue 11), off unless OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: then, and only then, the Node SDK is loaded and exports
 * spans over OTLP (protocol, headers, sampler, resource: the standard OTEL_* variables). Without it
 * nothing but `@opentelemetry/api` is loaded, whose calls are no-ops.
 *
 * Spans: HTTP server and client (instrumentation-http; the probes /healthz, /readyz and /metrics are
 * left out), PostgreSQL queries inside a trace (instrumentation-pg), the command bus (messaging:
 * producer and consumer spans, W3C traceparent in the Kafka headers), the ingest queue (the trace
 * context is stored with the queued event and restored by the worker) and webhook deliveries.
 *
 * Import this module first in a process's entry point (before pg, http or Nest are loaded), so the
 * instrumentations can patch them: it imports nothing else of the workspace.
 */
import type * as SdkNode from '@opentelemetry/sdk-node';
import type * as InstrumentationHttp from '@opentelemetry/instrumentation-http';
import type * as InstrumentationPg from '@opentelemetry/instrumentation-pg';

let sdk: SdkNode.NodeSDK | null = null;

/** Whether the environment asks for traces (an OTLP endpoint, and the SDK not disabled). */
export const tracingConfigured = (env: NodeJS.ProcessEnv = process.env): boolean =>
  env.OTEL_SDK_DISABLED?.toLowerCase() !== 'true' && !!(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);

const PROBES = /^\/(healthz|readyz|metrics)(\?|$)/;

/** Span attributes that hold a URL or part of one: they may name a person (`/v1/members/ref:…`, `?email=`). */
const URL_ATTRIBUTES = ['http.url', 'http.target', 'url.full', 'url.path', 'url.query'];
/** Until the runtime hands over redactUrl (before the first request), URLs are dropped whole. */
let urlRedactor: (url: string) => string = () => '[redacted]';

/** The runtime sets @loyalty/platform's redactUrl here (this module may not load the workspace). */
export const setTraceUrlRedactor = (redact: (url: string) => string): void => { urlRedactor = redact; };

const redactUrlAttributes = (span: unknown): void => {
  const s = span as { attributes?: Record<string, unknown>; setAttribute(k: string, v: string): void };
  const attributes = s.attributes;
  if (!attributes) return;
  for (const key of URL_ATTRIBUTES) {
    const v = attributes[key];
    if (typeof v === 'string') s.setAttribute(key, key === 'url.query' ? urlRedactor(`/?${v}`).slice(2) : urlRedactor(v));
  }
};

/** Starts the SDK when tracing is configured; `service` names the process (OTEL_SERVICE_NAME wins). Returns whether it runs. */
export const startTracing = (service: string): boolean => {
  if (sdk) return true;
  if (!tracingConfigured()) return false;
  // traces only: metrics are Prometheus' (/metrics), logs are stdout's
  process.env.OTEL_METRICS_EXPORTER ??= 'none';
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  process.env.OTEL_SERVICE_NAME ??= `loyalty-${service}`;
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof SdkNode;
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof InstrumentationHttp;
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof InstrumentationPg;
  sdk = new NodeSDK({
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => PROBES.test(req.url ?? ''),
        requestHook: (span) => redactUrlAttributes(span),
      }),
      // pollers (ingest queue, projections, webhooks) query all the time: only queries inside a trace
      new PgInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  // @loyalty/platform's trace helpers read this (they skip the OpenTelemetry API while it is unset)
  (globalThis as { [k: symbol]: unknown })[Symbol.for('loyalty.tracing.active')] = true;
  return true;
};

/** Flushes and stops the SDK (graceful shutdown); a no-op when tracing is off. */
export const shutdownTracing = async (): Promise<void> => {
  const s = sdk;
  sdk = null;
  if (s) await s.shutdown().catch(() => undefined);
};
