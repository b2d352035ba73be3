import { Controller, INestMicroservice, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PATTERNS } from '@loyalty/contracts';
import type { InboundEvent, ProcessEventOutcome, ProcessEventReply, ProcessEventRequest, ProcessEventsRequest } from '@loyalty/contracts';
import { InProcessBus, InProcessServer, messageRequestId, reply } from '@loyalty/messaging';
import { problem, withRequestId } from '@loyalty/platform';
import { createTestDatabase, eventually, gate, Gate, sleep, TestDatabase } from '@loyalty/testing';
import { INGEST_MIGRATIONS } from '../ingest.migrations';
import { EventQueueRepository } from '../queue/event-queue.repository';
import { SubmitEventsService } from '../submit-events/submit-events.service';
import { IngestWorker, IngestWorkerOptions } from './ingest.worker';
import { errorMessage, isRetryable } from './retry.policy';

/** What the test ledger does with one event id: its replies, in order of the calls (the last repeats). */
type Script = (() => Promise<ProcessEventReply> | ProcessEventReply)[];

/** A stand-in for the ledger's `ledger.event.process` handler: records calls, answers from scripts. */
class TestLedger {
  calls: ProcessEventRequest[] = [];
  /** the event ids of each batch message, in arrival order */
  batches: string[][] = [];
  /** the request each batch message belonged to, in arrival order */
  requestIds: (string | null)[] = [];
  /** messages still to fault as a whole (unavailable) */
  failMessages = 0;
  scripts = new Map<string, Script>();
  /** Per partition: how many calls run now, and the most that ever ran at once. */
  private active = new Map<string, number>();
  maxActivePerOrder = 0;
  maxActive = 0;
  private running = 0;
  delayMs = () => 0;

  async handle(req: ProcessEventRequest): Promise<ProcessEventReply> {
    const key = (req.event as { order_ref?: string }).order_ref ?? 'none';
    const idempotencyId = (req.event as { id?: string }).id ?? req.event_id;
    const nth = this.calls.filter((c) => c.event_id === req.event_id).length;
    this.calls.push(req);
    this.active.set(key, (this.active.get(key) ?? 0) + 1);
    this.running += 1;
    this.maxActivePerOrder = Math.max(this.maxActivePerOrder, this.active.get(key)!);
    this.maxActive = Math.max(this.maxActive, this.running);
    try {
      await sleep(this.delayMs());
      const script = this.scripts.get(idempotencyId);
      if (script) return await script[Math.min(nth, script.length - 1)]();
      return { status: 'completed', error: null, ledger_entry_ids: [`LE-${req.event_id}`] };
    } finally {
      this.active.set(key, this.active.get(key)! - 1);
      this.running -= 1;
    }
  }

  callsOf(eventId: string): ProcessEventRequest[] { return this.calls.filter((c) => c.event_id === eventId); }
}

const ledger = new TestLedger();

@Controller()
class TestLedgerMessages {
  @MessagePattern(PATTERNS.ledger.processEvent)
  process(@Payload() req: ProcessEventRequest) { return reply(() => ledger.handle(req)); }

  /**
   * The batch the worker sends, answered as the ledger does: one outcome per event (a domain
   * problem fails that event, any other fault is that event's `retry`); `failMessages` faults whole messages.
   */
  @MessagePattern(PATTERNS.ledger.processEvents)
  processMany(@Payload() req: ProcessEventsRequest) {
    ledger.batches.push(req.events.map((e) => e.event_id));
    ledger.requestIds.push(messageRequestId(req) ?? null);
    return reply(async () => {
      if (ledger.failMessages > 0) {
        ledger.failMessages -= 1;
        throw problem('unavailable', 'the whole message was lost');
      }
      return {
        results: await Promise.all(req.events.map((e) => ledger.handle(e).catch((err: unknown): ProcessEventOutcome =>
          (isRetryable(err) ? { status: 'retry', error: errorMessage(err), ledger_entry_ids: [] } : { status: 'failed', error: errorMessage(err), ledger_entry_ids: [] })))),
      };
    });
  }
}

@Module({ controllers: [TestLedgerMessages] })
class TestLedgerModule {}

