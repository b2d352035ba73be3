import { ProblemData, ProblemError, problem } from '@loyalty/platform';

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
 * The command bus port. Gateway → services: request-reply where the API answers synchronously,
 * emit where it answers 202. `key` is the partition key (member or order), so one consumer sees a
 * member's commands in order.
 */
export abstract class CommandBus {
  abstract request<T>(pattern: string, payload: unknown, key?: string): Promise<T>;
  abstract emit(pattern: string, payload: unknown, key?: string): Promise<void>;
}
