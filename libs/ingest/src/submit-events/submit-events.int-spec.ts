import type { InboundEvent } from '@loyalty/contracts';
import { ProblemError } from '@loyalty/platform';
import { createTestDatabase, TestDatabase } from '@loyalty/testing';
import { INGEST_MIGRATIONS } from '../ingest.migrations';
import { EventQueueRepository } from '../queue/event-queue.repository';
import { ReadEventsService } from '../read-events/read-events.service';
import { SubmitEventsService } from './submit-events.service';

const paid = (order_ref: string, extra: Record<string, unknown> = {}): InboundEvent =>
  ({ type: 'order.paid', order_ref, gross_cents: 1000, ...extra }) as InboundEvent;

const rejection = async (p: Promise<unknown>): Promise<ProblemError> => {
  try {
    await p;
  } catch (e) {
    if (e instanceof ProblemError) return e;
    throw e;
  }
  throw new Error('expected a problem');
};

describe('accepting events (PostgreSQL queue)', () => {
  let db: TestDatabase;
  let repo: EventQueueRepository;
  let queued = 0;
  const service = (backlogLimit = 20_000) =>
    new SubmitEventsService(repo, { backlogLimit, now: async () => new Date(), onQueued: () => { queued += 1; } });
  const count = async (tenant: string, where = 'true', params: unknown[] = []) =>
    Number((await db.pool.query(`select count(*) from ingest.events where tenant = $1 and ${where}`, [tenant, ...params])).rows[0].count);

  beforeAll(async () => {
    db = await createTestDatabase('ingest_submit', { migrations: INGEST_MIGRATIONS, poolMax: 30 });
    repo = new EventQueueRepository(db.pool);
  });
  afterAll(async () => db?.drop());

  it('queues a new event as EV-… with status queued and wakes the worker', async () => {
    const before = queued;
    const { results } = await service().submit('P-new', [{ event: paid('O-1') }]);
    expect(results).toEqual([{ id: expect.stringMatching(/^EV-[0-9A-Z]{26}$/), type: 'order.paid', status: 'queued', replayed: false }]);
    expect(queued).toBe(before + 1);
    const row = (await db.pool.query('select * from ingest.events where id = $1', [results[0].id])).rows[0];
    expect(row).toMatchObject({ tenant: 'P-new', idempotency_key: 'order.paid:O-1', order_ref: 'O-1', partition_key: 'order:O-1', status: 'queued', attempts: 0 });
    expect(row.payload).toEqual(paid('O-1'));
  });

  it.each([1, 2, 10])('the same key sent %i times concurrently makes one event; the others replay it', async (n) => {
    const tenant = `P-concurrent-${n}`;
    const s = service();
    const replies = await Promise.all(Array.from({ length: n }, () => s.submit(tenant, [{ event: paid('O-1'), idempotency_key: 'same-key' }])));
    const results = replies.map((r) => r.results[0]);
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(results.filter((r) => r.replayed)).toHaveLength(n - 1);
    expect(await count(tenant)).toBe(1);
  });

  it('10 concurrent batches sharing keys in opposite orders make one event per key', async () => {
    const tenant = 'P-overlap';
    const events = Array.from({ length: 20 }, (_, i) => ({ event: paid(`O-${i}`, { id: `evt-${i}` }) }));
    const s = service();
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => s.submit(tenant, i % 2 ? [...events].reverse() : events)));
    expect(await count(tenant)).toBe(20);
    // every reply names the same event for a key
    const idOfKey = new Map<number, Set<string>>();
    replies.forEach((reply, i) => reply.results.forEach((r, j) => {
      const k = i % 2 ? 19 - j : j;
      idOfKey.set(k, (idOfKey.get(k) ?? new Set()).add(r.id));
    }));
    expect([...idOfKey.values()].map((s) => s.size)).toEqual(Array(20).fill(1));
    expect(replies.flatMap((x) => x.results).filter((r) => !r.replayed)).toHaveLength(20);
  });

  it('a known key replays the original (its current status), whatever the body, and queues nothing', async () => {
    const tenant = 'P-replay';
    const s = service();
    const first = (await s.submit(tenant, [{ event: paid('O-1') }])).results[0];
    await db.pool.query(`update ingest.events set status = 'completed' where id = $1`, [first.id]);
    const before = queued;
    const again = (await s.submit(tenant, [{ event: paid('O-1', { gross_cents: 5 }) }])).results[0];
    expect(again).toEqual({ id: first.id, type: 'order.paid', status: 'completed', replayed: true });
    expect(queued).toBe(before);
    expect(await count(tenant)).toBe(1);
  });

  it('the key is the header, else the id, else derived; keys are per tenant', async () => {
    const s = service();
    const [a] = (await s.submit('P-keys', [{ event: paid('O-1', { id: 'evt-1' }), idempotency_key: 'hdr-1' }])).results;
    const [b] = (await s.submit('P-keys', [{ event: paid('O-2', { id: 'evt-1' }) }])).results;
    const [c] = (await s.submit('P-keys', [{ event: paid('O-3') }])).results;
    const [d] = (await s.submit('P-keys', [{ event: paid('O-9'), idempotency_key: 'evt-1' }])).results;
    expect([a.replayed, b.replayed, c.replayed]).toEqual([false, false, false]);
    expect(d).toMatchObject({ id: b.id, replayed: true });
    const keys = (await db.pool.query(`select idempotency_key from ingest.events where tenant = 'P-keys' order by seq`)).rows.map((r) => r.idempotency_key);
    expect(keys).toEqual(['hdr-1', 'evt-1', 'order.paid:O-3']);
    const [other] = (await s.submit('P-keys-other', [{ event: paid('O-3') }])).results;
    expect(other.replayed).toBe(false);
    expect(other.id).not.toBe(c.id);
  });

  it('a batch keeps its order (seq) and replays a key repeated inside it', async () => {
    const tenant = 'P-batch';
    const { results } = await service().submit(tenant, [
      { event: { type: 'order.placed', order_ref: 'O-1', gross_cents: 10 } },
      { event: paid('O-1') },
      { event: { type: 'order.placed', order_ref: 'O-1', gross_cents: 10 } },
      { event: { type: 'order.refunded', order_ref: 'O-1', refund_ref: 'R-1', refunded_cents: 5 } },
    ]);
    expect(results.map((r) => r.replayed)).toEqual([false, false, true, false]);
    expect(results[2].id).toBe(results[0].id);
    const rows = (await db.pool.query(`select id, type from ingest.events where tenant = $1 order by seq`, [tenant])).rows;
    expect(rows.map((r) => r.type)).toEqual(['order.placed', 'order.paid', 'order.refunded']);
    expect(rows.map((r) => r.id)).toEqual([results[0].id, results[1].id, results[3].id]);
  });

  it('backlog: beyond the limit of waiting events the whole request is refused with 429 backlog, and nothing is queued', async () => {
    const tenant = 'P-backlog';
    const s = service(3);
    await s.submit(tenant, [{ event: paid('O-1') }, { event: paid('O-2') }, { event: paid('O-3') }]);
    await s.submit(tenant, [{ event: paid('O-4') }]); // 3 waiting is not more than 3
    const refused = await rejection(s.submit(tenant, [{ event: paid('O-5') }]));
    expect(refused.status).toBe(429);
    expect(refused.problem).toMatchObject({ slug: 'backlog', extra: { reason: 'backlog' }, headers: { 'Retry-After': expect.stringMatching(/^\d+$/) } });
    const batch = await rejection(s.submit(tenant, [{ event: paid('O-1') }, { event: paid('O-6') }]));
    expect(batch.problem.slug).toBe('backlog');
    expect(await count(tenant)).toBe(4);
    // A pure replay is not a new event: it is answered even now.
    expect((await s.submit(tenant, [{ event: paid('O-2') }])).results[0].replayed).toBe(true);
    // running events wait too; finished ones do not
    await db.pool.query(`update ingest.events set status = 'running' where tenant = $1 and order_ref in ('O-1', 'O-2')`, [tenant]);
    expect((await rejection(s.submit(tenant, [{ event: paid('O-7') }]))).problem.slug).toBe('backlog');
    await db.pool.query(`update ingest.events set status = 'completed' where tenant = $1 and order_ref in ('O-1', 'O-2')`, [tenant]);
    expect((await s.submit(tenant, [{ event: paid('O-7') }])).results[0].replayed).toBe(false);
    // the limit is per programme
    expect((await s.submit('P-backlog-other', [{ event: paid('O-5') }])).results[0].replayed).toBe(false);
  });

  it('backlog: a wide span of receipt order with few events still open is counted, not refused', async () => {
    const tenant = 'P-backlog-span';
    const s = service(3);
    await s.submit(tenant, [1, 2, 3, 4, 5].map((i) => ({ event: paid(`S-${i}`) })));
    // the oldest and the newest stay open, the three between finish: a span of 5, a backlog of 2
    await db.pool.query(`update ingest.events set status = 'completed' where tenant = $1 and order_ref in ('S-2', 'S-3', 'S-4')`, [tenant]);
    expect((await s.submit(tenant, [{ event: paid('S-6') }])).results[0].replayed).toBe(false);
    // S-1, S-5 and S-6 wait; with S-3 queued again 4 do, more than 3: refused
    await db.pool.query(`update ingest.events set status = 'queued' where tenant = $1 and order_ref = 'S-3'`, [tenant]);
    expect((await rejection(s.submit(tenant, [{ event: paid('S-7') }]))).problem.slug).toBe('backlog');
  });

  it('backlog: an earlier reading of the oldest open event is reused (one probe a POST), and never lets the backlog pass the limit', async () => {
    const tenant = 'P-backlog-reuse';
    const s = service(4);
    await s.submit(tenant, [{ event: paid('R-1') }, { event: paid('R-2') }]);
    await s.submit(tenant, [{ event: paid('R-3') }]); // reads the oldest open event
    const spy = jest.spyOn(db.pool, 'query');
    try {
      await s.submit(tenant, [{ event: paid('R-4') }]);
      const backlogSql = spy.mock.calls.map(([q]) => (typeof q === 'string' ? q : String((q as { text?: string }).text))).filter((q) => q.includes('max(seq)'));
      expect(backlogSql).toEqual(['select max(seq) as newest from ingest.events where tenant = $1']);
    } finally {
      spy.mockRestore();
    }
    // finish: the reading is stale, the span from it overstates the backlog, so it is read again
    await db.pool.query(`update ingest.events set status = 'completed' where tenant = $1 and order_ref in ('R-1', 'R-2')`, [tenant]);
    await s.submit(tenant, [{ event: paid('R-5') }, { event: paid('R-6') }]);
    expect(await count(tenant, `status = 'queued'`)).toBe(4);
    // 4 waiting is not more than 4; then 5 are
    expect((await s.submit(tenant, [{ event: paid('R-7') }])).results[0].replayed).toBe(false);
    expect((await rejection(s.submit(tenant, [{ event: paid('R-8') }]))).problem.slug).toBe('backlog');
  });

  it('refuses events the queue cannot key, even if the gateway was bypassed', async () => {
    const e = await rejection(service().submit('P-guard', [{ event: { type: 'order.paid' } as unknown as InboundEvent }]));
    expect(e.problem).toMatchObject({ slug: 'validation', errors: [{ path: '/order_ref' }] });
    expect(await count('P-guard')).toBe(0);
  });
});

