import { EventStore, RecordedEvent, SnapshotStore, foldStream } from '@loyalty/event-store';
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
  private readonly cache = new Map<string, { revision: bigint; state: MemberAggregate; before: BalanceFigures }>();

  constructor(private readonly store: EventStore, private readonly maxStreams = 20_000, private readonly snapshots: SnapshotStore | null = null) {}

  /** The member's state after `event` (and the balance figures before it); `cold` when it had to be rebuilt from the stream. */
  async advance(event: RecordedEvent): Promise<{ state: MemberAggregate; cold: boolean; before: BalanceFigures }> {
    let cached: { revision: bigint; state: MemberAggregate } | undefined = this.cache.get(event.streamId);
    // another projection of the same runner already advanced the fold to this event
    if (cached && cached.revision === event.revision) return { state: cached.state, cold: false, before: this.cache.get(event.streamId)!.before };
    const cold = !cached || cached.revision !== event.revision - 1n;
    if (!cached || cold) {
      // the newest snapshot at or before the previous event, and the events after it
      const { state } = await foldStream<MemberAggregate, MemberEvent>(this.store, this.snapshots, event.streamId, memberEvolver, event.revision - 1n);
      cached = { revision: event.revision - 1n, state };
    }
    const before = balanceFiguresOf(cached.state);
    const state = memberEvolver.evolve(cached.state, { type: event.type, data: event.data } as MemberEvent);
    this.cache.delete(event.streamId);
    this.cache.set(event.streamId, { revision: event.revision, state, before });
    if (this.cache.size > this.maxStreams) this.cache.delete(this.cache.keys().next().value!);
    return { state, cold, before };
  }

  reset(): void { this.cache.clear(); }
}
