import type { Pool } from 'pg';
import { EventStore, RecordedEvent, SnapshotStore, StreamFold, foldCacheBytes, sharedFold } from '@loyalty/event-store';
import { MEMBER_FOLD, MemberAggregate, MemberEvent, MemberHead } from '@loyalty/domain-member';
import { BalanceFigures, balanceFiguresOf } from '../finance/finance.figures';

/**
 * The ledger projections' fold of member aggregates (a StreamFold of member streams), cached per
 * stream by revision: the state after each event costs one evolve, and a cold or out-of-step
 * stream is read up to the event before. The projections of one runner share it (`shared`: the
 * process's one member fold, which the webhook service's read model uses too when it runs in the
 * same process): the first to see an event advances it, the others read the same state (none of
 * them may mutate it).
 */
export class MemberFold {
  private readonly fold: StreamFold<MemberAggregate, MemberEvent, MemberHead>;

  /** A fold of its own; `cacheBytes`: the budget of the cached states (LOYALTY_FOLD_CACHE_BYTES), least recently used first. */
  constructor(store: EventStore, cacheBytes: number = foldCacheBytes(), snapshots: SnapshotStore | null = null, fold?: StreamFold<MemberAggregate, MemberEvent, MemberHead>) {
    this.fold = fold ?? new StreamFold(store, MEMBER_FOLD.prefix, MEMBER_FOLD.evolver, MEMBER_FOLD.head, snapshots, 'ledger_member_fold', cacheBytes);
  }

  /** Over the process's shared member fold (see ProjectionHost). */
  static shared(store: EventStore, pool: Pool): MemberFold {
    return new MemberFold(store, undefined, null, sharedFold(store, pool, MEMBER_FOLD));
  }

  /**
   * Before a batch: folds every member stream of `events` that is not in step with the cache, all
   * together (one snapshot query and one read for the lot, instead of two round trips per member
   * inside the batch). A sweep touches more members than the cache holds, and a restart finds it
   * empty: either way each member would otherwise be read alone.
   */
  warm(events: readonly RecordedEvent[]): Promise<void> { return this.fold.warm(events); }

  /** The member's state after `event` (and the balance figures before it); `cold` when it had to be rebuilt from the stream. */
  async advance(event: RecordedEvent): Promise<{ state: MemberAggregate; cold: boolean; before: BalanceFigures }> {
    const { state, cold, before } = await this.fold.advance(event);
    return { state, cold, before: balanceFiguresOf(before) };
  }

  reset(): void { this.fold.reset(); }
}
