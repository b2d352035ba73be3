import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { eventually, sleep } from '@loyalty/testing';
import { TestApp, startTestApp } from './testing/harness';
import { Distributed, DistributedApp, startDistributed } from './testing/distributed';

/**
 * Exactly-once under crashes, in the distributed topology: the gateway and every service are
 * separate processes over the real Kafka broker (tools/distributed/run.sh). A process is killed
 * with SIGKILL (from outside, or by itself at a named crash point: LOYALTY_CRASH_POINT, see
 * libs/runtime/src/crash-point.ts) in the middle of a command, restarted, and the retry (Kafka
 * redelivering the uncommitted request, the ingest worker re-sending, or the client retrying
 * with its Idempotency-Key) must neither lose nor repeat an effect.
 *
 * Needs `npm run build` first and a broker at KAFKA_BROKERS (npm test provides both).
 */
const RATE_PCT = 10;
const RULES = [{ id: 'base', name: `Base ${RATE_PCT} %`, type: 'base', earn_rate_pct: RATE_PCT, timing: 'paid' }];
const earnOn = (gross: number) => Math.floor((gross * RATE_PCT) / 100);
const BUS_TIMEOUT_MS = 120_000;

type Entry = { id: string; type: string; status: string; amount_cents: number; order_ref?: string | null; parent_entry_id: string | null };
type EventStatus = { id: string; status: string; error: string | null; ledger_entry_ids: string[] };
type OrderEvent = { type: 'order.paid'; order_ref: string; gross_cents: number; email: string };

