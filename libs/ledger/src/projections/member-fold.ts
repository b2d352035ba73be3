import { STREAM_PREFIX } from '@loyalty/contracts';
import { EventStore, RecordedEvent, SnapshotStore, StateCache, foldCacheBytes, foldStream, foldStreams } from '@loyalty/event-store';
import { MemberAggregate, MemberEvent, memberEvolver } from '@loyalty/domain-member';
import { BalanceFigures, balanceFiguresOf } from '../finance/finance.figures';

/**
 * A projection's private fold of member aggregates, cached per stream by revision: the state after
 * each event costs one evolve, and a cold or out-of-step stream is read up to the event before.
 * Projections that run in one runner (one pass over the same events) share an instance: the first
 * to see an event advances it, the others read the same state (none of them may mutate it).
 */
export class MemberFold {
  /** `before`: the balance figures of the state before the event at `revision` (the finance projection books the difference) */
  private readonly cache: StateCache<{ revision: bigint; state: MemberAggregate; before?: BalanceFigures; cold?: boolean }>;

  /** `cacheBytes`: the budget of the cached states (LOYALTY_FOLD_CACHE_BYTES), least recently used first. */
  constructor(private readonly store: EventStore, cacheBytes: number = foldCacheBytes(), private readonly snapshots: SnapshotStore | null = null) {
    this.cache = new StateCache('ledger_member_fold', cacheBytes, (c) => memberEvolver.sizeOf(c.state));
  }

  /**
   * Before a batch: folds every member stream of `events` that is not in step with the cache, all
   * together (one snapshot query and one read for the lot, instead of two round trips per member
   * inside the batch). A sweep touches more members than the cache holds, and a restart finds it
   * empty: either way each member would otherwise be read alone. Projections sharing the fold may
   * each call it: what the first warmed, the others find in step.
   */
  async warm(events: readonly RecordedEvent[]): Promise<void> {
    const first = new Map<string, bigint>();
    for (const e of events) {
      if (!e.streamId.startsWith(STREAM_PREFIX.member)) continue;
      const seen = first.get(e.streamId);
      if (seen === undefined || e.revision < seen) first.set(e.streamId, e.revision);
    }
    const cold: { streamId: string; upTo: bigint }[] = [];
    for (const [streamId, revision] of first) {
      const hit = this.cache.peek(streamId);
      if (!hit || hit.revision !== revision - 1n) cold.push({ streamId, upTo: revision - 1n });
    }
    if (!cold.length) return;
    const folded = await foldStreams<MemberAggregate, MemberEvent>(this.store, this.snapshots, cold, memberEvolver);
    for (const { streamId, upTo } of cold) {
      const f = folded.get(streamId);
      if (f) this.cache.set(streamId, { revision: upTo, state: f.state, cold: true });
    }
  }

  /** The member's state after `event` (and the balance figures before it); `cold` when it had to be rebuilt from the stream. */
  async advance(event: RecordedEvent): Promise<{ state: MemberAggregate; cold: boolean; before: BalanceFigures }> {
    const hit = this.cache.get(event.streamId);
    let cached: { revision: bigint; state: MemberAggregate } | undefined = hit;
    // another projection of the same runner already advanced the fold to this event
    if (hit && hit.revision === event.revision && hit.before) return { state: hit.state, cold: false, before: hit.before };
    let cold = !cached || cached.revision !== event.revision - 1n;
    if (!cached || cold) {
      // the newest snapshot at or before the previous event, and the events after it
      const { state } = await foldStream<MemberAggregate, MemberEvent>(this.store, this.snapshots, event.streamId, memberEvolver, event.revision - 1n);
      cached = { revision: event.revision - 1n, state };
    } else if (hit?.cold) {
      cold = true; // folded from the stream by warm(), for this batch
    }
    const before = balanceFiguresOf(cached.state);
    const state = memberEvolver.evolve(cached.state, { type: event.type, data: event.data } as MemberEvent);
    this.cache.set(event.streamId, { revision: event.revision, state, before });
    return { state, cold, before };
  }

  reset(): void { this.cache.clear(); }
}
