import { Inject, Logger, Module, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Pool } from 'pg';
import { EventStore, ProjectionHost } from '@loyalty/event-store';
import { AppConfig, APP_CONFIG, EVENT_STORE, PG_POOL } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { EndpointsService } from './endpoints/endpoints.service';
import { ExpiringSoonSweeper } from './expiring/expiring-soon.sweeper';
import { WebhookContext } from './webhook.context';
import { WebhookMessages } from './webhook.messages';

/**
 * The webhook service: endpoints, the event-store subscription that turns member events into
 * deliveries, the durable delivery queue and its worker (signing, retries, circuit breakers,
 * auto-disable), and the expiring-soon sweep. Runs in the webhook app or standalone.
 */
@Module({
  controllers: [WebhookMessages],
  providers: [
    {
      provide: WebhookContext,
      inject: [APP_CONFIG, PG_POOL, EVENT_STORE, ProgramStore],
      useFactory: (config: AppConfig, pool: Pool, store: EventStore, programs: ProgramStore) => new WebhookContext(config, pool, store, programs),
    },
    { provide: EndpointsService, inject: [WebhookContext], useFactory: (ctx: WebhookContext) => ctx.service },
    { provide: ExpiringSoonSweeper, inject: [WebhookContext], useFactory: (ctx: WebhookContext) => ctx.sweeper },
  ],
  exports: [WebhookContext, EndpointsService],
})
export class WebhookModule implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger('WebhookModule');
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<unknown> | null = null;

  constructor(private readonly ctx: WebhookContext, @Inject(EVENT_STORE) private readonly store: EventStore) {}

  /** The read model joins the process's one runner (ProjectionHost; standalone: with the ledger's, sharing their member fold). */
  onModuleInit(): void {
    ProjectionHost.of(this.store, this.ctx.pool).add([this.ctx.projection]);
  }

  async onApplicationBootstrap(): Promise<void> {
    this.ctx.runner = await ProjectionHost.of(this.store, this.ctx.pool).start();
    this.ctx.worker.start();
    if (this.ctx.config.sweepIntervalMs <= 0) return; // 0 turns the periodic sweep off (the sweep pattern still works)
    this.timer = setInterval(() => {
      if (this.sweeping) return;
      this.sweeping = this.ctx.sweeper.sweepAll()
        .catch((e: unknown) => this.log.warn(`expiring-soon sweep failed: ${(e as Error).message}`))
        .finally(() => { this.sweeping = null; });
    }, this.ctx.config.sweepIntervalMs);
    this.timer.unref();
  }

  /** Before the pool closes: stop subscribing, sweeping and claiming; let sends in flight finish. */
  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
    await ProjectionHost.of(this.store, this.ctx.pool).stop();
    await this.ctx.worker.stop();
    this.ctx.sender.close();
  }
}
