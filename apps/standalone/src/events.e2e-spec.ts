import { Client } from 'pg';
import { eventually } from '@loyalty/testing';
import { TestApp, startTestApp } from './testing/harness';

const paid = (order_ref: string, extra: Record<string, unknown> = {}) => ({ type: 'order.paid', order_ref, gross_cents: 2500, email: 'ada@example.com', ...extra });
const EVENT_ID = /^EV-[0-9A-Z]{26}$/;
const fast = { burst: 10_000, per_second: 10_000 };

describe('events over HTTP (standalone)', () => {
  let app: TestApp;
  let programId: string;
  let key: string;
  let testKey: string;
  let otherKey: string;
  let readOnlyKey: string;

  beforeAll(async () => {
    app = await startTestApp();
    const p = await app.createProgram();
    programId = p.programId;
    const issue = async (pid: string, mode: 'live' | 'test', scopes: string[]) => {
      const r = await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode, scopes, rate_limit: fast });
      expect(r.status).toBe(201);
      return r.body.data.key as string;
    };
    key = await issue(programId, 'live', ['ingest', 'read']);
    testKey = await issue(programId, 'test', ['ingest', 'read']);
    readOnlyKey = await issue(programId, 'live', ['read']);
    otherKey = await issue((await app.createProgram()).programId, 'live', ['ingest', 'read']);
  });
  afterAll(async () => app?.close());

  it('403 insufficient-scope without the ingest scope', async () => {
    const r = await app.http('POST', '/v1/events', { key: readOnlyKey, body: paid('SCOPE-1') });
    expect(r.status).toBe(403);
    expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(r.body).toMatchObject({ status: 403, type: 'https://loyalty.test/docs/api/errors#insufficient-scope' });
  });

  it('401 without a key', async () => {
    expect((await app.http('POST', '/v1/events', { body: paid('NOKEY-1') })).status).toBe(401);
  });

  it('a single event: 202 EventAccepted, then 200 replayed with the original for the same derived key', async () => {
    const first = await app.http('POST', '/v1/events', { key, body: paid('ORD-1') });
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ data: { id: expect.stringMatching(EVENT_ID), type: 'order.paid', status: 'queued', replayed: false } });
    const again = await app.http('POST', '/v1/events', { key, body: paid('ORD-1', { gross_cents: 1 }) });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ id: first.body.data.id, type: 'order.paid', replayed: true });
    // a different type of the same order is another event
    const placed = await app.http('POST', '/v1/events', { key, body: { ...paid('ORD-1'), type: 'order.placed' } });
    expect(placed.status).toBe(202);
    expect(placed.body.data.id).not.toBe(first.body.data.id);
  });

  it('the queued event keeps the request id it was sent with (its processing runs as part of that request)', async () => {
    const r = await app.http('POST', '/v1/events', { key, body: paid('REQ-ID-1'), headers: { 'x-request-id': 'evt-req-77' } });
    expect(r.status).toBe(202);
    const db = new Client({ connectionString: app.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query('select trace from ingest.events where id = $1', [r.body.data.id]);
      expect(rows).toEqual([{ trace: { 'x-request-id': 'evt-req-77' } }]);
    } finally {
      await db.end();
    }
  });

  it('the Idempotency-Key header names a single event; over 128 characters is a 422', async () => {
    const headers = { 'Idempotency-Key': 'hdr-key-1' };
    const a = await app.http('POST', '/v1/events', { key, body: paid('HDR-1'), headers });
    const b = await app.http('POST', '/v1/events', { key, body: paid('HDR-2'), headers });
    expect([a.status, b.status]).toEqual([202, 200]);
    expect(b.body.data).toMatchObject({ id: a.body.data.id, replayed: true });
    const long = await app.http('POST', '/v1/events', { key, body: paid('HDR-3'), headers: { 'Idempotency-Key': 'k'.repeat(129) } });
    expect(long.status).toBe(422);
    expect(long.body.errors).toEqual([{ path: '/headers/idempotency-key', message: expect.any(String) }]);
    const onBatch = await app.http('POST', '/v1/events', { key, body: { events: [paid('HDR-4')] }, headers });
    expect(onBatch.status).toBe(422);
    expect(onBatch.body.errors[0].path).toBe('/headers/idempotency-key');
  });

  it('the same event sent 10 times at once makes one event', async () => {
    const results = await Promise.all(Array.from({ length: 10 }, () => app.http('POST', '/v1/events', { key, body: paid('RACE-1', { id: 'race-evt-1' }) })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 202]);
    expect(new Set(results.map((r) => r.body.data.id)).size).toBe(1);
    const list = await app.http('GET', '/v1/events?order_ref=RACE-1', { key });
    expect(list.body.data).toHaveLength(1);
  });

  it('a batch: 202 with a BatchEventResult per event; a repeated id replays', async () => {
    const events = [
      { type: 'customer.created', email: 'grace@example.com', phone: '+14155550100', id: 'b-cust-1' },
      paid('BATCH-1', { id: 'b-1', lines: [{ amount_cents: 2000, tags: ['shoes'] }, { amount_cents: 500, gift_card: true }] }),
      { type: 'order.refunded', order_ref: 'BATCH-1', refund_ref: 'R-1', refunded_cents: 100 },
      paid('BATCH-1', { id: 'b-1' }),
    ];
    const r = await app.http('POST', '/v1/events', { key, body: { events } });
    expect(r.status).toBe(202);
    expect(r.body.data).toHaveLength(4);
    r.body.data.forEach((x: Record<string, unknown>, index: number) =>
      expect(x).toEqual({ index, accepted: true, id: expect.stringMatching(EVENT_ID), status: expect.any(String), replayed: index === 3, errors: [] }));
    expect(r.body.data[3].id).toBe(r.body.data[1].id);
    const resent = await app.http('POST', '/v1/events', { key, body: { events: events.slice(0, 2) } });
    expect(resent.status).toBe(202);
    expect(resent.body.data.map((x: { replayed: boolean }) => x.replayed)).toEqual([true, true]);
    expect(resent.body.data.map((x: { id: string }) => x.id)).toEqual([r.body.data[0].id, r.body.data[1].id]);
  });

  it('422 validation with JSON-pointer paths; an invalid event refuses its whole batch', async () => {
    const single = await app.http('POST', '/v1/events', { key, body: paid('BAD-1', { gross_cents: -1 }) });
    expect(single.status).toBe(422);
    expect(single.body).toMatchObject({ type: 'https://loyalty.test/docs/api/errors#validation', status: 422 });
    expect(single.body.errors.map((e: { path: string }) => e.path)).toEqual(['/gross_cents']);

    const events = [paid('BAD-B-0'), paid('BAD-B-1'), paid('BAD-B-2'), paid('BAD-B-3', { gross_cents: 10.5 }), paid('BAD-B-4')];
    const batch = await app.http('POST', '/v1/events', { key, body: { events } });
    expect(batch.status).toBe(422);
    expect(batch.body.errors).toEqual([{ path: '/events/3/gross_cents', message: expect.any(String) }]);
    expect((await app.http('GET', '/v1/events?order_ref=BAD-B-0', { key })).body.data).toEqual([]);

    const unknownField = await app.http('POST', '/v1/events', { key, body: paid('BAD-2', { points: 100 }) });
    expect(unknownField.status).toBe(422);
    expect(unknownField.body.errors).toEqual([{ path: '/points', message: 'unknown field points' }]);
    const unknownType = await app.http('POST', '/v1/events', { key, body: { type: 'order.shipped', order_ref: 'BAD-3' } });
    expect(unknownType.status).toBe(422);
    expect(unknownType.body.errors[0].path).toBe('/type');
    const customer = await app.http('POST', '/v1/events', { key, body: { type: 'customer.created', email: 'nope' } });
    expect(customer.body.errors[0].path).toBe('/email');
    const line = await app.http('POST', '/v1/events', { key, body: { events: [paid('BAD-4', { lines: [{ amount_cents: 5, quantity: 0 }] })] } });
    expect(line.body.errors.map((e: { path: string }) => e.path)).toEqual(['/events/0/lines/0/quantity']);
  });

  it('a batch holds 1 to 100 events: 0 and 101 are a 422 at /events; 100 is accepted', async () => {
    const of = (n: number, prefix: string) => ({ events: Array.from({ length: n }, (_, i) => paid(`${prefix}-${i}`)) });
    for (const n of [0, 101]) {
      const r = await app.http('POST', '/v1/events', { key, body: of(n, `SIZE${n}`) });
      expect(r.status).toBe(422);
      expect(r.body.errors.map((e: { path: string }) => e.path)).toEqual(['/events']);
    }
    const full = await app.http('POST', '/v1/events', { key, body: of(100, 'SIZE100') });
    expect(full.status).toBe(202);
    expect(full.body.data).toHaveLength(100);
    expect(full.body.data[99]).toMatchObject({ index: 99, accepted: true, replayed: false });
  });

  it('GET /v1/events/{id}: EventStatus; 404 for another programme, for the sandbox, and for an unknown id', async () => {
    const sent = await app.http('POST', '/v1/events', { key, body: paid('GET-1', { id: 'get-evt-1' }) });
    const id = sent.body.data.id;
    const r = await app.http('GET', `/v1/events/${id}`, { key });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      id, type: 'order.paid', status: expect.stringMatching(/^(queued|running|completed|failed)$/), error: r.body.data.error,
      ledger_entry_ids: expect.any(Array), received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      processed_at: r.body.data.processed_at, order_ref: 'GET-1', idempotency_key: 'get-evt-1',
    });
    for (const other of [otherKey, testKey]) {
      const hidden = await app.http('GET', `/v1/events/${id}`, { key: other });
      expect(hidden.status).toBe(404);
      expect(hidden.body.type).toBe('https://loyalty.test/docs/api/errors#not-found');
    }
    expect((await app.http('GET', '/v1/events/EV-00000000000000000000000000', { key })).status).toBe(404);
    // the sandbox keeps its own keys: the same event there is new
    const inSandbox = await app.http('POST', '/v1/events', { key: testKey, body: paid('GET-1', { id: 'get-evt-1' }) });
    expect(inSandbox.status).toBe(202);
    expect(inSandbox.body.data.id).not.toBe(id);
  });

  it('the worker hands events to the ledger: status completed with the ledger entries written', async () => {
    const { programId: pid } = await app.createProgram({ rules: [{ id: 'base', type: 'base', earn_rate_pct: 10, timing: 'immediate' }] });
    const k = (await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'live', scopes: ['ingest', 'read'], rate_limit: fast })).body.data.key;
    const sent = await app.http('POST', '/v1/events', { key: k, body: paid('WORK-1', { email: 'worker@example.com' }) });
    expect(sent.status).toBe(202);
    const done = await eventually(async () => {
      const s = (await app.http('GET', `/v1/events/${sent.body.data.id}`, { key: k })).body.data;
      expect(s.status).toBe('completed');
      return s;
    }, { timeoutMs: 15_000 });
    expect(done).toMatchObject({ error: null, ledger_entry_ids: [expect.stringMatching(/^LE-/)] });
    expect(Date.parse(done.processed_at)).toBeGreaterThanOrEqual(Date.parse(done.received_at));
    // a replay now shows the original's current status
    const again = await app.http('POST', '/v1/events', { key: k, body: paid('WORK-1', { email: 'worker@example.com' }) });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ id: sent.body.data.id, type: 'order.paid', status: 'completed', replayed: true });
  });

  it('GET /v1/events: newest first, filters status / order_ref / type, a cursor walk without skips or repeats', async () => {
    const { programId: pid } = await app.createProgram();
    const k = (await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'live', scopes: ['ingest', 'read'], rate_limit: fast })).body.data.key;
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const body = i % 3 === 0 ? { type: 'order.cancelled', order_ref: `L-${i % 2}`, id: `list-${i}` } : paid(`L-${i % 2}`, { id: `list-${i}` });
      ids.push((await app.http('POST', '/v1/events', { key: k, body })).body.data.id);
    }
    const newestFirst = [...ids].reverse();
    const all = await app.http('GET', '/v1/events', { key: k });
    expect(all.status).toBe(200);
    expect(all.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst);
    expect(all.body.pagination).toEqual({ cursor: null });
    expect(all.body.data[0]).toMatchObject({ order_ref: 'L-0', idempotency_key: 'list-6', type: 'order.cancelled' });

    const byOrder = await app.http('GET', '/v1/events?order_ref=L-1', { key: k });
    expect(byOrder.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst.filter((_, i) => (6 - i) % 2 === 1));
    const byType = await app.http('GET', '/v1/events?type=order.cancelled', { key: k });
    expect(byType.body.data.map((e: { id: string }) => e.id)).toEqual([ids[6], ids[3], ids[0]]);
    const statuses = ['queued', 'running', 'completed', 'failed'];
    const counts = await Promise.all(statuses.map(async (s) => (await app.http('GET', `/v1/events?status=${s}`, { key: k })).body.data.length));
    expect(counts.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(6); // statuses move while we look
    const bad = await app.http('GET', '/v1/events?status=done&limit=0', { key: k });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['/limit', '/status']);

    const seen: string[] = [];
    let cursor: string | null = null;
    let n = 0;
    do {
      const page: { status: number; body: { data: { id: string }[]; pagination: { cursor: string | null } } } =
        await app.http('GET', `/v1/events?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key: k });
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.data.map((e) => e.id));
      await app.http('POST', '/v1/events', { key: k, body: paid(`L-NEW-${n++}`) }); // inserted during the walk
      cursor = page.body.pagination.cursor;
    } while (cursor);
    expect(seen).toEqual(newestFirst);
    expect((await app.http('GET', '/v1/events?cursor=garbage', { key: k })).status).toBe(422);
    expect((await app.http('GET', '/v1/events', { key: readOnlyKey })).status).toBe(200);
  });
});

describe('event backlog over HTTP (LOYALTY_BACKLOG_LIMIT=3)', () => {
  let app: TestApp;
  let key: string;
  let otherKey: string;

  beforeAll(async () => {
    app = await startTestApp({ backlogLimit: 3 });
    const issue = async (pid: string) =>
      (await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'live', scopes: ['ingest', 'read'], rate_limit: fast })).body.data.key as string;
    key = await issue((await app.createProgram()).programId);
    otherKey = await issue((await app.createProgram()).programId);
  });
  afterAll(async () => app?.close());

  it('refuses new events with 429 backlog and Retry-After while more than the limit wait, accepting nothing', async () => {
    const fill = await app.http('POST', '/v1/events', { key, body: { events: Array.from({ length: 100 }, (_, i) => paid(`FILL-${i}`)) } });
    expect(fill.status).toBe(202);

    const single = await app.http('POST', '/v1/events', { key, body: paid('REFUSED-1') });
    expect(single.status).toBe(429);
    expect(single.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(single.body).toMatchObject({ type: 'https://loyalty.test/docs/api/errors#backlog', status: 429, reason: 'backlog' });

    const batch = await app.http('POST', '/v1/events', { key, body: { events: [paid('REFUSED-2'), paid('REFUSED-3')] } });
    expect(batch.status).toBe(429);
    expect(batch.body.reason).toBe('backlog');
    for (const ref of ['REFUSED-1', 'REFUSED-2', 'REFUSED-3']) {
      expect((await app.http('GET', `/v1/events?order_ref=${ref}`, { key })).body.data).toEqual([]);
    }
    // another programme is not held up
    expect((await app.http('POST', '/v1/events', { key: otherKey, body: paid('OTHER-1') })).status).toBe(202);
  });
});
