import { Inject, Module, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Pool } from 'pg';
import { CommandHandler, EventStore, ProjectionHost } from '@loyalty/event-store';
import { COMMAND_HANDLER, EVENT_STORE, PG_POOL } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { LedgerReadModels } from './ledger.read-models';
import { LedgerMessages } from './ledger.messages';
import { LiabilityService } from './liability/liability.service';
import { MembersService } from './members/members.service';
import { PiiVault } from './pii/pii.vault';
import { MigrationsMessages } from './migrations-import/migrations.messages';
import { MigrationsService } from './migrations-import/migrations.service';
import { LEDGER_PROJECTIONS } from './rebuild/ledger.projections';
import { SandboxWipeService } from './rebuild/sandbox-wipe.service';
import { AdjustPointsService } from './adjust/adjust-points.service';
import { EraseMemberService } from './erase/erase-member.service';
import { ChangeMemberStateService } from './member-state/change-member-state.service';
import { ReadMembersService } from './read-members/read-members.service';
import { ReferralRewardService } from './referral-reward/referral-reward.service';
import { WipeMessages } from './rebuild/wipe.messages';
import { SweepMessages } from './sweeps/sweep.messages';
import { SweepService } from './sweeps/sweep.service';
import { Sweeper } from './sweeps/sweeper';
import { CampaignBudgets } from './orders/campaign-budgets';
import { EntryReviewService } from './orders/entry-review.service';
import { OrdersMessages } from './orders/orders.messages';
import { OrdersService } from './orders/orders.service';
import { FinanceMessages } from './finance/finance.messages';
import { FinanceService } from './finance/finance.service';
import { countPoints } from './projections/points-metrics';

/** The ledger service: members, identity, ledger, balances, tiers, expiry, liability. */
@Module({
  controllers: [LedgerMessages, SweepMessages, MigrationsMessages, WipeMessages, OrdersMessages, FinanceMessages],
  providers: [
    { provide: PiiVault, inject: [PG_POOL], useFactory: (pool: Pool) => new PiiVault(pool) },
    // a read not given a limit waits at most 2 s for the read models
    { provide: LedgerReadModels, inject: [EVENT_STORE], useFactory: (store: EventStore) => new LedgerReadModels(store, 2_000) },
    {
      provide: MembersService, inject: [PG_POOL, COMMAND_HANDLER, ProgramStore, PiiVault, LedgerReadModels, EVENT_STORE],
      useFactory: (pool: Pool, handler: CommandHandler, programs: ProgramStore, vault: PiiVault, rm: LedgerReadModels, store: EventStore) =>
        new MembersService(pool, handler, programs, vault, rm, store),
    },
    // the ledger's use cases, each given only what it uses
    {
      provide: ReadMembersService, inject: [MembersService, LedgerReadModels, PG_POOL, ProgramStore],
      useFactory: (m: MembersService, rm: LedgerReadModels, pool: Pool, programs: ProgramStore) => new ReadMembersService(m, rm, pool, programs),
    },
    {
      provide: EraseMemberService, inject: [MembersService, PG_POOL, PiiVault, LedgerReadModels],
      useFactory: (m: MembersService, pool: Pool, vault: PiiVault, rm: LedgerReadModels) => new EraseMemberService(m, pool, vault, (p) => rm.settle(p, 10_000)),
    },
    { provide: AdjustPointsService, inject: [MembersService, ProgramStore], useFactory: (m: MembersService, programs: ProgramStore) => new AdjustPointsService(m, programs) },
    { provide: ChangeMemberStateService, inject: [MembersService], useFactory: (m: MembersService) => new ChangeMemberStateService(m) },
    { provide: ReferralRewardService, inject: [MembersService, ProgramStore], useFactory: (m: MembersService, programs: ProgramStore) => new ReferralRewardService(m, programs) },
    {
      provide: LiabilityService, inject: [PG_POOL, ProgramStore, LedgerReadModels],
      useFactory: (pool: Pool, programs: ProgramStore, rm: LedgerReadModels) => new LiabilityService(pool, programs, rm),
    },
    {
      provide: FinanceService, inject: [PG_POOL, ProgramStore, LedgerReadModels, LiabilityService],
      useFactory: (pool: Pool, programs: ProgramStore, rm: LedgerReadModels, l: LiabilityService) => new FinanceService(pool, programs, rm, l),
    },
    {
      provide: SweepService, inject: [PG_POOL, COMMAND_HANDLER, ProgramStore, LedgerReadModels],
      useFactory: (pool: Pool, handler: CommandHandler, programs: ProgramStore, rm: LedgerReadModels) => new SweepService(pool, handler, programs, rm),
    },
    Sweeper,
    {
      provide: OrdersService, inject: [PG_POOL, COMMAND_HANDLER, ProgramStore, MembersService],
      useFactory: (pool: Pool, handler: CommandHandler, programs: ProgramStore, m: MembersService) => new OrdersService(handler, programs, m, new CampaignBudgets(pool)),
    },
    {
      provide: EntryReviewService, inject: [PG_POOL, ProgramStore, LedgerReadModels, MembersService],
      useFactory: (pool: Pool, programs: ProgramStore, rm: LedgerReadModels, m: MembersService) => new EntryReviewService(pool, programs, rm, m),
    },
    {
      provide: MigrationsService, inject: [PG_POOL, ProgramStore, LedgerReadModels, MembersService],
      useFactory: (pool: Pool, programs: ProgramStore, rm: LedgerReadModels, m: MembersService) => new MigrationsService(pool, programs, rm, m),
    },
    {
      provide: SandboxWipeService, inject: [PG_POOL, COMMAND_HANDLER, PiiVault, LedgerReadModels, LiabilityService],
      useFactory: (pool: Pool, handler: CommandHandler, vault: PiiVault, rm: LedgerReadModels, liability: LiabilityService) => new SandboxWipeService(pool, handler, vault, rm, (tenant) => {
        liability.clear(tenant);
        for (const r of rm.runners) for (const p of r.projections) (p as { reset?: () => void }).reset?.();
      }),
    },
  ],
  exports: [LedgerReadModels, MembersService, LiabilityService, OrdersService, FinanceService],
})
export class LedgerModule implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    private readonly readModels: LedgerReadModels,
    private readonly vault: PiiVault,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
  ) {}

  /** The ledger's read models join the process's one runner (ProjectionHost): one read, one transaction per batch of events. */
  onModuleInit(): void {
    ProjectionHost.of(this.store, this.pool).add(LEDGER_PROJECTIONS({ store: this.store, pool: this.pool, vault: this.vault }), { onApplied: countPoints });
  }

  async onApplicationBootstrap(): Promise<void> {
    this.readModels.runners = [await ProjectionHost.of(this.store, this.pool).start()];
  }

  async onApplicationShutdown(): Promise<void> {
    await ProjectionHost.of(this.store, this.pool).stop();
  }
}
