import { appendFileSync } from 'node:fs';
import { eventually, PrivateKafka, PrivatePostgres, sleep, startPrivateKafka, startPrivatePostgres } from '@loyalty/testing';
import { Distributed, DistributedApp, startDistributed } from './testing/distributed';
import { httpClient } from './testing/harness';

/**
 * Guard rail (issue 8): infrastructure faults under order traffic. The distributed topology runs
 * on a PostgreSQL cluster and a Kafka broker of this test's own (never the shared ones): the
 * broker is killed with SIGKILL and started again, then PostgreSQL is restarted, while a client
 * keeps sending order events (retrying each with its own id until it is accepted, as a merchant
 * would). Every accepted event must end `completed` and be credited exactly once.
 *
 * Needs `npm run build` first, Java 17 + Maven (tools/kafka) and PostgreSQL server binaries.
 */

const RATE_PCT = 10;
const RULES = [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: RATE_PCT, timing: 'immediate' }];
const ORDERS = Number(process.env.FAULT_ORDERS ?? 60);
const CUSTOMERS = 6;
const APPS: DistributedApp[] = ['gateway', 'ingest', 'ledger', 'redemption', 'referral', 'webhook'];

type Entry = { type: string; amount_cents: number; order_ref?: string | null };

describe('faults under order traffic (private PostgreSQL and Kafka)', () => {
  let pg: PrivatePostgres | undefined;
  let kafka: PrivateKafka | undefined;
  let dist: Distributed | undefined;
  const saved = { brokers: process.env.KAFKA_BROKERS, db: process.env.TEST_DATABASE_URL };

  beforeAll(async () => {
    [pg, kafka] = await Promise.all([startPrivatePostgres(), startPrivateKafka()]);
    // the topology (and its lock and fresh database) on the private servers
    process.env.KAFKA_BROKERS = kafka.brokers;
    process.env.TEST_DATABASE_URL = pg.url;
    dist = await startDistributed({ env: { LOYALTY_BUS_TIMEOUT_MS: '20000', KAFKA_TOPIC_PARTITIONS: '4' } });
  }, 600_000);

  afterAll(async () => {
    await dist?.close().catch(() => undefined);
    await kafka?.stop();
    await pg?.stop();
    if (saved.brokers === undefined) delete process.env.KAFKA_BROKERS; else process.env.KAFKA_BROKERS = saved.brokers;
    if (saved.db === undefined) delete process.env.TEST_DATABASE_URL; else process.env.TEST_DATABASE_URL = saved.db;
  }, 180_000);

  it('credits every accepted event exactly once across a broker kill and a PostgreSQL restart', async () => {
    const http = httpClient(dist!.url);
    const created = await http('POST', '/admin/v1/programs', { key: dist!.adminToken, body: { program_name: 'Faults', currency_name: 'points', rules: RULES } });
    expect(created.status).toBe(201);
    // a live key whose rate limit the test cannot reach: the final checks read every event, every
    // member and every ledger in a burst (the default key's bucket once answered 429 there)
    const minted = await http('POST', `/admin/v1/programs/${created.body.data.id}/keys`, { key: dist!.adminToken, body: { mode: 'live', rate_limit: { burst: 100_000, per_second: 100_000 } } });
    expect(minted.status).toBe(201);
    const key = minted.body.data.key as string;
    const email = (i: number) => `fault-${(i + CUSTOMERS) % CUSTOMERS}@example.com`;
    const gross = (i: number) => 1_000 + (i + 1) * 37;

    /** One order event, sent until the service accepts it (same id every time: a retry can never double it). */
    const accepted = new Map<number, string>();
    const faults: string[] = [];
    const send = async (i: number): Promise<void> => {
      const body = { id: `fault-ev-${i}`, type: 'order.paid', order_ref: `fault-o-${i}`, gross_cents: gross(i), email: email(i) };
      for (const deadline = Date.now() + 600_000; Date.now() < deadline;) {
        const r = await http('POST', '/v1/events', { key, body }).catch((e: Error) => ({ status: 0, body: { detail: e.message } }));
        if (r.status === 202 || r.status === 200) {
          accepted.set(i, r.body.data.id);
          return;
        }
        faults.push(`${i}: ${r.status} ${String(r.body?.detail ?? '').slice(0, 120)}`);
        if (process.env.FAULT_TRACE) appendFileSync(process.env.FAULT_TRACE, `${new Date().toISOString()} ${faults[faults.length - 1]}\n`);
        // an outage, never a refusal of a valid event
        if (![0, 500, 502, 503, 504, 429].includes(r.status)) throw new Error(`order ${i} refused: ${r.status} ${JSON.stringify(r.body)}`);
        // an outage that lasts because a process died fails at once, with its log, not after ten minutes
        const dead = APPS.filter((a) => !dist!.alive(a));
        if (dead.length) throw new Error(`order ${i} not accepted and ${dead.join(', ')} died:\n${dead.map((a) => dist!.log(a).slice(-1_500)).join('\n')}`);
        await sleep(500);
      }
      throw new Error(`order ${i} was never accepted; last answers: ${faults.slice(-5).join(' | ')}`);
    };

    // the topology works before anything breaks: one order goes all the way through
    await send(-1);
    await eventually(async () => expect((await http('GET', `/v1/events/${accepted.get(-1)}`, { key })).body.data.status).toBe('completed'), { timeoutMs: 120_000, intervalMs: 500 });

    let trafficError: unknown = null;
    const traffic = (async () => {
      for (let i = 0; i < ORDERS; i++) {
        await send(i);
        await sleep(150);
      }
    })().catch((e: unknown) => { trafficError = e; });

    const mark = (what: string) => { if (process.env.FAULT_TRACE) appendFileSync(process.env.FAULT_TRACE, `${new Date().toISOString()} ${what} (accepted ${accepted.size})\n`); };
    await sleep(2_000);
    mark('restarting PostgreSQL');
    await pg!.restart('fast');
    mark('PostgreSQL back');
    await sleep(3_000);
    mark('killing Kafka');
    await kafka!.kill();
    await sleep(3_000);
    await kafka!.start();
    mark('Kafka back');
    await traffic;
    mark('traffic done');
    expect(trafficError).toBeNull();
    expect(accepted.size).toBe(ORDERS + 1);
    // no process died of the faults (a dead service shows up below only as events that never complete)
    expect(APPS.filter((a) => !dist!.alive(a)).map((a) => `${a} died: ${dist!.log(a).slice(-1_500)}`)).toEqual([]);

    // every accepted event completes, with one ledger entry
    await eventually(async () => {
      for (const [i, id] of accepted) {
        const r = await http('GET', `/v1/events/${id}`, { key });
        expect({ i, status: r.body?.data?.status, error: r.body?.data?.error, entries: r.body?.data?.ledger_entry_ids?.length }).toEqual({ i, status: 'completed', error: null, entries: 1 });
      }
    }, { timeoutMs: 240_000, intervalMs: 2_000 });

    // and each order is credited exactly once, with the right amount
    for (let c = 0; c < CUSTOMERS; c++) {
      const m = (await http('GET', `/v1/members?email=${encodeURIComponent(email(c))}`, { key })).body.data[0];
      const ledger = (await http('GET', `/v1/members/${m.id}/ledger?limit=200`, { key })).body.data as Entry[];
      const mine = [...accepted.keys()].filter((i) => (i + CUSTOMERS) % CUSTOMERS === c);
      expect(ledger.filter((e) => e.type === 'earn').map((e) => e.order_ref).sort()).toEqual(mine.map((i) => `fault-o-${i}`).sort());
      for (const i of mine) {
        expect(ledger.find((e) => e.order_ref === `fault-o-${i}`)?.amount_cents).toBe(Math.floor((gross(i) * RATE_PCT) / 100));
      }
      const expected = mine.reduce((a, i) => a + Math.floor((gross(i) * RATE_PCT) / 100), 0);
      const member = (await http('GET', `/v1/members/${m.id}`, { key })).body.data;
      expect(member.balances.available_cents).toBe(expected);
    }
    // the faults were real: the client saw the outage at least once
    process.stdout.write(`faults seen by the client: ${faults.length} (${faults.slice(0, 10).join(', ')})\n`);
    expect(APPS.filter((a) => !dist!.alive(a))).toEqual([]);
  }, 900_000);
});
