import { Logger } from '@nestjs/common';
import CircuitBreaker from 'opossum';
import { METRICS, PollingWorker, SpanKind, inSpan, onScrape, parseTenantKey } from '@loyalty/platform';
import { signatureHeaders } from '../signing/signature';
import { ClaimedDelivery, DeliveryPolicy, DeliveryQueue } from './delivery.queue';
import { HttpSender, SendResult } from './http-sender';

export interface DeliveryWorkerOptions extends DeliveryPolicy {
  /** deliveries in flight at once in this process */
  concurrency: number;
  /** how often the queue is looked at when nothing wakes the worker (other processes, retries coming due) */
  pollIntervalMs: number;
  /** per attempt (LOYALTY_WEBHOOK_TIMEOUT_MS) */
  timeoutMs: number;
  /** a claimed delivery not finished by then is assumed lost and sent again */
  leaseMs: number;
  breaker: { volumeThreshold: number; errorThresholdPercentage: number; resetTimeoutMs: number; rollingCountTimeoutMs: number };
}

export const DEFAULT_BREAKER = { volumeThreshold: 10, errorThresholdPercentage: 50, resetTimeoutMs: 30_000, rollingCountTimeoutMs: 60_000 };

/** A non-2xx answer or a network failure: what the breaker counts as a failure. */
class AttemptFailed extends Error {
  constructor(readonly result: SendResult) { super(result.error ?? 'delivery failed'); }
}

type Job = () => Promise<SendResult>;

/** Workers running in this process: /metrics reports their breakers' states (issue 11). */
const runningWorkers = new Set<DeliveryWorker>();
onScrape(() => {
  const counts = { closed: 0, open: 0, half_open: 0 };
  for (const w of runningWorkers) for (const s of w.breakerStates()) counts[s] += 1;
  for (const [state, n] of Object.entries(counts)) METRICS.webhookBreakers.set({ state }, n);
});

/**
 * Drains the delivery queue: claims due deliveries (SKIP LOCKED, so any number of processes share
 * it), signs and POSTs each, records the outcome. Every endpoint has its own opossum circuit
 * breaker around the HTTP call: once a receiver keeps failing, its deliveries are not even claimed
 * until the breaker half-opens, so a dead receiver cannot hold the workers (its queue waits, and
 * no attempt is counted against it meanwhile).
 */
export class DeliveryWorker {
  private readonly log = new Logger('WebhookDelivery');
  private readonly breakers = new Map<string, CircuitBreaker<[Job], SendResult>>();
  /** the house's one polling loop: claim due deliveries into free slots, one slot each */
  private readonly poller: PollingWorker<ClaimedDelivery>;

  constructor(private readonly queue: DeliveryQueue, private readonly sender: HttpSender, private readonly options: DeliveryWorkerOptions) {
    this.poller = new PollingWorker<ClaimedDelivery>({
      concurrency: options.concurrency,
      pollIntervalMs: options.pollIntervalMs,
      recoverEveryMs: Math.max(1000, options.pollIntervalMs),
      recover: async () => {
        const n = await this.queue.recoverLapsed();
        if (n) this.log.warn(`re-queued ${n} webhook deliveries whose worker lease lapsed`);
        return n;
      },
      claim: (free) => this.queue.claim(free, this.options.leaseMs, this.openEndpoints()),
      dispatch: (claimed) => claimed.map((d) => ({ size: 1, run: () => this.process(d) })),
      warn: (message) => this.log.warn(`webhook deliveries: ${message}`),
    });
  }

  start(): void {
    if (this.poller.running) return;
    runningWorkers.add(this);
    this.poller.start();
  }

  async stop(timeoutMs = 10_000): Promise<void> {
    if (!this.poller.running) return;
    runningWorkers.delete(this);
    await this.poller.stop(timeoutMs);
    for (const b of this.breakers.values()) b.shutdown();
    this.breakers.clear();
  }

  /** Deliveries were just queued (by a transaction about to commit): look shortly. */
  wakeSoon(): void { this.poller.wakeSoon(); }

  wake(): void { this.poller.wake(); }

  /** The state of each endpoint's breaker in this process. */
  breakerStates(): ('closed' | 'open' | 'half_open')[] {
    return [...this.breakers.values()].map((b) => (b.halfOpen ? 'half_open' : b.opened ? 'open' : 'closed'));
  }

  private openEndpoints(): string[] {
    return [...this.breakers].filter(([, b]) => b.opened).map(([id]) => id);
  }

  private breakerFor(endpointId: string): CircuitBreaker<[Job], SendResult> {
    let b = this.breakers.get(endpointId);
    if (!b) {
      const o = this.options.breaker;
      b = new CircuitBreaker<[Job], SendResult>(async (job: Job) => {
        const r = await job();
        if (!r.ok) throw new AttemptFailed(r);
        return r;
      }, {
        timeout: false, // the sender enforces the per-attempt timeout itself
        volumeThreshold: o.volumeThreshold,
        errorThresholdPercentage: o.errorThresholdPercentage,
        resetTimeout: o.resetTimeoutMs,
        rollingCountTimeout: o.rollingCountTimeoutMs,
        rollingCountBuckets: 10,
      });
      // a breaker that opens wakes the queue again when it half-opens
      b.on('halfOpen', () => this.wake());
      this.breakers.set(endpointId, b);
    }
    return b;
  }

  private async process(d: ClaimedDelivery): Promise<void> {
    try {
      const mode = parseTenantKey(d.tenant).mode;
      const job: Job = () => this.sender.send({
        url: d.url,
        body: d.payload,
        headers: { ...signatureHeaders(d.secret, d.id, d.payload, new Date()) },
        mode,
        timeoutMs: this.options.timeoutMs,
      });
      let result: SendResult;
      try {
        // a span per attempt (issue 11); the POST itself is an HTTP client span inside it
        result = await inSpan('webhook deliver', SpanKind.CLIENT, { 'loyalty.webhook.endpoint_id': d.endpoint_id, 'loyalty.webhook.delivery_id': d.id, 'loyalty.mode': mode },
          async (span) => {
            const r = await this.breakerFor(d.endpoint_id).fire(job);
            span.setAttribute('http.response.status_code', r.status_code ?? 0);
            return r;
          });
      } catch (e) {
        if (e instanceof AttemptFailed) result = e.result;
        else if ((e as { code?: string }).code === 'EOPENBREAKER') {
          METRICS.webhookDeliveries.inc({ outcome: 'short_circuited' });
          await this.queue.release(d, Math.min(this.options.breaker.resetTimeoutMs, 5_000));
          return;
        } else result = { status_code: null, ok: false, error: (e as Error).message ?? String(e), duration_ms: 0, response_excerpt: null };
      }
      METRICS.webhookDeliveries.inc({ outcome: result.ok ? 'delivered' : 'failed' });
      const outcome = await this.queue.complete(d, result, this.options);
      if (outcome.endpointDisabled) this.log.warn(`webhook endpoint ${d.endpoint_id} (${d.tenant}) disabled after delivery ${d.id} failed (${result.error})`);
    } catch (e) {
      // the lease brings the delivery back if recording failed
      this.log.warn(`webhook delivery ${d.id} could not be recorded: ${(e as Error).message}`);
    }
  }
}
