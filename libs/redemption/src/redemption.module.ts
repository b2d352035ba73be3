import { Inject, Logger, Module, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Pool } from 'pg';
import { CommandHandler, EventStore, ProjectionRunner } from '@loyalty/event-store';
import { CommandBus } from '@loyalty/messaging';
import { AppConfig, APP_CONFIG, COMMAND_BUS, COMMAND_HANDLER, EVENT_STORE, PG_POOL } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { ExpirySweeper } from './expiry/expiry.sweeper';
import { RedemptionMessages } from './redemption.messages';
import { ReservationsService } from './reservations/reservations.service';
import { SpendingContext } from './spending.context';
import { VouchersService } from './vouchers/vouchers.service';

/** The redemption service: vouchers, direct redemptions, quotes, reservations and their expiry. */
@Module({
  controllers: [RedemptionMessages],
  providers: [
    {
      provide: SpendingContext,
      inject: [APP_CONFIG, PG_POOL, EVENT_STORE, COMMAND_HANDLER, ProgramStore, COMMAND_BUS],
      useFactory: (config: AppConfig, pool: Pool, store: EventStore, handler: CommandHandler, programs: ProgramStore, bus: CommandBus) =>
        new SpendingContext(config, pool, store, handler, programs, bus),
    },
    { provide: VouchersService, inject: [SpendingContext], useFactory: (ctx: SpendingContext) => new VouchersService(ctx) },
    { provide: ReservationsService, inject: [SpendingContext], useFactory: (ctx: SpendingContext) => new ReservationsService(ctx) },
    { provide: ExpirySweeper, inject: [SpendingContext], useFactory: (ctx: SpendingContext) => new ExpirySweeper(ctx) },
  ],
  exports: [SpendingContext, VouchersService, ReservationsService, ExpirySweeper],
})
export class RedemptionModule implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('RedemptionModule');
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<unknown> | null = null;

  constructor(private readonly ctx: SpendingContext, private readonly sweeper: ExpirySweeper, @Inject(EVENT_STORE) private readonly store: EventStore) {}

  async onApplicationBootstrap(): Promise<void> {
    // the runner applies every writer's events (erasure, order events confirming a reservation);
    // this service's commands also apply their own at once (SpendingContext.project)
    this.ctx.runner = new ProjectionRunner(this.store, this.ctx.pool, this.ctx.projection);
    await this.ctx.runner.start();
    // the periodic sweep of every tenant; a sandbox clock move also sweeps at once (admin plane)
    this.timer = setInterval(() => {
      if (this.sweeping) return;
      this.sweeping = this.sweeper.sweepAll()
        .catch((e: unknown) => this.log.warn(`expiry sweep failed: ${(e as Error).message}`))
        .finally(() => { this.sweeping = null; });
    }, this.ctx.config.sweepIntervalMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
    await this.ctx.runner?.stop();
  }
}
