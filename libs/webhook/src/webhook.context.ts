import { Pool } from 'pg';
import { EventStore, ProjectionRunner, sharedFold } from '@loyalty/event-store';
import { MEMBER_FOLD } from '@loyalty/domain-member';
import { AppConfig } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { DeliveryQueue } from './delivery/delivery.queue';
import { DEFAULT_BREAKER, DeliveryWorker } from './delivery/delivery.worker';
import { HttpSender } from './delivery/http-sender';
import { EndpointsRepository } from './endpoints/endpoints.repository';
import { EndpointsService } from './endpoints/endpoints.service';
import { ExpiringSoonSweeper } from './expiring/expiring-soon.sweeper';
import { WebhookEventsProjection } from './events/webhook-events.projection';
import { programInfoSource } from './events/program-info';

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
    this.projection = new WebhookEventsProjection(store, this.endpoints, this.queue, info, () => this.worker.wakeSoon(), null, sharedFold(store, pool, MEMBER_FOLD));
    this.sweeper = new ExpiringSoonSweeper(pool, this.endpoints, this.queue, info, now, () => this.worker.wakeSoon());
    this.service = new EndpointsService(this.endpoints, this.queue, this.sender, { timeoutMs: config.webhookTimeoutMs, now });
  }
}
