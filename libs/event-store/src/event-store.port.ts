/**
 * The event store port (architecture.md "Streams"). Two adapters implement it: PostgreSQL and
 * EventStoreDB; both pass the contract suite in event-store.contract.ts.
 */
export type ExpectedRevision = 'no_stream' | 'any' | bigint;

export interface EventMetadata {
  causationId?: string;
  correlationId?: string;
  idempotencyKey?: string;
  [key: string]: unknown;
}

export interface NewEvent<T extends string = string, D = unknown> {
  /** UUID. Appending an id already present in the stream is a no-op (idempotent append). */
  id: string;
  type: T;
  data: D;
  metadata?: EventMetadata;
}

/** A global position: commit (transaction id in PostgreSQL) then prepare (sequence). Compare with comparePositions. */
export interface Position { commit: bigint; prepare: bigint }
export const START: Position = { commit: 0n, prepare: 0n };
export const comparePositions = (a: Position, b: Position): number =>
  a.commit < b.commit ? -1 : a.commit > b.commit ? 1 : a.prepare < b.prepare ? -1 : a.prepare > b.prepare ? 1 : 0;
export const positionToString = (p: Position): string => `${p.commit}:${p.prepare}`;
export const positionFromString = (s: string): Position => {
  const [c, p] = s.split(':');
  return { commit: BigInt(c), prepare: BigInt(p) };
};

export interface RecordedEvent<T extends string = string, D = unknown> {
  id: string;
  streamId: string;
  revision: bigint;
  type: T;
  data: D;
  metadata: EventMetadata;
  position: Position;
  createdAt: Date;
}

export interface AppendResult { nextRevision: bigint; position: Position }

/**
 * A name an append takes for its stream, unique across the store while it lasts (issue 7): the
 * append is written only if the name is free, or already held by the same stream with the same
 * fingerprint (a retry; the stream's own events decide what it does). Taken and written commit
 * together, and an append that is not written (a conflict) does not keep a name it took. A
 * request's Idempotency-Key claimed with the command that carries it: one transaction instead of a
 * key record written before and a result after.
 */
export interface AppendClaim {
  /** the unique name, e.g. `idempotency:<tenant>:<key>` */
  name: string;
  /** what the name stands for (a request's hash): the same name with another fingerprint is taken */
  fingerprint: string;
  /** how long the name is held; after that it is free again */
  ttlSeconds: number;
}

export interface AppendOptions {
  claim?: AppendClaim;
}

/** The append's claim is held by another stream, or for another fingerprint: nothing was written. */
export class ClaimTakenError extends Error {
  constructor(readonly streamId: string, readonly claim: string) {
    super(`stream ${streamId}: the name ${claim} is held by another append`);
    this.name = 'ClaimTakenError';
  }
}

export class WrongExpectedRevisionError extends Error {
  constructor(readonly streamId: string, readonly expected: ExpectedRevision, readonly actual: bigint | 'no_stream') {
    super(`stream ${streamId}: expected revision ${String(expected)}, actual ${String(actual)}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

export interface SubscriptionFilter { streamPrefixes?: string[]; eventTypes?: string[] }

export interface Subscription {
  stop(): Promise<void>;
  /** Cuts a linger short: someone waits for the subscriber to catch up. */
  hurry?(): void;
}

export interface SubscribeOptions {
  from: Position;
  filter?: SubscriptionFilter;
  /** Called with batches in global order; the subscription waits for each call to finish. */
  onEvents: (events: RecordedEvent[]) => Promise<void>;
  /**
   * Filtered subscriptions of a store that has `reportsSkipped`: every event up to `to` (inclusive)
   * that the filter lets through has been delivered, so a reader may count itself at `to` although
   * the events in between were not sent to it. Called between batches, never during one.
   */
  onSkipped?: (to: Position) => void;
  onError?: (e: unknown) => void;
  batchSize?: number;
  /**
   * At the tail of the store, how long (ms) to let new events gather before reading them, so that a
   * steady stream of small appends is read in a few larger batches; 0 reads at once. Asked before each read.
   */
  linger?: () => number;
}

/** A revision range of one stream (`to` inclusive; the rest of the stream when omitted). */
export interface StreamRange { streamId: string; from: bigint; to?: bigint }

export interface EventStore {
  /** `options.claim`: adapters without `claims` refuse it (AppendClaim). */
  append(streamId: string, events: NewEvent[], expected: ExpectedRevision, options?: AppendOptions): Promise<AppendResult>;
  /** True when `append` takes claims (AppendOptions.claim). */
  readonly claims?: boolean;
  /** Events of one stream from a revision (inclusive), in order. */
  readStream(streamId: string, fromRevision?: bigint, maxCount?: number): Promise<RecordedEvent[]>;
  /**
   * Optional: the events of many streams at once, each from `from` to `to` (both inclusive; the rest
   * of the stream when `to` is omitted), in one round trip. Callers fall back to `readStream` per
   * stream when an adapter does not have it.
   */
  readStreams?(ranges: readonly StreamRange[]): Promise<RecordedEvent[][]>;
  /** Events of every stream after a position (exclusive), in global order. */
  readAll(after: Position, maxCount: number, filter?: SubscriptionFilter): Promise<RecordedEvent[]>;
  /** Catch-up from `from` (exclusive), then live. */
  subscribe(options: SubscribeOptions): Subscription;
  /** Optional: how far a reader at `after` is behind (events, age of the oldest in seconds); ProjectionRunner.lag reads the log otherwise. */
  lagAfter?(after: Position, cap?: number): Promise<{ events: number; seconds: number }>;
  /** The position of the newest event a subscriber can see now. */
  headPosition(): Promise<Position>;
  /**
   * Optional: the newest committed event, whether or not a subscriber can see it yet (PostgreSQL:
   * transactions still running below it hold the watermark back); headPosition where absent.
   */
  committedHead?(): Promise<Position>;
  /** Optional: wakes this process's subscriptions now (an in-process hint after a local append). */
  poke?(): void;
  /** True when a filtered subscription reports how far it has read past the events it filtered out (SubscribeOptions.onSkipped). */
  readonly reportsSkipped?: boolean;
  close(): Promise<void>;
}

export const matchesFilter = (e: { streamId: string; type: string }, f?: SubscriptionFilter): boolean =>
  (!f?.streamPrefixes || f.streamPrefixes.some((p) => e.streamId.startsWith(p))) &&
  (!f?.eventTypes || f.eventTypes.includes(e.type));
