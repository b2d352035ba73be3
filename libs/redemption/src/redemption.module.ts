import { Inject, Logger, Module, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Pool } from 'pg';
import { CommandHandler, EventStore } from '@loyalty/event-store';
import { CommandBus } from '@loyalty/messaging';
import { AppConfig, APP_CONFIG, COMMAND_BUS, COMMAND_HANDLER, EVENT_STORE, PG_POOL } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { ExpirySweeper } from './expiry/expiry.sweeper';
import { RedemptionMessages } from './redemption.messages';
import { ReservationsService } from './reservations/reservations.service';
import { MemberSpending } from './member-spending';
import { RedemptionRows } from './projections/redemption-rows';
import { VouchersService } from './vouchers/vouchers.service';

/** The redemption service: vouchers, direct redemptions, quotes, reservations and their expiry. */
@Module({
  controllers: [RedemptionMessages],
  providers: [
    { provide: RedemptionRows, inject: [PG_POOL, EVENT_STORE], useFactory: (pool: Pool, store: EventStore) => new RedemptionRows(pool, store) },
    { provide: MemberSpending, inject: [COMMAND_HANDLER], useFactory: (handler: CommandHandler) => new MemberSpending(handler) },
    // the use cases, each given only what it uses
    {
      provide: VouchersService, inject: [MemberSpending, RedemptionRows, ProgramStore, COMMAND_BUS, PG_POOL],
      useFactory: (m: MemberSpending, rows: RedemptionRows, programs: ProgramStore, bus: CommandBus, pool: Pool) => new VouchersService(m, rows, programs, bus, pool),
    },
    {
      provide: ReservationsService, inject: [MemberSpending, RedemptionRows, ProgramStore, COMMAND_BUS],
      useFactory: (m: MemberSpending, rows: RedemptionRows, programs: ProgramStore, bus: CommandBus) => new ReservationsService(m, rows, programs, bus),
    },
    {
      provide: ExpirySweeper, inject: [MemberSpending, ProgramStore, PG_POOL, RedemptionRows],
      useFactory: (m: MemberSpending, programs: ProgramStore, pool: Pool, rows: RedemptionRows) => new ExpirySweeper(m, programs, pool, rows),
    },
  ],
  exports: [RedemptionRows, MemberSpending, VouchersService, ReservationsService, ExpirySweeper],
})
export class RedemptionModule implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('RedemptionModule');
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<unknown> | null = null;

  constructor(private readonly rows: RedemptionRows, private readonly sweeper: ExpirySweeper, @Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async onApplicationBootstrap(): Promise<void> {
    // the runner alone writes the rows, from every writer's events (this service's commands, erasure,
    // order events confirming a reservation); look-ups catch it up on a miss (RedemptionRows)
    await this.rows.start();
    // the periodic sweep of every tenant; a sandbox clock move also sweeps at once (admin plane)
    this.timer = setInterval(() => {
      if (this.sweeping) return;
      this.sweeping = this.sweeper.sweepAll()
        .catch((e: unknown) => this.log.warn(`expiry sweep failed: ${(e as Error).message}`))
        .finally(() => { this.sweeping = null; });
    }, this.config.sweepIntervalMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
    await this.rows.stop();
  }
}