describe('exactly-once under crashes (distributed over Kafka)', () => {
  let dist: Distributed;
  let app: TestApp;
  let key: string;
  let tenant: string;
  /** Apps a test started with a crash point or a short bus timeout: healed after it, whatever happened. */
  const tampered = new Set<DistributedApp>();

  const sql = async <R extends Record<string, unknown>>(text: string, params: unknown[] = []): Promise<R[]> => {
    const c = new Client({ connectionString: dist.databaseUrl });
    await c.connect();
    try {
      return (await c.query<R>(text, params)).rows;
    } finally {
      await c.end();
    }
  };

  const restartWith = async (appName: DistributedApp, env: Record<string, string>) => {
    tampered.add(appName);
    await dist.restart(appName, env);
  };
  /** Back to the topology's own environment (no crash point, the suite's bus timeout). */
  const restartClean = async (appName: DistributedApp) => {
    await dist.restart(appName);
    tampered.delete(appName);
  };

  const enrol = async (email: string): Promise<string> => {
    const r = await app.http('POST', '/v1/members', { key, body: { email } });
    expect(r.status).toBe(201);
    return r.body.data.id;
  };
  const member = async (id: string) => {
    const r = await app.http('GET', `/v1/members/${id}`, { key });
    expect(r.status).toBe(200);
    return r.body.data as { id: string; state: string; balances: Record<string, number> };
  };
  const ledger = async (id: string): Promise<Entry[]> => {
    const r = await app.http('GET', `/v1/members/${id}/ledger?limit=200`, { key });
    expect(r.status).toBe(200);
    expect(r.body.pagination.cursor).toBeNull();
    return r.body.data;
  };
  const postEvents = async (events: OrderEvent[]): Promise<string[]> => {
    const r = await app.http('POST', '/v1/events', { key, body: { events } });
    expect(r.status).toBe(202);
    expect(r.body.data.every((x: { accepted: boolean }) => x.accepted)).toBe(true);
    return r.body.data.map((x: { id: string }) => x.id);
  };
  const eventStatus = async (id: string): Promise<EventStatus> => {
    const r = await app.http('GET', `/v1/events/${id}`, { key });
    expect(r.status).toBe(200);
    return r.body.data;
  };
  /** Waits until every event has finished, then requires each to have completed. */
  const allCompleted = async (ids: string[], timeoutMs = 240_000): Promise<EventStatus[]> => {
    const done = await eventually(async () => {
      const all = await Promise.all(ids.map(eventStatus));
      const open = all.filter((e) => e.status === 'queued' || e.status === 'running');
      if (open.length) throw new Error(`${open.length} of ${ids.length} events still open: ${open.map((e) => `${e.id}=${e.status}`).join(', ')}`);
      return all;
    }, { timeoutMs, intervalMs: 250 });
    expect(done.map((e) => [e.status, e.error])).toEqual(done.map(() => ['completed', null]));
    return done;
  };

  /**
   * The exactly-once proof for a member and its orders: one earn per order (in the API ledger AND
   * in the event store, so it is not a projection hiding a duplicate), of the rule's amount; each
   * event names that earn; one step per order stream; balances are the sum of the entries.
   */
  const expectEarnedExactlyOnce = async (memberId: string, orders: OrderEvent[], statuses: EventStatus[], otherEntries: { cents: number } = { cents: 0 }) => {
    const entries = await ledger(memberId);
    const earns = entries.filter((e) => e.type === 'earn');
    const earnsByOrder = new Map<string, Entry[]>();
    for (const e of earns) earnsByOrder.set(e.order_ref!, [...(earnsByOrder.get(e.order_ref!) ?? []), e]);
    expect([...earnsByOrder.keys()].sort()).toEqual(orders.map((o) => o.order_ref).sort());
    for (const [i, o] of orders.entries()) {
      const mine = earnsByOrder.get(o.order_ref)!;
      expect(mine.map((e) => [e.amount_cents, e.status])).toEqual([[earnOn(o.gross_cents), 'posted']]);
      expect(statuses[i].ledger_entry_ids).toEqual([mine[0].id]);
    }
    expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);

    const recorded = await sql<{ id: string; order_ref: string; n: number }>(
      `select data->>'id' as id, data->>'order_ref' as order_ref, count(*)::int as n from es.events
        where stream_id like $1 and type = 'EntryRecorded' and data->>'type' = 'earn' group by 1, 2`, [`member-${tenant}-%${memberId}`]);
    expect(recorded.map((r) => [r.order_ref, r.n]).sort()).toEqual(orders.map((o) => [o.order_ref, 1]).sort());
    const steps = await sql<{ stream_id: string; n: number }>(
      `select stream_id, count(*)::int as n from es.events where stream_id = any($1::text[]) group by 1`,
      [orders.map((o) => `order-${tenant}-${o.order_ref}`)]);
    expect(steps.map((s) => s.n)).toEqual(orders.map(() => 1));

    const m = await member(memberId);
    const total = orders.reduce((a, o) => a + earnOn(o.gross_cents), 0);
    const posted = entries.filter((e) => e.status === 'posted' || e.status === 'reversed').reduce((a, e) => a + e.amount_cents, 0);
    expect(m.balances.available_cents).toBe(posted);
    expect(m.balances.available_cents).toBe(total + otherEntries.cents);
    expect(m.balances.lifetime_earned_cents).toBe(total + Math.max(0, otherEntries.cents));
    expect(m.balances.pending_cents).toBe(0);
    expect(m.balances.spendable_cents).toBe(m.balances.available_cents - m.balances.reserved_cents);
  };

  /** How many times the ingest worker sent each event to the ledger. */
  const attempts = async (ids: string[]): Promise<number[]> => {
    const rows = await sql<{ id: string; attempts: number }>('select id, attempts from ingest.events where tenant = $1 and id = any($2::text[])', [tenant, ids]);
    const by = new Map(rows.map((r) => [r.id, r.attempts]));
    return ids.map((id) => by.get(id) ?? -1);
  };

  const ordersFor = (email: string, tag: string, n: number): OrderEvent[] =>
    Array.from({ length: n }, (_, i) => ({ type: 'order.paid', order_ref: `${tag}-${i}`, gross_cents: 1_000 * (i + 1) + 37 * i + 9, email }));

  beforeAll(async () => {
    // A caller waits 2 minutes for a reply (default 30 s): long enough that ingest never re-sends
    // while a test restarts the ledger, so an event completed at its first attempt was answered by
    // Kafka redelivering the original request to the new ledger process.
    // The ingest worker runs 8 events at once (default 32), so 20 orders of one test are partly running, partly queued.
    dist = await startDistributed({ env: { LOYALTY_BUS_TIMEOUT_MS: String(BUS_TIMEOUT_MS), LOYALTY_INGEST_CONCURRENCY: '8' } });
    app = await startTestApp({}, dist);
    const p = await app.createProgram({ rules: RULES });
    tenant = p.programId;
    const k = await app.admin('POST', `/admin/v1/programs/${tenant}/keys`, { mode: 'live', scopes: ['read', 'act', 'ingest'], rate_limit: { burst: 10_000, per_second: 10_000 } });
    expect(k.status).toBe(201);
    key = k.body.data.key;
  }, 1_200_000); // may first wait (up to 15 min) for another distributed topology on the broker to finish

  afterEach(async () => {
    // a failed test must not leave an armed crash point or a dead process to the next one
    if (!dist) return;
    for (const name of ['ledger', 'ingest', 'redemption', 'gateway'] as DistributedApp[]) {
      if (tampered.has(name) || !dist.alive(name)) await restartClean(name);
    }
  }, 300_000);

  afterAll(async () => {
    await dist?.close();
  }, 120_000);

  describe('Issue 3: a Kafka redelivery after a consumer crash credits exactly once', () => {
    it.each([
      ['ledger.event.process:after-member-append', 'the member stream has the earn, the order stream does not know it yet'],
      ['ledger.event.process:after-order-append', 'both streams have it, no reply was sent and no offset committed'],
    ])('the ledger dies at %s (%s); after a restart every order earned once', async (point) => {
      const tag = `crash-${point.split(':')[1]}-${randomUUID().slice(0, 8)}`;
      const email = `${tag}@example.com`;
      const memberId = await enrol(email);
      await restartWith('ledger', { LOYALTY_CRASH_POINT: point });
      const crashedPid = dist.pid('ledger');
      const orders = ordersFor(email, tag, 8);
      const ids = await postEvents(orders);

      await dist.waitForExit('ledger', 120_000);
      expect(dist.log('ledger')).toContain(`crash point ${point} reached`);

      // the crash really happened inside the window: an order half-done, its event still running
      const earned = await sql<{ order_ref: string }>(
        `select data->>'order_ref' as order_ref from es.events where stream_id like $1 and type = 'EntryRecorded' and data->>'type' = 'earn'`,
        [`member-${tenant}-%${memberId}`]);
      const stepped = await sql<{ stream_id: string }>('select distinct stream_id from es.events where stream_id like $1', [`order-${tenant}-${tag}-%`]);
      const running = await sql<{ order_ref: string }>(`select order_ref from ingest.events where tenant = $1 and order_ref like $2 and status <> 'completed'`, [tenant, `${tag}-%`]);
      const steppedRefs = new Set(stepped.map((s) => s.stream_id.slice(`order-${tenant}-`.length)));
      const halfDone = point.endsWith('after-member-append')
        ? earned.filter((e) => !steppedRefs.has(e.order_ref)) // earned on the member, unknown to the order
        : running.filter((r) => steppedRefs.has(r.order_ref)); // recorded on both streams, not answered
      expect(halfDone.length).toBeGreaterThanOrEqual(1);
      expect(running.length).toBeGreaterThanOrEqual(1);

      await restartClean('ledger');
      expect(dist.pid('ledger')).not.toBe(crashedPid);
      const statuses = await allCompleted(ids);
      await expectEarnedExactlyOnce(memberId, orders, statuses);
      // sent once each: the half-done one was finished by Kafka redelivering its request, not by an ingest retry
      expect(await attempts(ids)).toEqual(ids.map(() => 1));
      // the same events again are replays (the idempotency keys), and change nothing
      const again = await app.http('POST', '/v1/events', { key, body: { events: orders } });
      expect(again.status).toBe(202);
      expect(again.body.data.map((x: { id: string; replayed: boolean }) => [x.id, x.replayed])).toEqual(ids.map((id) => [id, true]));
      await expectEarnedExactlyOnce(memberId, orders, statuses);
    }, 600_000);

    it('the ledger is killed (kill -9) while order events stream in; after a restart every order earned once', async () => {
      const tag = `kill9-${randomUUID().slice(0, 8)}`;
      const email = `${tag}@example.com`;
      const memberId = await enrol(email);
      const orders = ordersFor(email, tag, 40);
      const batches = Array.from({ length: 8 }, (_, i) => orders.slice(i * 5, i * 5 + 5));
      const ids: string[] = [];
      for (const b of batches.slice(0, 4)) {
        ids.push(...(await postEvents(b)));
        await sleep(30);
      }
      await dist.kill('ledger');
      // accepted while the ledger is dead: they can only complete after the restart
      const afterKill: string[] = [];
      for (const b of batches.slice(4)) afterKill.push(...(await postEvents(b)));
      ids.push(...afterKill);
      await sleep(1_000);
      const stillOpen = await Promise.all(afterKill.map(eventStatus));
      expect(stillOpen.filter((e) => e.status === 'completed')).toEqual([]);

      await restartClean('ledger');
      const statuses = await allCompleted(ids);
      await expectEarnedExactlyOnce(memberId, orders, statuses);
      expect(await attempts(ids)).toEqual(ids.map(() => 1));
    }, 600_000);
  });

  describe('Issue 4: killing the redemption process between its event-store append and its reply', () => {
    it('a retry with the same Idempotency-Key gets the original redemption; the member was debited once', async () => {
      const memberId = await enrol(`redeem-${randomUUID().slice(0, 8)}@example.com`);
      const seed = await app.http('POST', `/v1/members/${memberId}/adjust`, { key, body: { amount_cents: 10_000, reason_code: 'seed' } });
      expect(seed.status).toBe(201);
      // the gateway gives up on a reply after 5 s (503) instead of the suite's 2 minutes; the redemption process dies after its append
      await Promise.all([
        restartWith('gateway', { LOYALTY_BUS_TIMEOUT_MS: '5000' }),
        restartWith('redemption', { LOYALTY_CRASH_POINT: 'redemption.create:after-append' }),
      ]);
      const idem = `redeem-${randomUUID()}`;
      const body = { amount_cents: 2_500 };
      const redeem = () => app.http('POST', `/v1/members/${memberId}/redemptions`, { key, body, headers: { 'idempotency-key': idem } });

      const first = await redeem();
      expect(first.status).toBe(503);
      expect(first.body.type).toMatch(/#unavailable$/);
      await dist.waitForExit('redemption', 30_000);
      expect(dist.log('redemption')).toContain('crash point redemption.create:after-append reached');

      // what the dead process appended: one voucher, one debit
      const issued = await sql<{ redemption_id: string; code: string; amount_cents: number }>(
        `select data->>'redemption_id' as redemption_id, data->>'code' as code, (data->>'amount_cents')::int as amount_cents
           from es.events where stream_id like $1 and type = 'VoucherIssued'`, [`member-${tenant}-%${memberId}`]);
      expect(issued).toHaveLength(1);
      expect(issued[0].amount_cents).toBe(2_500);
      expect((await member(memberId)).balances).toMatchObject({ available_cents: 7_500, lifetime_redeemed_cents: 2_500 });

      await restartClean('redemption');
      // the client retries a 503 with the same key (interface-spec "Errors"); until the service is back that may be another 503
      const retried = await eventually(async () => {
        const r = await redeem();
        expect(r.status).toBe(201);
        return r;
      }, { timeoutMs: 60_000, intervalMs: 500 });
      expect(retried.body.data).toMatchObject({ id: issued[0].redemption_id, code: issued[0].code, amount_cents: 2_500, mode: 'voucher', status: 'created' });

      // once answered, the gateway replays the stored response
      const replay = await redeem();
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replay')).toBe('true');
      expect(replay.body.data.id).toBe(issued[0].redemption_id);

      // the voucher is fully there: by id, by code (the read model caught up), and debited once
      const byId = await app.http('GET', `/v1/redemptions/${issued[0].redemption_id}`, { key });
      expect(byId.status).toBe(200);
      const byCode = await app.http('GET', `/v1/redemptions?code=${issued[0].code}`, { key });
      expect(byCode.status).toBe(200);
      expect(byCode.body.data).toMatchObject({ id: issued[0].redemption_id, member_id: memberId, valid: true });
      const entries = await ledger(memberId);
      expect(entries.filter((e) => e.type === 'redeem').map((e) => [e.amount_cents, e.status])).toEqual([[-2_500, 'posted']]);
      const again = await sql<{ n: number }>(`select count(*)::int as n from es.events where stream_id like $1 and type = 'VoucherIssued'`, [`member-${tenant}-%${memberId}`]);
      expect(again[0].n).toBe(1);
      const m = await member(memberId);
      expect(m.balances).toMatchObject({ available_cents: 7_500, spendable_cents: 7_500, lifetime_redeemed_cents: 2_500, lifetime_earned_cents: 10_000 });
      expect(entries.reduce((a, e) => a + e.amount_cents, 0)).toBe(m.balances.available_cents);
    }, 600_000);
  });

  describe('the ingest process is killed with events queued and running', () => {
    it('after a restart every event completes and every order earned once', async () => {
      const tag = `ingest-${randomUUID().slice(0, 8)}`;
      const email = `${tag}@example.com`;
      const memberId = await enrol(email);
      // with the ledger down the ingest worker's requests hang: its 8 slots run, the rest wait
      await dist.kill('ledger');
      const orders = ordersFor(email, tag, 20);
      const ids = await postEvents(orders);
      const byStatus = async () => {
        const rows = await sql<{ status: string; ids: string[] }>(
          // a claimed event keeps status 'queued' and holds a lease (issue 7): the API shows it as running
          `select case when status = 'queued' and locked_until is not null then 'running' else status end as status, array_agg(id) as ids
             from ingest.events where tenant = $1 and order_ref like $2 group by 1`, [tenant, `${tag}-%`]);
        return Object.fromEntries(rows.map((r) => [r.status, r.ids])) as Record<string, string[] | undefined>;
      };
      await eventually(async () => {
        const by = await byStatus();
        expect(by.running?.length).toBeGreaterThanOrEqual(1);
        expect(by.queued?.length).toBeGreaterThanOrEqual(1);
      }, { timeoutMs: 20_000, intervalMs: 100 });
      await dist.kill('ingest');
      // frozen now: what the dead worker held, and what it never got to
      const frozen = await byStatus();
      const running = frozen.running ?? [];
      expect(running.length).toBeGreaterThanOrEqual(1);
      expect(frozen.queued?.length).toBeGreaterThanOrEqual(1);
      expect(frozen.completed).toBeUndefined();

      // the ledger comes back first: it serves the dead worker's requests still in Kafka, replying to no one
      await restartClean('ledger');
      await restartClean('ingest');
      // the running ones come back when their lease lapses (120 s), are sent again, and replay
      const statuses = await allCompleted(ids, 420_000);
      await expectEarnedExactlyOnce(memberId, orders, statuses);
      // the dead worker's events were sent again by the new one
      const resent = await attempts(running);
      expect(resent.every((n) => n >= 2)).toBe(true);
    }, 900_000);
  });
});
