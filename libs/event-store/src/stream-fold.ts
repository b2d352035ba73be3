import type { EventStore, RecordedEvent } from './event-store.port';
import { FoldableEvolver, SnapshotStore, foldStream, foldStreams } from './snapshots';
import { DEFAULT_STATE_BYTES, StateCache, foldCacheBytes } from './state-cache';

/** What a StreamFold needs of an evolver: the fold, and the weight of a state for the cache's byte budget. */
export type FoldEvolver<S, E> = FoldableEvolver<S, E> & { sizeOf?: (state: S) => number };

/**
 * Projections' fold of one kind of stream, cached per stream by revision: the state after each
 * event costs one evolve, and a cold or out-of-step stream is read up to the event before. The
 * projections that run in one runner (one pass over the same events, event by event) share an
 * instance: the first to see an event advances it, the others read the same state, and what the
 * state looked like just before the event (`head`, a few figures read off it) is kept beside it.
 * Nobody may mutate the state it hands out.
 */
export class StreamFold<S, E extends { type: string; data: unknown }, H> {
  private readonly cache: StateCache<{ revision: bigint; state: S; before?: H; cold?: boolean }>;

  /**
   * `prefix`: the streams it folds; `head`: what a reader needs of the state before an event;
   * `cacheBytes`: the budget of the cached states (LOYALTY_FOLD_CACHE_BYTES), least recently used first.
   */
  constructor(
    private readonly store: EventStore,
    private readonly prefix: string,
    private readonly evolver: FoldEvolver<S, E>,
    private readonly head: (state: S) => H,
    private readonly snapshots: SnapshotStore | null = null,
    name = 'stream_fold',
    cacheBytes: number = foldCacheBytes(),
  ) {
    const sizeOf = evolver.sizeOf;
    this.cache = new StateCache(name, cacheBytes, (c) => (sizeOf ? sizeOf(c.state) : DEFAULT_STATE_BYTES));
  }

  /** Whether this fold folds `streamId`. */
  folds(streamId: string): boolean { return streamId.startsWith(this.prefix); }

  /**
   * Before a batch: folds every stream of `events` that is not in step with the cache, all together
   * (one snapshot query and one read for the lot, instead of two round trips per stream inside the
   * batch). Readers sharing the fold may each call it: what the first warmed, the others find in step.
   */
  async warm(events: readonly RecordedEvent[]): Promise<void> {
    const first = new Map<string, bigint>();
    for (const e of events) {
      if (!this.folds(e.streamId)) continue;
      const seen = first.get(e.streamId);
      if (seen === undefined || e.revision < seen) first.set(e.streamId, e.revision);
    }
    const cold: { streamId: string; upTo: bigint }[] = [];
    for (const [streamId, revision] of first) {
      const hit = this.cache.peek(streamId);
      // in step, or already advanced to this event by another reader of the batch
      if (!hit || (hit.revision !== revision - 1n && !(hit.revision === revision && hit.before))) cold.push({ streamId, upTo: revision - 1n });
    }
    if (!cold.length) return;
    const folded = await foldStreams<S, E>(this.store, this.snapshots, cold, this.evolver);
    for (const { streamId, upTo } of cold) {
      const f = folded.get(streamId);
      if (f) this.cache.set(streamId, { revision: upTo, state: f.state, cold: true });
    }
  }

  /** The stream's state after `event`, what it was before (`before`); `cold` when this call had to rebuild it from the stream. */
  async advance(event: RecordedEvent): Promise<{ state: S; cold: boolean; before: H }> {
    const hit = this.cache.get(event.streamId);
    let cached: { revision: bigint; state: S } | undefined = hit;
    // another reader of the same runner already advanced the fold to this event (it was told whether that was cold)
    if (hit && hit.revision === event.revision && hit.before !== undefined) return { state: hit.state, cold: false, before: hit.before };
    let cold = !cached || cached.revision !== event.revision - 1n;
    if (!cached || cold) {
      // the newest snapshot at or before the previous event, and the events after it
      const { state } = await foldStream<S, E>(this.store, this.snapshots, event.streamId, this.evolver, event.revision - 1n);
      cached = { revision: event.revision - 1n, state };
    } else if (hit?.cold) {
      cold = true; // folded from the stream by warm(), for this batch
    }
    const before = this.head(cached.state);
    const state = this.evolver.evolve(cached.state, { type: event.type, data: event.data } as E);
    this.cache.set(event.streamId, { revision: event.revision, state, before });
    return { state, cold, before };
  }

  reset(): void { this.cache.clear(); }
}
