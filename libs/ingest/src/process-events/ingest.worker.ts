import { Logger } from '@nestjs/common';
import { PATTERNS } from '@loyalty/contracts';
import type { ProcessEventReply, ProcessEventRequest } from '@loyalty/contracts';
import { CommandBus } from '@loyalty/messaging';
import { METRICS, SpanKind, inSpan, parseTenantKey, withCarrier } from '@loyalty/platform';
import { ClaimedEvent, EventQueueRepository } from '../queue/event-queue.repository';
import { busKeyFor } from '../submit-events/idempotency-key';
import { DEFAULT_RETRY_POLICY, RetryPolicy, backoffMs, errorMessage, isRetryable } from './retry.policy';

export interface IngestWorkerOptions extends RetryPolicy {
  /** Events processed at once by this process (never two of one order). */
  concurrency: number;
  /** How often the queue is polled when nothing wakes the worker (other processes' inserts, backoffs, lapsed leases). */
  pollIntervalMs: number;
  /** How long a claimed event may run before another worker assumes this one crashed and takes it over. */
  leaseMs: number;
  /** How often idempotency keys past their 30-day retention are retired. */
  housekeepingIntervalMs: number;
}

export const DEFAULT_WORKER_OPTIONS: IngestWorkerOptions = {
  ...DEFAULT_RETRY_POLICY,
  concurrency: 256,
  pollIntervalMs: 500,
  leaseMs: 120_000,
  housekeepingIntervalMs: 3_600_000,
};

const isReply = (r: unknown): r is ProcessEventReply => {
  const v = r as ProcessEventReply | null;
  return !!v && typeof v === 'object' && (v.status === 'completed' || v.status === 'failed')
    && (v.error === null || v.error === undefined || typeof v.error === 'string')
    && (v.ledger_entry_ids === undefined || (Array.isArray(v.ledger_entry_ids) && v.ledger_entry_ids.every((x) => typeof x === 'string')));
};

/**
 * Feeds queued events to the ledger (`ledger.event.process`) and records the outcome as the
 * event's status. Claims with FOR UPDATE SKIP LOCKED, so any number of ingest processes share the
 * queue; only the oldest unfinished event of an order is ever claimable, so one order's events run
 * one at a time, in receipt order. A crashed worker's events come back when their lease lapses and
 * are sent again (the ledger is idempotent by event id).
 */
export class IngestWorker {
  private readonly log = new Logger('IngestWorker');
  private readonly options: IngestWorkerOptions;
  private readonly inFlight = new Set<Promise<void>>();
  private started = false;
  private pumping = false;
  private again = false;
  private lastRecovery = 0;
  private pollTimer: NodeJS.Timeout | null = null;
  private housekeepingTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly repo: EventQueueRepository,
    private readonly bus: CommandBus,
    private readonly now: (tenant: string) => Promise<Date>,
    options: Partial<IngestWorkerOptions> = {},
  ) {
    this.options = { ...DEFAULT_WORKER_OPTIONS, ...options };
  }

  get running(): boolean { return this.started; }
  get busy(): number { return this.inFlight.size; }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.pollTimer = setInterval(() => this.wake(), this.options.pollIntervalMs);
    this.pollTimer.unref();
    this.housekeepingTimer = setInterval(() => {
      this.repo.retireExpiredKeys().catch((e) => this.log.warn(`retiring idempotency keys failed: ${errorMessage(e)}`));
    }, this.options.housekeepingIntervalMs);
    this.housekeepingTimer.unref();
    this.wake();
  }

  /** Stops claiming and waits (up to `timeoutMs`) for the events in flight; unfinished ones are recovered by their lease. */
  async stop(timeoutMs = 10_000): Promise<void> {
    if (!this.started) return;
    this.started = false;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.housekeepingTimer) clearInterval(this.housekeepingTimer);
    this.pollTimer = this.housekeepingTimer = null;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.inFlight]),
      new Promise<void>((r) => { timer = setTimeout(r, timeoutMs); timer.unref(); }),
    ]);
    if (timer) clearTimeout(timer);
  }

  /** Look at the queue now (after an insert, a finished event, or a poll tick). */
  wake(): void {
    if (!this.started) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    void this.pump();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      do {
        this.again = false;
        if (Date.now() - this.lastRecovery >= this.options.pollIntervalMs) {
          this.lastRecovery = Date.now();
          const recovered = await this.repo.recoverLapsedLeases(this.options.maxAttempts);
          if (recovered > 0) this.log.warn(`re-queued ${recovered} event(s) whose worker lease lapsed`);
        }
        const free = this.options.concurrency - this.inFlight.size;
        if (free <= 0 || !this.started) break;
        const claimed = await this.repo.claim(free, this.options.leaseMs);
        for (const event of claimed) this.track(this.process(event));
      } while (this.again && this.started);
    } catch (e) {
      // The database may be briefly unreachable; the next poll tries again.
      if (this.started) this.log.warn(`claiming events failed: ${errorMessage(e)}`);
    } finally {
      this.pumping = false;
    }
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => {
      this.inFlight.delete(p);
      // A finished event may unblock the next one of its order, and frees a slot.
      this.wake();
    });
  }

  /** Processes the event as part of the request that queued it: its trace and request id (issue 11). */
  private process(e: ClaimedEvent): Promise<void> {
    return withCarrier(e.trace, () => inSpan('ingest.event process', SpanKind.CONSUMER, { 'loyalty.event.type': e.type, 'loyalty.event.attempt': e.attempts }, () => this.processEvent(e)));
  }

  private async processEvent(e: ClaimedEvent): Promise<void> {
    const mode = parseTenantKey(e.tenant).mode;
    const request: ProcessEventRequest = { tenant: e.tenant, event_id: e.id, received_at: e.received_at.toISOString(), event: e.payload };
    try {
      let reply: unknown;
      try {
        reply = await this.bus.request<ProcessEventReply>(PATTERNS.ledger.processEvent, request, busKeyFor(e.payload));
      } catch (err) {
        if (isRetryable(err) && e.attempts < this.options.maxAttempts) {
          await this.repo.retryLater(e, `attempt ${e.attempts} failed, will retry: ${errorMessage(err)}`, backoffMs(e.attempts, this.options));
          METRICS.ingestEvents.inc({ mode, outcome: 'retried' });
        } else {
          const error = isRetryable(err) ? `processing failed after ${e.attempts} attempts: ${errorMessage(err)}` : errorMessage(err);
          if (await this.repo.finish(e, { status: 'failed', error, ledger_entry_ids: [] }, await this.now(e.tenant))) METRICS.ingestEvents.inc({ mode, outcome: 'failed' });
        }
        return;
      }
      const outcome = isReply(reply)
        ? { status: reply.status, error: reply.error ?? null, ledger_entry_ids: reply.ledger_entry_ids ?? [] }
        : { status: 'failed' as const, error: 'the ledger sent a malformed reply', ledger_entry_ids: [] };
      if (await this.repo.finish(e, outcome, await this.now(e.tenant))) METRICS.ingestEvents.inc({ mode, outcome: outcome.status });
    } catch (err) {
      // Recording the outcome failed (database trouble): the lease lapses and the event is sent again.
      this.log.warn(`recording the outcome of ${e.id} failed: ${errorMessage(err)}`);
    }
  }
}
