import { randomUUID } from 'node:crypto';
import { KeyedMutex } from '@loyalty/platform';
import { AppendClaim, AppendResult, EventMetadata, EventStore, RecordedEvent, WrongExpectedRevisionError } from './event-store.port';
import { SnapshotPolicy, SnapshotStore, foldStream, foldStreams } from './snapshots';
import { DEFAULT_STATE_BYTES, MIB, StateCache, cacheBytesFromEnv } from './state-cache';

/** What a stream's aggregate needs to be folded: a start state and an evolve step (may mutate and return the state). */
export interface Evolver<S, E extends { type: string; data: unknown }> {
  initialState: () => S;
  evolve: (state: S, event: E) => S;
  /** persisted snapshots of this aggregate (with a SnapshotStore): a cold load folds only the events since the last one */
  snapshot?: SnapshotPolicy;
  /** rough bytes a state holds in memory (caches are bounded in bytes); a flat 1 KiB when absent */
  sizeOf?: (state: S) => number;
}

export interface Decision<E, R> {
  events: (E & { id?: string; metadata?: EventMetadata })[];
  result: R;
  /** a name the append takes with its events (AppendClaim: e.g. the request's Idempotency-Key); ClaimTakenError when held elsewhere */
  claim?: AppendClaim;
}

/** A decision on a stream's state at a revision. */
export type Decide<S, E, R> = (state: S, revision: bigint | 'no_stream') => Decision<E, R> | Promise<Decision<E, R>>;

export interface HandledCommand<S, R> { result: R; state: S; revision: bigint | 'no_stream'; append: AppendResult | null }

interface CacheEntry<S> { state: S; revision: bigint | 'no_stream'; bytes: number }

/** The command handler's state cache budget: `LOYALTY_STATE_CACHE_BYTES`, default 64 MiB (a 512 MiB pod). */
export const stateCacheBytes = (): number => cacheBytesFromEnv('LOYALTY_STATE_CACHE_BYTES', 64 * MIB);

/**
 * The one generic command handler: load (cached state + tail) → decide → append with the
 * expected revision → retry on conflict. The per-stream state cache is keyed by revision, so
 * loading a stream costs the events appended since this process last saw it, not its length; it is
 * bounded in bytes (`cacheBytes`, each state weighed by its evolver's `sizeOf`), least recently used first.
 */
export class CommandHandler {
  private readonly cache: StateCache<CacheEntry<unknown>>;
  private readonly mutex = new KeyedMutex();

  constructor(
    private readonly store: EventStore,
    cacheBytes: number = stateCacheBytes(),
    private readonly maxRetries = 10,
    private readonly snapshots: SnapshotStore | null = null,
  ) {
    this.cache = new StateCache<CacheEntry<unknown>>('command_handler', cacheBytes, (e) => e.bytes);
  }

  /** Reads a stream's current state without deciding anything. */
  async load<S, E extends { type: string; data: unknown }>(streamId: string, evolver: Evolver<S, E>): Promise<{ state: S; revision: bigint | 'no_stream' }> {
    return this.mutex.run(streamId, () => this.loadUnlocked(streamId, evolver));
  }

