import { Pool } from 'pg';
import { EventStore, Projection } from '@loyalty/event-store';
import { PiiVault } from '../pii/pii.vault';
import { MembersProjection } from '../projections/members.projection';
import { DueItemsProjection } from '../sweeps/due-items.projection';
import { MigrationEntriesProjection } from '../migrations-import/migration-entries.projection';
import { EntryIndexProjection } from '../orders/entry-index.projection';
import { MemberFold } from '../projections/member-fold';
import { FinanceProjection } from '../finance/finance.projection';

/**
 * What every service's projection registry is given (the rebuild tool and the service modules).
 * Convention: each service lib exports `<SERVICE>_PROJECTIONS: (deps: ProjectionDeps) => Projection[]`
 * from its index, so `npm run rebuild` finds them.
 */
export interface ProjectionDeps {
  pool: Pool;
  store: EventStore;
  /** the ledger shares its vault so an erasure's key destruction is seen at once */
  vault?: PiiVault;
}

/** Every read model of the ledger service, in the order its runners start. */
export const LEDGER_PROJECTIONS = (deps: ProjectionDeps): Projection[] => {
  // the member read models share one fold of each member stream (they run in one runner; with the
  // webhook service's read model too, when it runs in the same process: see ProjectionHost)
  const fold = MemberFold.shared(deps.store, deps.pool);
  return [
    new MembersProjection(deps.store, deps.vault ?? new PiiVault(deps.pool), fold),
    new DueItemsProjection(deps.store, fold),
    new MigrationEntriesProjection(),
    new EntryIndexProjection(),
    // closing the books (decisions §9a): liability movements by programme time, and every entry with its status
    new FinanceProjection(deps.store, fold),
  ];
};
