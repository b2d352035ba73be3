import { Inject, Logger, Module, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Pool } from 'pg';
import { EventStore, ProjectionRunner, SnapshotStore } from '@loyalty/event-store';
import { AppConfig, APP_CONFIG, EVENT_STORE, PG_POOL } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { DeliveryQueue } from './delivery/delivery.queue';
import { DEFAULT_BREAKER, DeliveryWorker } from './delivery/delivery.worker';
import { HttpSender } from './delivery/http-sender';
import { EndpointsRepository } from './endpoints/endpoints.repository';
import { EndpointsService } from './endpoints/endpoints.service';
import { ExpiringSoonSweeper } from './expiring/expiring-soon.sweeper';
import { WebhookEventsProjection } from './events/webhook-events.projection';
import { programInfoSource } from './events/program-info';
import { WebhookMessages } from './webhook.messages';

/** What the webhook service's parts share, built once by the module. */
export class WebhookContext {
  readonly endpoints: EndpointsRepository;
  readonly queue: DeliveryQueue;
  readonly sender = new HttpSender();
  readonly worker: DeliveryWorker;
  readonly projection: WebhookEventsProjection;
  readonly sweeper: ExpiringSoonSweeper;
  readonly service: EndpointsService;
  runner: ProjectionRunner | null = null;

  constructor(readonly config: AppConfig, readonly pool: Pool, readonly store: EventStore, readonly programs: ProgramStore) {
    this.endpoints = new EndpointsRepository(pool);
    this.queue = new DeliveryQueue(pool);
    this.worker = new DeliveryWorker(this.queue, this.sender, {
      concurrency: 8,
      pollIntervalMs: 250,
      timeoutMs: config.webhookTimeoutMs,
      leaseMs: Math.max(60_000, config.webhookTimeoutMs * 3),
      retrySchedule: config.webhookRetrySchedule,
      disableAfter: config.webhookDisableAfter,
      // an open breaker half-opens after about the first retry step (5 s by default, 1-30 s), so
      // pausing a dead receiver never postpones its retries (or its disabling) by much more
      breaker: { ...DEFAULT_BREAKER, resetTimeoutMs: Math.min(30_000, Math.max(1_000, (config.webhookRetrySchedule[0] ?? 30) * 1000)) },
    });
    const info = programInfoSource(programs);
    const now = (tenant: string) => programs.now(tenant);
    this.projection = new WebhookEventsProjection(store, this.endpoints, this.queue, info, () => this.worker.wakeSoon(), new SnapshotStore(pool));
    this.sweeper = new ExpiringSoonSweeper(pool, this.endpoints, this.queue, info, now, () => this.worker.wakeSoon());
    this.service = new EndpointsService(this.endpoints, this.queue, this.sender, { timeoutMs: config.webhookTimeoutMs, now });
  }
}

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
export class WebhookModule implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger('WebhookModule');
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<unknown> | null = null;

  constructor(private readonly ctx: WebhookContext, @Inject(EVENT_STORE) private readonly store: EventStore) {}

  async onApplicationBootstrap(): Promise<void> {
    this.ctx.runner = new ProjectionRunner(this.store, this.ctx.pool, this.ctx.projection);
    await this.ctx.runner.start();
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
    await this.ctx.runner?.stop();
    await this.ctx.worker.stop();
    this.ctx.sender.close();
  }
}
