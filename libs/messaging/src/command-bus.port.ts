import { Carrier, ProblemData, ProblemError, carrierFor, currentRequestId, isUnavailable, problem, unavailable, withRequestId } from '@loyalty/platform';

/** Where a transport puts the request id a message carried, on the payload object it hands the handler (invisible to JSON and to the payload's type). */
const MESSAGE_REQUEST = Symbol.for('loyalty.messageRequestId');

/** Marks `payload` (a message as the handler receives it) with the request it belongs to; a payload that is not an object carries nothing. */
const carryRequestId = (payload: unknown, requestId: string | null | undefined): void => {
  if (requestId && payload !== null && typeof payload === 'object') (payload as { [MESSAGE_REQUEST]?: string })[MESSAGE_REQUEST] = requestId;
};

/**
 * A transport's call of a handler with `data`, as part of request `requestId`: the payload carries
 * the id (for the handler's body, past Nest's awaits) and the call's synchronous part runs inside it.
 */
export const handleAsPartOf = <R>(requestId: string | null | undefined, data: unknown, call: () => R): R => {
  carryRequestId(data, requestId);
  return withRequestId(requestId, call);
};

/**
 * The request a handler's message belongs to: the current one (request-context's async mode, or a
 * scope the handler opened), else the one its transport found on the message (edges mode: Nest's
 * handler pipeline awaits before the handler runs, past the scope the transport opened).
 */
export const messageRequestId = (payload: unknown): string | undefined =>
  currentRequestId() ?? (payload !== null && typeof payload === 'object' ? (payload as { [MESSAGE_REQUEST]?: string })[MESSAGE_REQUEST] : undefined);

/** The current trace context (tracing on) with the request id of the handler's message: what work queued for later keeps of it. */
export const messageCarrier = (payload: unknown): Carrier => carrierFor(messageRequestId(payload));

/** What crosses the bus as a reply: data, or a problem the gateway renders as RFC 9457. */
export type Reply<T> = { ok: true; data: T } | { ok: false; problem: ProblemData };

/** Runs a handler and turns domain problems into a reply; anything else stays an error (a 500). */
export const reply = async <T>(fn: () => Promise<T> | T): Promise<Reply<T>> => {
  try {
    return { ok: true, data: await fn() };
  } catch (e) {
    if (ProblemError.is(e)) return { ok: false, problem: e.problem };
    throw e;
  }
};

export const unwrap = <T>(r: Reply<T> | undefined | null): T => {
  if (!r || typeof r !== 'object' || !('ok' in r)) throw problem('internal', 'malformed reply from a service');
  if (r.ok) return r.data;
  throw new ProblemError(r.problem);
};

/**
 * What a caller gets for a failure that is not a domain problem: a Nest RPC error from the handler
 * (Nest turns any other exception into `{ status: 'error', message: 'Internal server error' }`) or a
 * bug. ProblemErrors pass through unchanged.
 */
export const handlerFailure = (pattern: string, e: unknown): ProblemError =>
  ProblemError.is(e) ? e : isUnavailable(e) ? unavailable() : problem('internal', `${pattern} failed: ${errorMessage(e)}`);

const errorMessage = (e: unknown): string => {
  if (e instanceof Error) return e.message;
  if (typeof e === 'string') return e;
  if (e && typeof e === 'object' && 'message' in e && typeof e.message === 'string') return e.message;
  try {
    return JSON.stringify(e) ?? String(e);
  } catch {
    return String(e);
  }
};

/**
 * The command bus port. Gateway → services: request-reply where the API answers synchronously,
 * emit where it answers 202. `key` is the partition key (member or order), so one consumer sees a
 * member's commands in order.
 */
export abstract class CommandBus {
  abstract request<T>(pattern: string, payload: unknown, key?: string): Promise<T>;
  abstract emit(pattern: string, payload: unknown, key?: string): Promise<void>;
}
