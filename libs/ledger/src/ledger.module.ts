import { Inject, Module, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Pool } from 'pg';
import { CommandHandler, EventStore, ProjectionRunner } from '@loyalty/event-store';
import { AppConfig, APP_CONFIG, COMMAND_HANDLER, EVENT_STORE, PG_POOL } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { LedgerContext } from './ledger.context';
import { LedgerMessages } from './ledger.messages';
import { LiabilityService } from './liability/liability.service';
import { MembersService } from './members/members.service';
import { PiiVault } from './pii/pii.vault';
import { MembersProjection } from './projections/members.projection';

/** The ledger service: members, identity, ledger, balances, tiers, expiry, liability. */
@Module({
  controllers: [LedgerMessages],
  providers: [
    {
      provide: LedgerContext,
      inject: [APP_CONFIG, PG_POOL, EVENT_STORE, COMMAND_HANDLER, ProgramStore],
      useFactory: (config: AppConfig, pool: Pool, store: EventStore, handler: CommandHandler, programs: ProgramStore) =>
        new LedgerContext(config, pool, store, handler, programs, new PiiVault(pool)),
    },
    { provide: MembersService, inject: [LedgerContext], useFactory: (ctx: LedgerContext) => new MembersService(ctx) },
    { provide: LiabilityService, inject: [LedgerContext], useFactory: (ctx: LedgerContext) => new LiabilityService(ctx) },
  ],
  exports: [LedgerContext, MembersService, LiabilityService],
})
export class LedgerModule implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(private readonly ctx: LedgerContext, @Inject(EVENT_STORE) private readonly store: EventStore) {}

  async onApplicationBootstrap(): Promise<void> {
    this.ctx.runners = [new ProjectionRunner(this.store, this.ctx.pool, new MembersProjection(this.store, this.ctx.vault))];
    for (const r of this.ctx.runners) await r.start();
  }

  async onApplicationShutdown(): Promise<void> {
    for (const r of this.ctx.runners) await r.stop();
  }
}
