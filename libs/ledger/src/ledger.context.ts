import { Pool } from 'pg';
import { CommandHandler, EventStore, ProjectionRunner } from '@loyalty/event-store';
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

  /** Read-your-writes: wait until every projection of this service has applied `position`. */
  async settle(position: import('@loyalty/event-store').Position | null | undefined): Promise<void> {
    if (!position) return;
    (this.store as { poke?: () => void }).poke?.();
    await Promise.all(this.runners.map((r) => r.waitFor(position)));
  }
}

export { memberStreamId as memberStream, orderStreamId as orderStream } from '@loyalty/contracts';
export const parseMemberStream = (streamId: string): { tenant: string; memberId: string } | null => {
  const m = /^member-(.+)-(M-[0-9A-Z]{26})$/.exec(streamId);
  return m ? { tenant: m[1], memberId: m[2] } : null;
};
