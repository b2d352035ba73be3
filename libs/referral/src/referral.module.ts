import { Inject, Module, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Pool } from 'pg';
import { CommandHandler, EventStore, ProjectionRunner } from '@loyalty/event-store';
import { CommandBus } from '@loyalty/messaging';
import { AppConfig, APP_CONFIG, COMMAND_BUS, COMMAND_HANDLER, EVENT_STORE, PG_POOL } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { CreateReferralService } from './create-referral/create-referral.service';
import { ReferralProjection } from './projections/referral.projection';
import { QualificationService } from './qualification/qualification.service';
import { ReferralDetailsService } from './referral-details/referral-details.service';
import { ReferralDecisions, ReferralReadModels } from './referral-decisions';
import { ReferralMessages } from './referral.messages';
import { ReviewReferralService } from './review-referral/review-referral.service';

/** The referral service: referral codes, applications, fraud holds, qualification, rewards. */
@Module({
  controllers: [ReferralMessages],
  providers: [
    { provide: ReferralReadModels, inject: [EVENT_STORE], useFactory: (store: EventStore) => new ReferralReadModels(store) },
    { provide: ReferralDecisions, inject: [COMMAND_HANDLER, PG_POOL], useFactory: (handler: CommandHandler, pool: Pool) => new ReferralDecisions(handler, pool) },
    // the use cases, each given only what it uses
    {
      provide: QualificationService, inject: [ReferralDecisions, ProgramStore, COMMAND_BUS, PG_POOL],
      useFactory: (d: ReferralDecisions, programs: ProgramStore, bus: CommandBus, pool: Pool) => new QualificationService(d, programs, bus, pool),
    },
    {
      provide: CreateReferralService, inject: [ReferralDecisions, ReferralReadModels, ProgramStore, COMMAND_BUS, PG_POOL, QualificationService],
      useFactory: (d: ReferralDecisions, rm: ReferralReadModels, programs: ProgramStore, bus: CommandBus, pool: Pool, q: QualificationService) =>
        new CreateReferralService(d, rm, programs, bus, pool, q),
    },
    {
      provide: ReferralDetailsService, inject: [ReferralDecisions, ProgramStore, COMMAND_BUS, PG_POOL],
      useFactory: (d: ReferralDecisions, programs: ProgramStore, bus: CommandBus, pool: Pool) => new ReferralDetailsService(d, programs, bus, pool),
    },
    {
      provide: ReviewReferralService, inject: [ReferralDecisions, ProgramStore, PG_POOL, QualificationService],
      useFactory: (d: ReferralDecisions, programs: ProgramStore, pool: Pool, q: QualificationService) => new ReviewReferralService(d, programs, pool, q),
    },
  ],
  exports: [ReferralReadModels, ReferralDecisions, QualificationService],
})
export class ReferralModule implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<unknown> | null = null;
  private stopped = false;

  constructor(
    private readonly readModels: ReferralReadModels,
    private readonly qualification: QualificationService,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const projection = new ReferralProjection((tx, seen) => this.qualification.onOrderPaid(tx, seen));
    const runner = new ProjectionRunner(this.store, this.pool, projection);
    this.readModels.runners = [runner];
    await runner.start();
    // rewards left `qualified` (a crash, a ledger refusal) are retried; 0 turns the sweep off
    if (this.config.sweepIntervalMs > 0) this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.sweeping = this.qualification.sweep().catch(() => undefined).finally(() => { this.sweeping = null; this.schedule(); });
    }, this.config.sweepIntervalMs);
    this.timer.unref?.();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.sweeping;
    for (const r of this.readModels.runners) await r.stop();
  }
}
