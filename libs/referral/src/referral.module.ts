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
import { ReferralContext } from './referral.context';
import { ReferralMessages } from './referral.messages';
import { ReviewReferralService } from './review-referral/review-referral.service';

/** The referral service: referral codes, applications, fraud holds, qualification, rewards. */
@Module({
  controllers: [ReferralMessages],
  providers: [
    {
      provide: ReferralContext,
      inject: [APP_CONFIG, PG_POOL, EVENT_STORE, COMMAND_HANDLER, ProgramStore, COMMAND_BUS],
      useFactory: (config: AppConfig, pool: Pool, store: EventStore, handler: CommandHandler, programs: ProgramStore, bus: CommandBus) =>
        new ReferralContext(config, pool, store, handler, programs, bus),
    },
    { provide: QualificationService, inject: [ReferralContext], useFactory: (ctx: ReferralContext) => new QualificationService(ctx) },
    {
      provide: CreateReferralService, inject: [ReferralContext, QualificationService],
      useFactory: (ctx: ReferralContext, q: QualificationService) => new CreateReferralService(ctx, q),
    },
    { provide: ReferralDetailsService, inject: [ReferralContext], useFactory: (ctx: ReferralContext) => new ReferralDetailsService(ctx) },
    {
      provide: ReviewReferralService, inject: [ReferralContext, QualificationService],
      useFactory: (ctx: ReferralContext, q: QualificationService) => new ReviewReferralService(ctx, q),
    },
  ],
  exports: [ReferralContext, QualificationService],
})
export class ReferralModule implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<unknown> | null = null;
  private stopped = false;

  constructor(private readonly ctx: ReferralContext, private readonly qualification: QualificationService, @Inject(EVENT_STORE) private readonly store: EventStore) {}

  async onApplicationBootstrap(): Promise<void> {
    const projection = new ReferralProjection((tx, seen) => this.qualification.onOrderPaid(tx, seen));
    this.ctx.runner = new ProjectionRunner(this.store, this.ctx.pool, projection);
    await this.ctx.runner.start();
    // rewards left `qualified` (a crash, a ledger refusal) are retried; 0 turns the sweep off
    if (this.ctx.config.sweepIntervalMs > 0) this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.sweeping = this.qualification.sweep().catch(() => undefined).finally(() => { this.sweeping = null; this.schedule(); });
    }, this.ctx.config.sweepIntervalMs);
    this.timer.unref?.();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.sweeping;
    await this.ctx.runner?.stop();
  }
}
