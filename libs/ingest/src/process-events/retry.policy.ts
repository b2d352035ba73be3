import { ProblemError } from '@loyalty/platform';

export interface RetryPolicy {
  /** Attempts before an event whose processing keeps failing retryably is marked failed. */
  maxAttempts: number;
  /** First backoff; doubles per attempt up to `backoffMaxMs`. */
  backoffBaseMs: number;
  backoffMaxMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 8, backoffBaseMs: 1_000, backoffMaxMs: 60_000 };

/**
 * Whether a failed `ledger.event.process` call is worth repeating: the bus or the ledger was
 * unavailable, or the handler crashed (`internal`, anything not a ProblemError). A domain problem
 * (validation, not-found, …) would fail the same way again.
 */
export const isRetryable = (e: unknown): boolean =>
  !ProblemError.is(e) || e.problem.slug === 'unavailable' || e.problem.slug === 'internal';

/** Backoff before attempt `attempt + 1`, with ±20 % jitter so a burst of failures does not retry in lockstep. */
export const backoffMs = (attempt: number, p: RetryPolicy, random: () => number = Math.random): number => {
  const exp = Math.min(p.backoffMaxMs, p.backoffBaseMs * 2 ** Math.max(0, Math.min(attempt - 1, 30)));
  return Math.max(0, Math.round(exp * (0.8 + 0.4 * random())));
};

export const errorMessage = (e: unknown): string => {
  if (ProblemError.is(e)) return e.problem.detail ?? e.message;
  if (e instanceof Error) return e.message;
  return String(e);
};
