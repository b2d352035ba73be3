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
    {
      provide: LedgerContext,
      inject: [APP_CONFIG, PG_POOL, EVENT_STORE, COMMAND_HANDLER, ProgramStore],
      useFactory: (config: AppConfig, pool: Pool, store: EventStore, handler: CommandHandler, programs: ProgramStore) =>
        new LedgerContext(config, pool, store, handler, programs, new PiiVault(pool)),
    },
    { provide: MembersService, inject: [LedgerContext], useFactory: (ctx: LedgerContext) => new MembersService(ctx) },
    // the ledger's use cases, each given only what it uses
    { provide: ReadMembersService, inject: [LedgerContext, MembersService], useFactory: (ctx: LedgerContext, m: MembersService) => new ReadMembersService(m, ctx, ctx.pool, ctx.programs) },
    { provide: EraseMemberService, inject: [LedgerContext, MembersService], useFactory: (ctx: LedgerContext, m: MembersService) => new EraseMemberService(m, ctx.pool, ctx.vault, (p) => ctx.settle(p, 10_000)) },
    { provide: AdjustPointsService, inject: [LedgerContext, MembersService], useFactory: (ctx: LedgerContext, m: MembersService) => new AdjustPointsService(m, ctx.programs) },
    { provide: ChangeMemberStateService, inject: [MembersService], useFactory: (m: MembersService) => new ChangeMemberStateService(m) },
    { provide: ReferralRewardService, inject: [LedgerContext, MembersService], useFactory: (ctx: LedgerContext, m: MembersService) => new ReferralRewardService(m, ctx.programs) },
    { provide: LiabilityService, inject: [LedgerContext], useFactory: (ctx: LedgerContext) => new LiabilityService(ctx) },
    { provide: FinanceService, inject: [LedgerContext, LiabilityService], useFactory: (ctx: LedgerContext, l: LiabilityService) => new FinanceService(ctx, l) },
    { provide: SweepService, inject: [LedgerContext], useFactory: (ctx: LedgerContext) => new SweepService(ctx) },
    Sweeper,
    { provide: OrdersService, inject: [LedgerContext, MembersService], useFactory: (ctx: LedgerContext, m: MembersService) => new OrdersService(ctx, m, new CampaignBudgets(ctx.pool)) },
    { provide: EntryReviewService, inject: [LedgerContext, MembersService], useFactory: (ctx: LedgerContext, m: MembersService) => new EntryReviewService(ctx, m) },
    { provide: MigrationsService, inject: [LedgerContext, MembersService], useFactory: (ctx: LedgerContext, m: MembersService) => new MigrationsService(ctx, m) },
    {
      provide: SandboxWipeService, inject: [LedgerContext, LiabilityService],
      useFactory: (ctx: LedgerContext, liability: LiabilityService) => new SandboxWipeService(ctx, (tenant) => {
        liability.clear(tenant);
        for (const r of ctx.runners) for (const p of r.projections) (p as { reset?: () => void }).reset?.();
      }),
    },
  ],
  exports: [LedgerContext, MembersService, LiabilityService, OrdersService, FinanceService],
})
export class LedgerModule implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(private readonly ctx: LedgerContext, @Inject(EVENT_STORE) private readonly store: EventStore) {}

  async onApplicationBootstrap(): Promise<void> {
    // one runner for all the ledger's read models: one read, one transaction per batch of events
    this.ctx.runners = [new ProjectionRunner(this.store, this.ctx.pool, LEDGER_PROJECTIONS({ store: this.store, pool: this.ctx.pool, vault: this.ctx.vault }), { onApplied: countPoints })];
    for (const r of this.ctx.runners) await r.start();
  }

  async onApplicationShutdown(): Promise<void> {
    for (const r of this.ctx.runners) await r.stop();
  }
}
