import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request a piece of work belongs to (issue 11): set by the gateway for an HTTP request, by the
 * Kafka transport from the `x-request-id` header of a bus message, and by the ingest worker from the
 * queued event. Every log line written inside it carries `request_id`; the bus forwards it.
 */
export interface RequestContext { requestId: string }

export const REQUEST_ID_HEADER = 'x-request-id';

const storage = new AsyncLocalStorage<RequestContext>();

export const currentRequestId = (): string | undefined => storage.getStore()?.requestId;

/** Runs `fn` as part of request `requestId` (no context when it is empty). */
export const withRequestId = <T>(requestId: string | null | undefined, fn: () => T): T =>
  requestId ? storage.run({ requestId }, fn) : fn();
