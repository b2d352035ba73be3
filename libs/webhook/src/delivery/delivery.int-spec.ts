import { randomUUID } from 'node:crypto';
import { IncomingHttpHeaders, Server, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { EVENT_STORE_MIGRATIONS, PROJECTION_MIGRATIONS, PostgresEventStore, ProjectionRunner } from '@loyalty/event-store';
import type { MemberEvent } from '@loyalty/domain-member';
import { newId, newWebhookSecret } from '@loyalty/platform';
import { PROGRAM_MIGRATIONS, ProgramStore } from '@loyalty/programs';
import { TestDatabase, createTestDatabase, eventually, sleep } from '@loyalty/testing';
import { EndpointsRepository } from '../endpoints/endpoints.repository';
import { programInfoSource } from '../events/program-info';
import { WebhookEventsProjection } from '../events/webhook-events.projection';
import { WEBHOOK_MIGRATIONS } from '../webhook.migrations';
import { DeliveryQueue } from './delivery.queue';
import { DeliveryWorker, DeliveryWorkerOptions } from './delivery.worker';
import { HttpSender } from './http-sender';

interface Hit { path: string; headers: IncomingHttpHeaders; body: string }

/** A receiver on 127.0.0.1 only. `/slow` never answers; `/redirect` answers 302; `/fail` 500; `/jitter` answers 200 after a random pause. */
const receiver = async () => {
  const hits: Hit[] = [];
  let connections = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      hits.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (path.startsWith('/slow')) return; // never answers
      if (path.startsWith('/redirect')) return void res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
      if (path.startsWith('/fail')) return void res.writeHead(500).end('down');
      const pause = path.startsWith('/jitter') ? Math.floor(Math.random() * 15) : 0;
      setTimeout(() => res.writeHead(204).end(), pause);
    });
  });
  server.on('connection', () => { connections++; });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    port, hits, connections: () => connections,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
};