describe('the queue table (PostgreSQL)', () => {
  // a database of its own: the claim takes every queued event, of any programme
  let db: TestDatabase;
  let repo: EventQueueRepository;
  beforeAll(async () => {
    db = await createTestDatabase('ingest_pages', { migrations: INGEST_MIGRATIONS });
    repo = new EventQueueRepository(db.pool);
  });
  afterAll(async () => db?.drop());

  it('claiming a whole page of events rewrites no index (HOT updates): half of each page is kept free for the leases', async () => {
    const tenant = 'P-hot';
    // a realistic payload (a few hundred bytes a row), a page's worth and more
    const events = Array.from({ length: 60 }, (_, i) => ({ event: paid(`HOT-${i}`, { email: `customer-${i}@example.com`, currency: 'EUR', items: [{ sku: `SKU-${i}`, qty: 1 }] }) }));
    await new SubmitEventsService(repo, { backlogLimit: 20_000, now: async () => new Date() }).submit(tenant, events);
    const tx = await db.pool.connect();
    try {
      await tx.query('begin');
      const { rows } = await tx.query('select id from ingest.claim_events(1000, 60000) where tenant = $1', [tenant]);
      const { rows: [stat] } = await tx.query(`select pg_stat_get_xact_tuples_updated('ingest.events'::regclass)::int as updated,
        pg_stat_get_xact_tuples_hot_updated('ingest.events'::regclass)::int as hot`);
      await tx.query('rollback');
      expect(rows.length).toBeGreaterThanOrEqual(60);
      expect(stat.updated).toBeGreaterThanOrEqual(60);
      expect(stat.hot).toBe(stat.updated);
    } finally {
      tx.release();
    }
  });
});

