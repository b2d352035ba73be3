import { Pool } from 'pg';
import { CommandHandler, EventStore, Position, ProjectionRunner, catchUpReadModels } from '@loyalty/event-store';
import { ProgramStore } from '@loyalty/programs';
import { AppConfig } from '@loyalty/platform';
import { PiiVault } from './pii/pii.vault';

/** What the ledger service's use cases share: injected once by the module. */
export class LedgerContext {
  runners: ProjectionRunner[] = [];
  constructor(
    readonly config: AppConfig,
    readonly pool: Pool,
    readonly store: EventStore,
    readonly handler: CommandHandler,
    readonly programs: ProgramStore,
    readonly vault: PiiVault,
  ) {}

  /**
   * Before a read of this service's read models: wait (up to `timeoutMs`) until they reflect every
   * event committed so far, by any process (the house's one read-your-writes policy,
   * @loyalty/event-store read-your-writes.ts).
   */
  catchUp(timeoutMs = 2_000): Promise<void> {
    return catchUpReadModels(this.store, this.runners, timeoutMs);
  }

  /** Read-your-writes: wait until every projection of this service has applied `position`. */
  async settle(position: Position | null | undefined, timeoutMs?: number): Promise<void> {
    if (!position) return;
    this.store.poke?.();
    await Promise.all(this.runners.map((r) => r.waitFor(position, timeoutMs)));
  }
}

export { memberStreamId as memberStream, orderStreamId as orderStream } from '@loyalty/contracts';
