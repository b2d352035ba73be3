/** How long an Idempotency-Key is kept (interface-spec "Limits": 30 days), in seconds. */
export const IDEMPOTENCY_RETENTION_SECONDS = 30 * 86_400;

/**
 * An Idempotency-Key a command claims itself (the gateway's `@Idempotent({ claimedByCommand: true })`
 * routes on the PostgreSQL event store), with the request's fingerprint (a hash of method, path and body).
 */
export interface IdempotencyClaim { key: string; fingerprint: string }

/**
 * The answer of a command that keeps its Idempotency-Key itself: the result, and whether it is the
 * one an earlier call with the same key produced, as it was then (the gateway then says
 * `Idempotent-Replay: true`).
 */
export interface KeyedReply<T> { result: T; replayed: boolean }

/** The unique name a command claims for a key: one per programme partition and key, whatever the route. */
export const idempotencyClaimName = (tenant: string, key: string): string => `idempotency:${tenant}:${key}`;
