import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request a piece of work belongs to (issue 11): set by the gateway for an HTTP request, by the
 * bus transports from the `x-request-id` header of a message, and by the ingest worker from the
 * queued event. Every log line written inside it carries `request_id`; the bus forwards it.
 *
 * How far "inside" reaches depends on the mode (docs/decisions.md, "Request ids without async
 * hooks"):
 * - **edges** (the default): the id holds for the synchronous run of `withRequestId`'s function.
 *   Every hand-off passes it on explicitly: the gateway's bus calls, each transport's handler
 *   call, the queued event, the ingest worker's message to the ledger. A line logged after an
 *   `await` deeper inside has no `request_id`.
 * - **async**: it also follows every `await` and callback below (AsyncLocalStorage). On Node 20
 *   that installs V8 promise hooks for the whole process, which cost 15–25 % of a service's CPU
 *   in the benchmarks (docs/performance.md, tenth round). Chosen when tracing is on (OpenTelemetry's
 *   context manager installs the same hooks anyway), when LOG_LEVEL is debug or trace, or with
 *   LOYALTY_REQUEST_CONTEXT=async.
 */
export interface RequestContext { requestId: string }

export const REQUEST_ID_HEADER = 'x-request-id';

/** Set by @loyalty/telemetry when the OpenTelemetry SDK runs. */
const TRACING = Symbol.for('loyalty.tracing.active');
export const tracingActive = (): boolean => (globalThis as { [TRACING]?: boolean })[TRACING] === true;

let asyncByConfig: boolean | null = null;
/** Whether the request context follows asynchronous work (read once per process, tracing checked each time: it starts before any request). */
export const asyncRequestContext = (): boolean => {
  asyncByConfig ??= process.env.LOYALTY_REQUEST_CONTEXT === 'async' || /^(debug|trace)$/i.test(process.env.LOG_LEVEL ?? '');
  return asyncByConfig || tracingActive();
};

/** For tests: forget the mode read from the environment. */
export const resetRequestContextMode = (): void => { asyncByConfig = null; };

const storage = new AsyncLocalStorage<RequestContext>();
/** The edges mode's context: set only while a `withRequestId` function runs synchronously. */
let edge: RequestContext | undefined;

export const currentRequestId = (): string | undefined => (edge ?? storage.getStore())?.requestId;

/** Runs `fn` as part of request `requestId` (no context when it is empty). */
export const withRequestId = <T>(requestId: string | null | undefined, fn: () => T): T => {
  if (!requestId) return fn();
  if (asyncRequestContext()) return storage.run({ requestId }, fn);
  const outer = edge;
  edge = { requestId };
  try {
    return fn();
  } finally {
    edge = outer;
  }
};