describe('webhook delivery (real PostgreSQL, local receiver)', () => {
  let db: TestDatabase;
  let rx: Awaited<ReturnType<typeof receiver>>;
  const sender = new HttpSender();

  beforeAll(async () => {
    db = await createTestDatabase('webhook_delivery', { migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS, ...PROGRAM_MIGRATIONS, ...WEBHOOK_MIGRATIONS] });
    rx = await receiver();
  });
  afterAll(async () => {
    sender.close();
    await rx?.close();
    await db?.drop();
  });

  const tenant = () => `P-${randomUUID().replace(/-/g, '').slice(0, 26).toUpperCase()}_test`;
  const endpoint = async (t: string, path: string, events: string[] = ['balance.updated']) => {
    const secret = newWebhookSecret();
    const row = await new EndpointsRepository(db.pool).insert(t, { id: newId('WE'), url: `http://127.0.0.1:${rx.port}${path}`, events: events as never, secret });
    return { id: row.id, secret };
  };
  const worker = (queue: DeliveryQueue, over: Partial<DeliveryWorkerOptions> = {}) => new DeliveryWorker(queue, sender, {
    concurrency: 8, pollIntervalMs: 50, timeoutMs: 2000, leaseMs: 60_000, retrySchedule: [1, 1, 1], disableAfter: 20,
    breaker: { volumeThreshold: 1000, errorThresholdPercentage: 50, resetTimeoutMs: 30_000, rollingCountTimeoutMs: 60_000 },
    ...over,
  });

  describe('HttpSender', () => {
    it('in live mode never connects to a name that resolves to a private address (DNS rebinding)', async () => {
      const rebinding = new HttpSender(async () => ['127.0.0.1']);
      const before = rx.connections();
      const r = await rebinding.send({ url: `https://rebind.example:${rx.port}/x`, body: '{}', headers: {}, mode: 'live', timeoutMs: 2000 });
      rebinding.close();
      expect(r.ok).toBe(false);
      expect(r.status_code).toBeNull();
      expect(r.error).toMatch(/non-public/);
      expect(rx.connections()).toBe(before);
      // and an IP literal, checked before any connection
      const literal = await sender.send({ url: `https://10.0.0.1:${rx.port}/x`, body: '{}', headers: {}, mode: 'live', timeoutMs: 2000 });
      expect(literal).toMatchObject({ ok: false, status_code: null });
      expect(literal.error).toMatch(/not a public address/);
    });

    it('posts JSON in test mode, reports the status, does not follow redirects and enforces the timeout', async () => {
      const ok = await sender.send({ url: `http://127.0.0.1:${rx.port}/ok`, body: '{"a":1}', headers: { 'webhook-id': 'WD-1' }, mode: 'test', timeoutMs: 2000 });
      expect(ok).toMatchObject({ ok: true, status_code: 204, error: null });
      const hit = rx.hits.find((h) => h.headers['webhook-id'] === 'WD-1')!;
      expect(hit.body).toBe('{"a":1}');
      expect(hit.headers['content-type']).toBe('application/json');
      const redirect = await sender.send({ url: `http://127.0.0.1:${rx.port}/redirect`, body: '{}', headers: {}, mode: 'test', timeoutMs: 2000 });
      expect(redirect).toMatchObject({ ok: false, status_code: 302 });
      const started = Date.now();
      const slow = await sender.send({ url: `http://127.0.0.1:${rx.port}/slow`, body: '{}', headers: {}, mode: 'test', timeoutMs: 300 });
      expect(slow).toMatchObject({ ok: false, status_code: null });
      expect(slow.error).toMatch(/timed out/);
      expect(Date.now() - started).toBeLessThan(2000);
    });
  });

  describe('queue and worker', () => {
    it('creates one delivery per cause and endpoint however often it is enqueued', async () => {
      const t = tenant();
      const ep = await endpoint(t, '/ok/once');
      const queue = new DeliveryQueue(db.pool);
      const add = () => queue.enqueue(db.pool, { tenant: t, endpointId: ep.id, sourceKey: 'event-1:balance.updated', subject: 'M-1', kind: 'balance.updated', body: (id) => JSON.stringify({ id }) });
      expect(await add()).toBe(true);
      expect(await add()).toBe(false);
      const { rows } = await db.pool.query('select count(*)::int as n from webhook.deliveries where tenant = $1', [t]);
      expect(rows[0].n).toBe(1);
    });

    it('delivers signed, keeps one subject in order across 8 workers, and records attempts', async () => {
      const t = tenant();
      const ep = await endpoint(t, '/jitter/order');
      const queue = new DeliveryQueue(db.pool);
      for (let i = 0; i < 30; i++) {
        for (const subject of ['M-A', 'M-B']) {
          await queue.enqueue(db.pool, { tenant: t, endpointId: ep.id, sourceKey: `${subject}:${i}`, subject, kind: 'balance.updated', body: (id) => JSON.stringify({ id, subject, i }) });
        }
      }
      const w = worker(queue);
      w.start();
      try {
        await eventually(() => expect(rx.hits.filter((h) => h.path === '/jitter/order')).toHaveLength(60), { timeoutMs: 20_000 });
      } finally {
        await w.stop();
      }
      const got = rx.hits.filter((h) => h.path === '/jitter/order');
      for (const subject of ['M-A', 'M-B']) {
        const seq = got.map((h) => JSON.parse(h.body)).filter((b) => b.subject === subject).map((b) => b.i);
        expect(seq).toEqual([...Array(30).keys()]);
      }
      for (const h of got) {
        new Webhook(ep.secret).verify(h.body, { 'webhook-id': String(h.headers['webhook-id']), 'webhook-timestamp': String(h.headers['webhook-timestamp']), 'webhook-signature': String(h.headers['webhook-signature']) });
      }
      const { rows } = await db.pool.query(
        `select count(*) filter (where d.status = 'delivered')::int as delivered, count(a.*)::int as attempts
         from webhook.deliveries d left join webhook.attempts a on a.tenant = d.tenant and a.delivery_id = d.id where d.tenant = $1`, [t]);
      expect(rows[0]).toEqual({ delivered: 60, attempts: 60 });
    });

    it('sends again what a crashed worker held once its lease lapses (at least once)', async () => {
      const t = tenant();
      const ep = await endpoint(t, '/ok/lease');
      const queue = new DeliveryQueue(db.pool);
      await queue.enqueue(db.pool, { tenant: t, endpointId: ep.id, sourceKey: 'x', subject: 'M-1', kind: 'balance.updated', body: (id) => JSON.stringify({ id }) });
      const [held] = await queue.claim(1, 60_000, []);
      expect(held.endpoint_id).toBe(ep.id);
      // the worker "crashes": its lease ends in the past
      await db.pool.query(`update webhook.deliveries set locked_until = now() - interval '1 second' where tenant = $1`, [t]);
      const w = worker(queue, { pollIntervalMs: 20 });
      w.start();
      try {
        await eventually(() => expect(rx.hits.filter((h) => h.path === '/ok/lease')).toHaveLength(1), { timeoutMs: 10_000 });
      } finally {
        await w.stop();
      }
      expect(rx.hits.find((h) => h.path === '/ok/lease')!.headers['webhook-id']).toBe(held.id);
    });

    it('an open circuit breaker stops attempts to a dead receiver without counting them', async () => {
      const t = tenant();
      const ep = await endpoint(t, '/fail/breaker');
      const queue = new DeliveryQueue(db.pool);
      for (let i = 0; i < 12; i++) {
        await queue.enqueue(db.pool, { tenant: t, endpointId: ep.id, sourceKey: `b:${i}`, subject: `M-${i}`, kind: 'balance.updated', body: (id) => JSON.stringify({ id }) });
      }
      const w = worker(queue, {
        concurrency: 1, retrySchedule: [600], disableAfter: 100,
        breaker: { volumeThreshold: 3, errorThresholdPercentage: 50, resetTimeoutMs: 60_000, rollingCountTimeoutMs: 60_000 },
      });
      w.start();
      try {
        await eventually(() => expect(rx.hits.filter((h) => h.path === '/fail/breaker').length).toBeGreaterThanOrEqual(3), { timeoutMs: 10_000 });
        await sleep(800);
      } finally {
        await w.stop();
      }
      const attempted = rx.hits.filter((h) => h.path === '/fail/breaker').length;
      expect(attempted).toBeLessThanOrEqual(4);
      const { rows } = await db.pool.query<{ failure_count: number }>('select failure_count from webhook.endpoints where tenant = $1', [t]);
      expect(rows[0].failure_count).toBe(attempted);
      const untouched = await db.pool.query(`select count(*)::int as n from webhook.deliveries where tenant = $1 and status = 'pending' and attempts = 0`, [t]);
      expect(untouched.rows[0].n).toBe(12 - attempted);
    });
  });

  describe('event projection', () => {
    it('queues each webhook once per event and endpoint, even when the subscription replays everything', async () => {
      const store = new PostgresEventStore(db.pool, 50);
      const t = tenant();
      const ep = await endpoint(t, '/ok/projection', ['member.enrolled', 'ledger.entry.created', 'balance.updated']);
      const memberId = newId('M');
      const at = new Date().toISOString();
      const events: MemberEvent[] = [
        { type: 'MemberCreated', data: { member_id: memberId, state: 'registered', referral_code: 'ABCDEFGH', pii: { v: 1, kid: memberId, iv: '', tag: '', data: '' }, marketing_consent: false, accepted_terms_version: null, at } },
        { type: 'EntryRecorded', data: { id: newId('LE'), type: 'adjust', status: 'posted', amount_cents: 700, reason_code: 'x', rule: null, parent_entry_id: null, release_at: null, expires_at: null, created_at: at, order_ref: null, cause: 'c1' } },
      ];
      const appended = await store.append(`member-${t}-${memberId}`, events.map((e) => ({ id: randomUUID(), ...e })), 'no_stream');
      const projection = new WebhookEventsProjection(store, new EndpointsRepository(db.pool), new DeliveryQueue(db.pool), programInfoSource(new ProgramStore(db.pool)));
      const runner = new ProjectionRunner(store, db.pool, projection);
      await runner.start();
      const count = async () => (await db.pool.query<{ kind: string }>('select kind from webhook.deliveries where tenant = $1 order by seq', [t])).rows.map((r) => r.kind);
      try {
        await runner.waitFor(appended.position, 20_000);
        expect(await count()).toEqual(['member.enrolled', 'ledger.entry.created', 'balance.updated']);
        projection.reset();
        await runner.rebuild();
        await runner.waitFor(appended.position, 20_000);
        expect(await count()).toEqual(['member.enrolled', 'ledger.entry.created', 'balance.updated']);
      } finally {
        await runner.stop();
        await store.close();
      }
      const body = JSON.parse((await db.pool.query<{ payload: string }>(`select payload from webhook.deliveries where tenant = $1 and kind = 'balance.updated'`, [t])).rows[0].payload);
      expect(body).toMatchObject({ type: 'balance.updated', livemode: false, data: { id: memberId, balances: { available_cents: 700 } } });
      expect(body.id).toMatch(/^WD-/);
      expect(ep.id).toMatch(/^WE-/);
    });
  });
});
