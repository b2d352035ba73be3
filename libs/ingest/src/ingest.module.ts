import { Inject, Module, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Pool } from 'pg';
import { CommandBus } from '@loyalty/messaging';
import { AppConfig, APP_CONFIG, COMMAND_BUS, METRICS, PG_POOL, onScrape } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { EraseCustomerService } from './erase-customer/erase-customer.service';
import { IngestMessages } from './ingest.messages';
import { IngestWorker, IngestWorkerOptions } from './process-events/ingest.worker';
import { EventQueueRepository } from './queue/event-queue.repository';
import { ReadEventsService } from './read-events/read-events.service';
import { SubmitEventsService } from './submit-events/submit-events.service';

/**
 * LOYALTY_INGEST_CONCURRENCY: events a worker has in flight at once (never two of one order);
 * LOYALTY_INGEST_BATCH: events per message to the ledger (`ledger.events.process`).
 */
const workerOptionsFromEnv = (): Partial<IngestWorkerOptions> => {
  const out: Partial<IngestWorkerOptions> = {};
  const int = (name: string): number | undefined => {
    const raw = process.env[name];
    if (raw === undefined || raw === '') return undefined;
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < 1 || n > 1000) throw new Error(`${name} must be an integer 1..1000, got ${raw}`);
    return n;
  };
  const concurrency = int('LOYALTY_INGEST_CONCURRENCY');
  const batchSize = int('LOYALTY_INGEST_BATCH');
  if (concurrency !== undefined) out.concurrency = concurrency;
  if (batchSize !== undefined) out.batchSize = batchSize;
  return out;
};

/**
 * The ingest service: accepts commerce events, dedupes them, queues them durably in PostgreSQL
 * (schema `ingest`), feeds them to the ledger one order at a time and tracks their EventStatus.
 * The worker runs in the process that hosts this module (the ingest app, or standalone).
 */
@Module({
  controllers: [IngestMessages],
  providers: [
    { provide: EventQueueRepository, inject: [PG_POOL], useFactory: (pool: Pool) => new EventQueueRepository(pool) },
    {
      provide: IngestWorker,
      inject: [EventQueueRepository, COMMAND_BUS, ProgramStore],
      useFactory: (repo: EventQueueRepository, bus: CommandBus, programs: ProgramStore) =>
        new IngestWorker(repo, bus, async (tenant) => programs.now(tenant), workerOptionsFromEnv()),
    },
    {
      provide: SubmitEventsService,
      inject: [EventQueueRepository, APP_CONFIG, ProgramStore, IngestWorker],
      useFactory: (repo: EventQueueRepository, config: AppConfig, programs: ProgramStore, worker: IngestWorker) =>
        new SubmitEventsService(repo, { backlogLimit: config.backlogLimit, now: async (tenant) => programs.now(tenant), onQueued: () => worker.wake() }),
    },
    { provide: EraseCustomerService, inject: [PG_POOL], useFactory: (pool: Pool) => new EraseCustomerService(pool) },
    { provide: ReadEventsService, inject: [EventQueueRepository], useFactory: (repo: EventQueueRepository) => new ReadEventsService(repo) },
  ],
  exports: [SubmitEventsService, ReadEventsService, IngestWorker],
})
export class IngestModule implements OnApplicationBootstrap, OnModuleDestroy {
  private removeProbe: (() => void) | null = null;

  constructor(@Inject(IngestWorker) private readonly worker: IngestWorker, private readonly repo: EventQueueRepository) {}

  onApplicationBootstrap(): void {
    this.worker.start();
    // queue depth and oldest-queued age, computed when /metrics is scraped (issue 11)
    this.removeProbe = onScrape(async () => {
      const rows = await this.repo.depthByMode();
      for (const mode of ['live', 'test'] as const) {
        const r = rows.find((x) => x.mode === mode);
        METRICS.ingestQueueDepth.set({ mode, status: 'queued' }, r?.queued ?? 0);
        METRICS.ingestQueueDepth.set({ mode, status: 'running' }, r?.running ?? 0);
        METRICS.ingestOldestQueuedAge.set({ mode }, r?.oldest_queued_age_s ?? 0);
      }
    });
  }

  /** Before the pool closes (onApplicationShutdown): stop claiming and let the events in flight finish. */
  async onModuleDestroy(): Promise<void> {
    this.removeProbe?.();
    await this.worker.stop();
  }
}