const paid = (order_ref: string, extra: Record<string, unknown> = {}): InboundEvent =>
  ({ type: 'order.paid', order_ref, gross_cents: 1000, ...extra }) as InboundEvent;

describe('the ingest worker (PostgreSQL queue, in-process bus, test ledger)', () => {
  let db: TestDatabase;
  let app: INestMicroservice;
  let bus: InProcessBus;
  let repo: EventQueueRepository;
  const workers: IngestWorker[] = [];
  const newWorker = (options: Partial<IngestWorkerOptions> = {}) => {
    const w = new IngestWorker(repo, bus, async () => new Date(), { pollIntervalMs: 50, backoffBaseMs: 20, backoffMaxMs: 100, ...options });
    workers.push(w);
    return w;
  };
  const submitter = (worker?: IngestWorker) =>
    new SubmitEventsService(repo, { backlogLimit: 20_000, now: async () => new Date(), onQueued: () => worker?.wake() });
  /** The stored row, with the status readers see (a leased row is running). */
  const row = async (id: string) => {
    const raw = (await db.pool.query('select * from ingest.events where id = $1', [id])).rows[0];
    return raw && { ...raw, status: (await repo.get(raw.tenant, id))!.status };
  };

  beforeAll(async () => {
    db = await createTestDatabase('ingest_worker', { migrations: INGEST_MIGRATIONS, poolMax: 30 });
    repo = new EventQueueRepository(db.pool);
    const server = new InProcessServer();
    app = await NestFactory.createMicroservice(TestLedgerModule, { strategy: server, logger: false });
    await app.listen();
    bus = new InProcessBus(server);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop(1_000)));
    ledger.scripts.clear();
    ledger.delayMs = () => 0;
    ledger.failMessages = 0;
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('sends a queued event to the ledger and records its reply (wakes at once, without waiting for a poll)', async () => {
    const worker = newWorker({ pollIntervalMs: 60_000 });
    worker.start();
    await sleep(50); // the first pump found nothing
    const event = paid('W-1', { lines: [{ amount_cents: 1000, quantity: 1, gift_card: false }] });
    const [accepted] = (await submitter(worker).submit('P-w', [{ event }])).results;
    const t0 = Date.now();
    await eventually(async () => expect((await row(accepted.id)).status).toBe('completed'), { timeoutMs: 2_000 });
    expect(Date.now() - t0).toBeLessThan(2_000);
    const r = await row(accepted.id);
    expect(r).toMatchObject({ error: null, ledger_entry_ids: [`LE-${accepted.id}`], attempts: 1, locked_until: null });
    expect(r.processed_at).toBeInstanceOf(Date);
    expect(ledger.callsOf(accepted.id)).toEqual([{ tenant: 'P-w', event_id: accepted.id, received_at: r.received_at.toISOString(), event }]);
  });

  it('processes an event as part of the request that queued it: the id is stored with the event and the message to the ledger carries it', async () => {
    const worker = newWorker();
    // the submission's carrier is taken when it is called, inside the request (no await reaches back to it)
    const submitted = withRequestId('req-queued-1', () => submitter(worker).submit('P-w', [{ event: paid('W-rid') }]));
    const [a] = (await submitted).results;
    expect((await row(a.id)).trace).toEqual({ 'x-request-id': 'req-queued-1' });
    ledger.requestIds.length = 0;
    worker.start();
    await eventually(async () => expect((await row(a.id)).status).toBe('completed'));
    expect(ledger.requestIds).toEqual(['req-queued-1']);
  });

  it("records the ledger's failed outcome with its error", async () => {
    ledger.scripts.set('ignored-1', [() => ({ status: 'failed', error: 'aggregate_version 1 is older than 2', ledger_entry_ids: [] })]);
    const worker = newWorker();
    worker.start();
    const [a] = (await submitter(worker).submit('P-w', [{ event: paid('W-2', { id: 'ignored-1' }) }])).results;
    await eventually(async () => expect(await row(a.id)).toMatchObject({ status: 'failed', error: 'aggregate_version 1 is older than 2', ledger_entry_ids: [] }));
  });

  it("runs one order's events one at a time in receipt order, different orders in parallel", async () => {
    ledger.delayMs = () => Math.floor(Math.random() * 8);
    const tenant = 'P-order';
    const s = submitter();
    const orders = Array.from({ length: 6 }, (_, i) => `ORD-${i}`);
    const types = ['order.placed', 'order.paid', 'order.fulfilled', 'order.delivered'] as const;
    // interleaved over several requests: a batch per step, the orders mixed inside each
    for (const type of types) {
      await s.submit(tenant, orders.map((o) => ({ event: { type, order_ref: o, gross_cents: 100 } as InboundEvent })));
    }
    await s.submit(tenant, orders.map((o) => ({ event: { type: 'order.refunded', order_ref: o, refund_ref: 'R1', refunded_cents: 10 } as InboundEvent })));
    await s.submit(tenant, orders.map((o) => ({ event: { type: 'order.refunded', order_ref: o, refund_ref: 'R2', refunded_cents: 10 } as InboundEvent })));
    ledger.maxActivePerOrder = 0;
    ledger.maxActive = 0;
    const first = ledger.calls.length;
    newWorker({ concurrency: 8 }).start();
    newWorker({ concurrency: 8 }).start(); // a second process sharing the queue
    await eventually(async () => {
      const { rows } = await db.pool.query(`select count(*)::int as n from ingest.events where tenant = $1 and status = 'completed'`, [tenant]);
      expect(rows[0].n).toBe(36);
    }, { timeoutMs: 20_000 });
    const calls = ledger.calls.slice(first).filter((c) => c.tenant === tenant);
    expect(calls).toHaveLength(36);
    const { rows } = await db.pool.query(`select id, order_ref from ingest.events where tenant = $1 order by seq`, [tenant]);
    for (const o of orders) {
      const expected = rows.filter((r) => r.order_ref === o).map((r) => r.id);
      expect(calls.filter((c) => (c.event as { order_ref: string }).order_ref === o).map((c) => c.event_id)).toEqual(expected);
    }
    expect(ledger.maxActivePerOrder).toBe(1);
    expect(ledger.maxActive).toBeGreaterThan(1);
  });

  it('retries a bus fault with backoff until it succeeds; the next event of the order waits for it', async () => {
    let calls = 0;
    ledger.scripts.set('flaky-1', [
      () => { calls++; throw problem('unavailable', 'broker away'); },
      () => { calls++; throw problem('internal', 'handler crashed'); },
      () => { calls++; return { status: 'completed', error: null, ledger_entry_ids: ['LE-flaky'] }; },
    ]);
    const worker = newWorker();
    worker.start();
    const { results } = await submitter(worker).submit('P-retry', [{ event: paid('R-1', { id: 'flaky-1' }) }, { event: paid('R-1', { id: 'after-1', gross_cents: 5 }) }]);
    await eventually(async () => expect((await row(results[1].id)).status).toBe('completed'), { timeoutMs: 5_000 });
    expect(await row(results[0].id)).toMatchObject({ status: 'completed', attempts: 3, error: null, ledger_entry_ids: ['LE-flaky'] });
    expect(calls).toBe(3);
    // the second event of the order went only after the first had completed
    const order = ledger.calls.filter((c) => c.tenant === 'P-retry').map((c) => c.event_id);
    expect(order).toEqual([results[0].id, results[0].id, results[0].id, results[1].id]);
  });

  it('sends claimed events many to a message; a fault of the whole message retries each of its events', async () => {
    const tenant = 'P-batch';
    const s = submitter();
    const events = Array.from({ length: 40 }, (_, i) => ({ event: paid(`B-${i}`, { email: `c${i % 5}@example.com` }) }));
    const { results } = await s.submit(tenant, events);
    ledger.failMessages = 1;
    const first = ledger.batches.length;
    const worker = newWorker({ concurrency: 64, batchSize: 16, busKeys: 4 });
    worker.start();
    await eventually(async () => {
      const { rows } = await db.pool.query(`select count(*)::int as n from ingest.events where tenant = $1 and status = 'completed'`, [tenant]);
      expect(rows[0].n).toBe(40);
    }, { timeoutMs: 10_000 });
    const batches = ledger.batches.slice(first);
    expect(batches.every((b) => b.length <= 16)).toBe(true);
    expect(batches.length).toBeLessThan(40); // many to a message
    // the lost message's events were each retried once: attempts 2 for them, 1 for the rest
    const lost = new Set(batches[0]);
    expect(lost.size).toBeGreaterThan(0);
    for (const r of results) expect((await row(r.id)).attempts).toBe(lost.has(r.id) ? 2 : 1);
  });

  it('fails an event once its attempts are used up; a domain problem fails it at once', async () => {
    ledger.scripts.set('always-down', [() => { throw problem('unavailable', 'broker away'); }]);
    ledger.scripts.set('bad-request', [() => { throw problem('validation', 'event is not understood'); }]);
    const worker = newWorker({ maxAttempts: 3 });
    worker.start();
    const { results } = await submitter(worker).submit('P-fail', [
      { event: paid('F-1', { id: 'always-down' }) }, { event: paid('F-2', { id: 'bad-request' }) },
    ]);
    await eventually(async () => expect((await row(results[0].id)).status).toBe('failed'), { timeoutMs: 5_000 });
    expect(await row(results[0].id)).toMatchObject({ attempts: 3, error: 'processing failed after 3 attempts: broker away' });
    expect(await row(results[1].id)).toMatchObject({ status: 'failed', attempts: 1, error: 'event is not understood' });
  });

  it('a crashed worker: its running event comes back when the lease lapses, is sent again, and the stale outcome is ignored', async () => {
    const hung: Gate<ProcessEventReply> = gate();
    ledger.scripts.set('crash-1', [
      () => hung.promise, // the first attempt never answers while "its process is dead"
      () => ({ status: 'completed', error: null, ledger_entry_ids: ['LE-second'] }),
    ]);
    const crashed = newWorker({ leaseMs: 300 });
    crashed.start();
    const [a] = (await submitter(crashed).submit('P-crash', [{ event: paid('C-1', { id: 'crash-1' }) }])).results;
    await eventually(async () => expect(await row(a.id)).toMatchObject({ status: 'running', attempts: 1 }));
    await crashed.stop(0); // stops claiming; its call stays in flight, as if the process died

    const survivor = newWorker({ leaseMs: 300 });
    survivor.start();
    await eventually(async () => expect(await row(a.id)).toMatchObject({ status: 'completed', attempts: 2, ledger_entry_ids: ['LE-second'] }), { timeoutMs: 5_000 });
    expect(ledger.callsOf(a.id).map((c) => c.event_id)).toEqual([a.id, a.id]);

    hung.open({ status: 'failed', error: 'stale', ledger_entry_ids: [] }); // the dead worker's reply arrives late
    await sleep(100);
    expect(await row(a.id)).toMatchObject({ status: 'completed', error: null, ledger_entry_ids: ['LE-second'] });
  });

  it('recovers rows left running by a process that died, and fails those that used up their attempts', async () => {
    const s = submitter();
    const { results } = await s.submit('P-dead', [{ event: paid('D-1') }, { event: paid('D-2') }]);
    await db.pool.query(`update ingest.events set status = 'running', attempts = 1, locked_until = now() - interval '1 second' where id = $1`, [results[0].id]);
    await db.pool.query(`update ingest.events set status = 'running', attempts = 8, locked_until = now() - interval '1 second' where id = $1`, [results[1].id]);
    newWorker({ maxAttempts: 8 }).start();
    await eventually(async () => expect((await row(results[0].id)).status).toBe('completed'));
    expect(await row(results[0].id)).toMatchObject({ attempts: 2 });
    expect(await row(results[1].id)).toMatchObject({ status: 'failed', error: 'processing did not finish after 8 attempts (worker lost)' });
    expect(ledger.callsOf(results[1].id)).toHaveLength(0);
  });

  it('stop() lets the events in flight finish and claims nothing more', async () => {
    ledger.delayMs = () => 150;
    const worker = newWorker({ concurrency: 2 });
    worker.start();
    const { results } = await submitter(worker).submit('P-stop', [{ event: paid('S-1') }, { event: paid('S-2') }, { event: paid('S-3') }]);
    await eventually(() => expect(worker.busy).toBe(2));
    await worker.stop();
    const statuses = await Promise.all(results.map(async (r) => (await row(r.id)).status));
    expect(statuses.sort()).toEqual(['completed', 'completed', 'queued']);
  });
});
