import { Attributes, INVALID_SPAN_CONTEXT, ROOT_CONTEXT, Span, SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import { REQUEST_ID_HEADER, currentRequestId, tracingActive, withRequestId } from './request-context';
import { redactText } from './redact';

/**
 * What travels with a unit of work across a process boundary (issue 11): the W3C trace context
 * (`traceparent`, `tracestate`) and the gateway's request id. Bus messages carry it in their Kafka
 * headers; the ingest queue stores it with the event. Without the OpenTelemetry SDK (tracing off) the
 * propagator is a no-op and only the request id travels.
 */
export type Carrier = Record<string, string>;

const NO_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** The current trace context and request id, as headers. */
export const currentCarrier = (): Carrier => {
  const c: Carrier = {};
  if (tracingActive()) propagation.inject(context.active(), c);
  const id = currentRequestId();
  if (id) c[REQUEST_ID_HEADER] = id;
  return c;
};

/** The current carrier, naming `requestId` when the current context names none (a request id taken earlier, before the caller awaited). */
export const carrierFor = (requestId: string | null | undefined): Carrier => {
  const c = currentCarrier();
  if (requestId && !c[REQUEST_ID_HEADER]) c[REQUEST_ID_HEADER] = requestId;
  return c;
};

/** Header values as kafkajs hands them (Buffer, string, arrays), as a carrier. */
export const carrierFrom = (headers: Record<string, unknown> | null | undefined): Carrier => {
  const c: Carrier = {};
  if (!headers) return c;
  for (const name of ['traceparent', 'tracestate', REQUEST_ID_HEADER]) {
    let v = headers[name];
    if (Array.isArray(v)) v = v[0];
    if (Buffer.isBuffer(v)) v = v.toString('utf8');
    if (typeof v === 'string' && v.length > 0 && v.length <= 512) c[name] = v;
  }
  return c;
};

/** Runs `fn` inside the trace and request the carrier names (a new root when it names none). */
export const withCarrier = <T>(carrier: Carrier | null | undefined, fn: () => T): T => {
  const c = carrier ?? {};
  if (!tracingActive()) return withRequestId(c[REQUEST_ID_HEADER], fn);
  const ctx = c.traceparent ? propagation.extract(ROOT_CONTEXT, c) : ROOT_CONTEXT;
  return context.with(ctx, () => withRequestId(c[REQUEST_ID_HEADER], fn));
};

const tracer = () => trace.getTracer('loyalty');

/**
 * Runs `fn` in a new span (a child of the active one), ended when its promise settles; a rejection
 * marks the span as an error. Without the SDK it only calls `fn` (with a span that records nothing).
 */
export const inSpan = <T>(name: string, kind: SpanKind, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> =>
  !tracingActive() ? fn(NO_SPAN) : tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (e) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: redactText(e instanceof Error ? e.message : String(e)).slice(0, 500) });
      throw e;
    } finally {
      span.end();
    }
  });

export { SpanKind, SpanStatusCode };
