import { Pool } from 'pg';
import { CommandHandler, EventStore, Position, ProjectionRunner } from '@loyalty/event-store';
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
   * event committed so far, by any process. Writes do not wait for the read models; the few reads
   * that use them catch up instead, so read-your-writes holds where it is needed and costs nothing
   * elsewhere.
   */
  async catchUp(timeoutMs = 2_000): Promise<void> {
    if (!this.runners.length) return;
    // PostgreSQL: the newest committed event, even one still above the subscribers' watermark
    const store = this.store as EventStore & { committedHead?: () => Promise<Position> };
    const head = store.committedHead ? await store.committedHead() : await store.headPosition();
    (this.store as { poke?: () => void }).poke?.();
    await Promise.all(this.runners.map((r) => r.waitFor(head, timeoutMs))).catch(() => undefined);
  }

  /** Read-your-writes: wait until every projection of this service has applied `position`. */
  async settle(position: Position | null | undefined, timeoutMs?: number): Promise<void> {
    if (!position) return;
    (this.store as { poke?: () => void }).poke?.();
    await Promise.all(this.runners.map((r) => r.waitFor(position, timeoutMs)));
  }
}

export { memberStreamId as memberStream, orderStreamId as orderStream } from '@loyalty/contracts';
export const parseMemberStream = (streamId: string): { tenant: string; memberId: string } | null => {
  const m = /^member-(.+)-(M-[0-9A-Z]{26})$/.exec(streamId);
  return m ? { tenant: m[1], memberId: m[2] } : null;
};