  async handle<S, E extends { type: string; data: unknown }, R>(
    streamId: string,
    evolver: Evolver<S, E>,
    decide: (state: S, revision: bigint | 'no_stream') => Decision<E, R> | Promise<Decision<E, R>>,
  ): Promise<HandledCommand<S, R>> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.mutex.run(streamId, async () => {
          // Optimistic first try: decide on the cached state without reading the stream's tail. Only a
          // decision that appends can be trusted from it (the append's expected revision proves the
          // state was current, or conflicts and the retry reads the tail); one that appends nothing,
          // or refuses, is decided again on the stream as it is now.
          // counted here once per command (hit: decided without a cold fold; miss: folded from snapshot + tail)
          const cached = attempt === 0 ? (this.cache.get(streamId) as CacheEntry<S> | undefined) : undefined;
          let state: S;
          let revision: bigint | 'no_stream';
          let decision: Decision<E, R> | null = null;
          if (cached) {
            try {
              const d = await decide(cached.state, cached.revision);
              if (d.events.length > 0) decision = d;
            } catch {
              decision = null;
            }
          }
          if (decision && cached) {
            state = cached.state;
            revision = cached.revision;
          } else {
            ({ state, revision } = await this.loadUnlocked(streamId, evolver, attempt > 0));
            decision = await decide(state, revision);
          }
          if (decision.events.length === 0) return { result: decision.result, state, revision, append: null };
          const toAppend = decision.events.map((e) => ({ id: e.id ?? randomUUID(), type: e.type, data: e.data, metadata: e.metadata }));
          const append = await this.store.append(streamId, toAppend, revision, decision.claim && { claim: decision.claim });
          // Fold our own events only when the append wrote them (an idempotent replay re-reads instead).
          const expectedNext = (revision === 'no_stream' ? -1n : revision) + BigInt(decision.events.length);
          if (append.nextRevision === expectedNext) {
            let s = state;
            for (const e of decision.events) s = evolver.evolve(s, { type: e.type, data: e.data } as E);
            this.remember(streamId, evolver, s, append.nextRevision);
            this.snapshotIfDue(streamId, evolver, s, revision, append.nextRevision, toAppend[toAppend.length - 1].id);
            return { result: decision.result, state: s, revision: append.nextRevision, append };
          }
          return this.reread(streamId, evolver, decision.result, append);
        });
      } catch (e) {
        // The cached state is still right for the revision it holds (our events were not folded), so the
        // retry reads only the tail, not the whole stream.
        if (await this.backoffAfterConflict(e, attempt)) continue;
        throw e;
      }
    }
  }

  /**
   * After a wrong expected revision within the retry budget: waits and says to decide again.
   * Exponential backoff with full jitter spreads contenders out; a linear 0..5·n ms window let 20
   * writers collide until retries ran out.
   */
  private async backoffAfterConflict(e: unknown, attempt: number): Promise<boolean> {
    if (!(e instanceof WrongExpectedRevisionError) || attempt >= this.maxRetries) return false;
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * Math.min(200, 4 * 2 ** attempt))));
    return true;
  }

  /** An append that was an idempotent replay (the store had these events already): the stream as it is now. */
  private async reread<S, E extends { type: string; data: unknown }, R>(streamId: string, evolver: Evolver<S, E>, result: R, append: AppendResult): Promise<HandledCommand<S, R>> {
    this.cache.delete(streamId);
    const fresh = await this.loadUnlocked(streamId, evolver, false);
    return { result, state: fresh.state, revision: fresh.revision, append };
  }

  /**
   * A command that folds its own events as it decides (a batch of steps, each deciding on the state
   * the previous ones left): `decide` receives the stream's current state (cached state plus the
   * stream's tail, never an unverified cache) and may evolve it in place with the events it returns.
   * The handler appends them with the expected revision and keeps the evolved state; on any failure
   * (a refused append, a conflict, an error while deciding) the cached state is dropped, since it
   * may hold events that were never written, and a conflict is decided again on a fresh fold.
   */
  async handleFolding<S, E extends { type: string; data: unknown }, R>(streamId: string, evolver: Evolver<S, E>, decide: Decide<S, E, R>): Promise<HandledCommand<S, R>> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.mutex.run(streamId, async () => {
          const { state, revision } = await this.loadUnlocked(streamId, evolver);
          let decision: Decision<E, R>;
          let append: AppendResult | null = null;
          try {
            decision = await decide(state, revision);
            if (decision.events.length === 0) return { result: decision.result, state, revision, append: null };
            const toAppend = decision.events.map((e) => ({ id: e.id ?? randomUUID(), type: e.type, data: e.data, metadata: e.metadata }));
            append = await this.store.append(streamId, toAppend, revision, decision.claim && { claim: decision.claim });
            const expectedNext = (revision === 'no_stream' ? -1n : revision) + BigInt(decision.events.length);
            if (append.nextRevision === expectedNext) {
              this.remember(streamId, evolver, state, append.nextRevision);
              this.snapshotIfDue(streamId, evolver, state, revision, append.nextRevision, toAppend[toAppend.length - 1].id);
              return { result: decision.result, state, revision: append.nextRevision, append };
            }
          } catch (e) {
            this.cache.delete(streamId);
            throw e;
          }
          return this.reread(streamId, evolver, decision.result, append);
        });
      } catch (e) {
        if (await this.backoffAfterConflict(e, attempt)) continue;
        throw e;
      }
    }
  }

  /**
   * The state this process last saw of a stream, without reading the store (possibly behind it):
   * only for facts that never change back once true (e.g. a member exists).
   */
  peek<S>(streamId: string): S | undefined {
    return (this.cache.peek(streamId) as CacheEntry<S> | undefined)?.state;
  }

  /**
   * Remembers a stream this process has just named with a fresh unique id (e.g. a new member) as
   * empty, so the command creating it decides without reading the store. Safe: the append expects
   * no stream, so were the stream to exist after all, the append conflicts and the retry reads it.
   */
  primeNew<S, E extends { type: string; data: unknown }>(streamId: string, evolver: Evolver<S, E>): void {
    if (this.cache.get(streamId) === undefined) this.remember(streamId, evolver, evolver.initialState(), 'no_stream');
  }

  /**
   * Remembers the state of a stream that a statement outside this handler has just created (e.g. a
   * member created with its identity claim in one statement: MembersService), so the commands that
   * follow decide without reading it. Safe as primeNew is: a stale state makes the next append
   * conflict, and the retry reads the stream.
   */
  recordCreated<S, E extends { type: string; data: unknown }>(streamId: string, evolver: Evolver<S, E>, state: S, revision: bigint): void {
    this.remember(streamId, evolver, state, revision);
  }

  /**
   * Loads the streams this process holds no state of, all together: one snapshot query and one
   * read for the lot (foldStreams), so a command run over many cold streams (a sweep's page of
   * members) costs two round trips, not two per stream. A stream cached meanwhile is left as it is;
   * a state that went stale before its command runs is caught by the append's expected revision.
   */
  async warm<S, E extends { type: string; data: unknown }>(streamIds: readonly string[], evolver: Evolver<S, E>): Promise<void> {
    const cold = [...new Set(streamIds)].filter((id) => this.cache.peek(id) === undefined);
    if (!cold.length) return;
    const folded = await foldStreams(this.store, this.snapshots, cold.map((streamId) => ({ streamId })), evolver);
    for (const [streamId, { state, revision }] of folded) {
      if (this.cache.peek(streamId) === undefined) this.remember(streamId, evolver, state, revision);
    }
  }

  /** Forgets cached state (e.g. after erasure or a rebuild). */
  forget(streamId?: string): void {
    if (streamId) this.cache.delete(streamId);
    else this.cache.clear();
  }

  /** After an append that crossed a multiple of the evolver's snapshot interval: store the state (in the background). */
  private snapshotIfDue<S, E extends { type: string; data: unknown }>(
    streamId: string, evolver: Evolver<S, E>, state: S, before: bigint | 'no_stream', after: bigint, lastEventId: string,
  ): void {
    const policy = evolver.snapshot;
    if (!policy || !this.snapshots) return;
    const every = BigInt(policy.every);
    // the append took the stream across a multiple of `every` events (revision r = r + 1 events)
    const countBefore = before === 'no_stream' ? 0n : before + 1n;
    if (countBefore / every === (after + 1n) / every) return;
    this.snapshots.saveSoon(streamId, policy, after, lastEventId, state);
  }

  private async loadUnlocked<S, E extends { type: string; data: unknown }>(streamId: string, evolver: Evolver<S, E>, count = true) {
    const cached = (count ? this.cache.get(streamId) : this.cache.peek(streamId)) as CacheEntry<S> | undefined;
    if (!cached) {
      // cold: the newest snapshot (when the evolver has them) and the events after it; an empty stream
      // is remembered too, so the command that creates it decides without a second read
      const { state, revision } = await foldStream(this.store, this.snapshots, streamId, evolver);
      this.remember(streamId, evolver, state, revision);
      return { state, revision };
    }
    let state = cached.state;
    let revision: bigint | 'no_stream' = cached.revision;
    const tail: RecordedEvent[] = await this.store.readStream(streamId, revision === 'no_stream' ? 0n : revision + 1n);
    for (const e of tail) {
      state = evolver.evolve(state, { type: e.type, data: e.data } as E);
      revision = e.revision;
    }
    this.remember(streamId, evolver, state, revision);
    return { state, revision };
  }

  private remember<S, E extends { type: string; data: unknown }>(streamId: string, evolver: Evolver<S, E>, state: S, revision: bigint | 'no_stream'): void {
    const bytes = evolver.sizeOf ? evolver.sizeOf(state) : DEFAULT_STATE_BYTES;
    this.cache.set(streamId, { state, revision, bytes });
  }
}

/** KeyedMutex lives in @loyalty/platform; named here too for the stream code that takes it with the handler. */
export { KeyedMutex, WrongExpectedRevisionError };