describe('reading events (PostgreSQL)', () => {
  let db: TestDatabase;
  let repo: EventQueueRepository;
  let reader: ReadEventsService;
  let submitter: SubmitEventsService;

  beforeAll(async () => {
    db = await createTestDatabase('ingest_read', { migrations: INGEST_MIGRATIONS });
    repo = new EventQueueRepository(db.pool);
    reader = new ReadEventsService(repo);
    submitter = new SubmitEventsService(repo, { backlogLimit: 20_000, now: async () => new Date('2025-05-01T12:00:00.000Z') });
  });
  afterAll(async () => db?.drop());

  it('gets an EventStatus by id; another tenant gets 404', async () => {
    const [r] = (await submitter.submit('P-read', [{ event: paid('O-1', { id: 'evt-1' }) }])).results;
    await expect(reader.get('P-read', r.id)).resolves.toEqual({
      id: r.id, type: 'order.paid', status: 'queued', error: null, ledger_entry_ids: [],
      received_at: '2025-05-01T12:00:00.000Z', processed_at: null, order_ref: 'O-1', idempotency_key: 'evt-1',
    });
    const other = await rejection(reader.get('P-read-other', r.id));
    expect(other.problem.slug).toBe('not-found');
    expect((await rejection(reader.get('P-read', 'EV-NOPE'))).status).toBe(404);
  });

  it('lists newest first with filters; a cursor walk never skips or repeats while rows are inserted', async () => {
    const tenant = 'P-list';
    for (let i = 0; i < 12; i++) {
      await submitter.submit(tenant, [{ event: i % 3 === 0 ? { type: 'order.cancelled', order_ref: `O-${i % 4}` } : paid(`O-${i % 4}`, { id: `e-${i}` }) }]);
    }
    await db.pool.query(`update ingest.events set status = 'failed', error = 'nope' where tenant = $1 and idempotency_key in ('e-1', 'e-2')`, [tenant]);
    const all = await reader.list(tenant, { limit: 100 });
    expect(all.data).toHaveLength(12);
    expect(all.pagination.cursor).toBeNull();
    const seqOrder = (await db.pool.query('select id from ingest.events where tenant = $1 order by seq desc', [tenant])).rows.map((r) => r.id);
    expect(all.data.map((e) => e.id)).toEqual(seqOrder);

    expect((await reader.list(tenant, { status: 'failed' })).data.map((e) => e.idempotency_key)).toEqual(['e-2', 'e-1']);
    expect((await reader.list(tenant, { order_ref: 'O-1' })).data.every((e) => e.order_ref === 'O-1')).toBe(true);
    expect((await reader.list(tenant, { order_ref: 'O-1' })).data).toHaveLength(3);
    expect((await reader.list(tenant, { type: 'order.cancelled' })).data.map((e) => e.type)).toEqual(Array(4).fill('order.cancelled'));
    expect((await reader.list(tenant, { type: 'order.cancelled', order_ref: 'O-0' })).data).toHaveLength(1);
    expect((await reader.list(tenant)).data).toHaveLength(12); // default 25

    const seen: string[] = [];
    let cursor: string | undefined;
    let inserted = 0;
    do {
      const page = await reader.list(tenant, { limit: 5, cursor });
      seen.push(...page.data.map((e) => e.id));
      await submitter.submit(tenant, [{ event: paid(`NEW-${inserted++}`) }]); // newer rows appear during the walk
      cursor = page.pagination.cursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(seqOrder);
    expect(new Set(seen).size).toBe(12);
  });

  it('refuses a forged cursor and a bad limit with 422', async () => {
    expect((await rejection(reader.list('P-list', { cursor: 'not-a-cursor' }))).problem.errors).toEqual([{ path: '/cursor', message: 'cursor is not valid' }]);
    const forged = Buffer.from(JSON.stringify(['1; drop table x'])).toString('base64url');
    expect((await rejection(reader.list('P-list', { cursor: forged }))).problem.slug).toBe('validation');
    expect((await rejection(reader.list('P-list', { limit: 101 }))).problem.errors![0].path).toBe('/limit');
  });
});
