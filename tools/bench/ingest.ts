import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { Target, benchProgram, json, target } from './bench-kit';

/**
 * End-to-end ingest throughput (issue 3; figures for notes, never asserted).
 *
 * 1,000 members are enrolled through the API, then BENCH_EVENTS (20,000) `order.paid` events with
 * unique order_refs (customer by email or customer_ref, alternately) are POSTed in batches of 100,
 * BENCH_IN_FLIGHT (4) requests at a time. Measured from the first POST: until every event is
 * accepted, and until every event is `completed`. In the same run, the raw rate of autocommit
 * single-row PostgreSQL inserts on this machine (fresh table, one connection and 8 connections),
 * so the result reads as a ratio.
 *
 *   tools/bench/run.sh ingest               # standalone app in this process, fresh database
 *   tools/bench/run.sh ingest distributed   # gateway + services over Kafka (BENCH_URL, BENCH_DATABASE_URL)
 *
 * This file also exports the helpers backlog.ts and ledger-cost.ts share.
 */

// ---------- shared helpers ----------

export const env = (name: string, d: number): number => {
  const v = process.env[name];
  return v === undefined || v === '' ? d : Number(v);
};

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const now = (): number => Number(process.hrtime.bigint()) / 1e6;
export const quantile = (xs: number[], q: number): number => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
};
export const fmt = (x: number, digits = 1): string => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
export const table = (title: string, head: string[], rows: (string | number)[][]): void => {
  process.stdout.write(`\n${title}\n| ${head.join(' | ')} |\n|${head.map(() => '---').join('|')}|\n`);
  for (const r of rows) process.stdout.write(`| ${r.join(' | ')} |\n`);
};
export const log = (msg: string): void => { process.stderr.write(`[bench] ${msg}\n`); };

/**
 * The benchmark programme: 1 % base earn, posted at once, no tiers, points never expire.
 * BENCH_TIERS=1 adds two spend tiers on a rolling 365-day window; BENCH_EXPIRY_DAYS=n makes
 * points expire n days after they are earned (every earn is then a dated lot).
 */
export const benchProgramBody = (): Record<string, unknown> => ({
  ...(env('BENCH_EXPIRY_DAYS', 0) ? { settings: { expiry: { policy: 'fixed_days', days: env('BENCH_EXPIRY_DAYS', 0) } } } : {}),
  rules: [{ name: 'base', type: 'base', earn_rate_pct: 1, timing: 'immediate' }],
  tiers: env('BENCH_TIERS', 0) ? [
    { name: 'Silver', level: 1, threshold_type: 'spend', threshold_value: 5_000_000, window: 'rolling_365', earn_multiplier: 1.25 },
    { name: 'Gold', level: 2, threshold_type: 'spend', threshold_value: 50_000_000, window: 'rolling_365', earn_multiplier: 1.5 },
  ] : [],
});

/** What benchProgramBody() configured, for table titles. */
export const programLabel = (): string =>
  `1 % base earn; ${env('BENCH_TIERS', 0) ? '2 spend tiers, rolling 365 days' : 'no tiers'}; ${env('BENCH_EXPIRY_DAYS', 0) ? `points expire after ${env('BENCH_EXPIRY_DAYS', 0)} days` : 'no expiry'}`;

export interface Customer { email: string; ref: string; id?: string }

/** Runs `fn` over 0..n-1 with at most `concurrency` at once. */
export const pool = async (n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> => {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, async () => {
    while (next < n) await fn(next++);
  }));
};

export const enrolMembers = async (t: Target, key: string, n: number, tag: string, concurrency = 8): Promise<Customer[]> => {
  const out: Customer[] = Array.from({ length: n }, (_, i) => ({ email: `m${tag}-${i}@bench.test`, ref: `cust-${tag}-${i}` }));
  await pool(n, concurrency, async (i) => {
    out[i].id = (await json(t.url, 'POST', '/v1/members', key, { email: out[i].email, external_ref: out[i].ref })).data.id;
  });
  return out;
};

/** An order.paid naming its customer by email (even i) or customer_ref (odd i). */
export const orderPaid = (ref: string, c: Customer, i: number): Record<string, unknown> => ({
  type: 'order.paid', order_ref: ref, gross_cents: 500 + ((i * 7919) % 19_500),
  ...(i % 2 === 0 ? { email: c.email } : { customer_ref: c.ref }),
});

export interface PostFigures { accepted: number; replayed: number; requests: number; retries429: number; firstPostAt: number; lastAcceptAt: number }

/**
 * POSTs the events in batches of `batch`, `inFlight` requests at a time. A 429 (rate limit or
 * backlog: nothing was accepted) is resent after its Retry-After (at most `max429WaitMs`).
 */
export const postEvents = async (t: Target, key: string, events: Record<string, unknown>[], opts: { batch?: number; inFlight?: number; max429WaitMs?: number } = {}): Promise<PostFigures> => {
  const batch = opts.batch ?? 100;
  const batches: Record<string, unknown>[][] = [];
  for (let i = 0; i < events.length; i += batch) batches.push(events.slice(i, i + batch));
  const f: PostFigures = { accepted: 0, replayed: 0, requests: 0, retries429: 0, firstPostAt: now(), lastAcceptAt: 0 };
  await pool(batches.length, opts.inFlight ?? 4, async (b) => {
    const body = JSON.stringify(batches[b].length === 1 ? batches[b][0] : { events: batches[b] });
    for (;;) {
      f.requests++;
      const res = await fetch(`${t.url}/v1/events`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
      const text = await res.text();
      if (res.status === 429) {
        f.retries429++;
        await sleep(Math.min(opts.max429WaitMs ?? 1000, 1000 * Number(res.headers.get('retry-after') ?? 1)));
        continue;
      }
      if (res.status !== 202 && res.status !== 200) throw new Error(`POST /v1/events: ${res.status} ${text}`);
      const data = JSON.parse(text).data;
      for (const r of Array.isArray(data) ? data : [data]) {
        if (r.replayed) f.replayed++;
        else f.accepted++;
      }
      f.lastAcceptAt = now();
      return;
    }
  });
  return f;
};

export interface StatusCounts { queued: number; running: number; completed: number; failed: number }

/** Status counts of a tenant's events: from ingest.events when the database is known, else `null`. */
export const statusCounts = async (db: Client | null, tenant: string): Promise<StatusCounts | null> => {
  if (!db) return null;
  const { rows } = await db.query<{ status: keyof StatusCounts; n: number }>(
    // a claimed event is a queued row under a lease: counted as running, as the API shows it
    `select case when status in ('queued', 'running') and locked_until is not null then 'running' else status end as status, count(*)::int as n
       from ingest.events where tenant = $1 group by 1`, [tenant]);
  const c: StatusCounts = { queued: 0, running: 0, completed: 0, failed: 0 };
  for (const r of rows) c[r.status] = r.n;
  return c;
};

/** How many of the tenant's events are queued or running (the partial index of open rows), or `null` without the database. */
export const openCount = async (db: Client | null, tenant: string): Promise<number | null> => {
  if (!db) return null;
  const { rows } = await db.query<{ n: number }>(
    `select count(*)::int as n from ingest.events where tenant = $1 and status in ('queued', 'running')`, [tenant]);
  return rows[0].n;
};

/** Whether any of the tenant's events is queued or running (stops at the first open row), or `null` without the database. */
export const anyOpen = async (db: Client | null, tenant: string): Promise<boolean | null> => {
  if (!db) return null;
  const { rows } = await db.query<{ open: boolean }>(
    `select exists (select 1 from ingest.events where tenant = $1 and status in ('queued', 'running')) as open`, [tenant]);
  return rows[0].open;
};

/** Whether the tenant has any event with this status, through GET /v1/events (no counts in the API). */
const anyWithStatus = async (t: Target, key: string, status: string): Promise<boolean> =>
  (await json(t.url, 'GET', `/v1/events?status=${status}&limit=1`, key)).data.length > 0;

export interface DrainFigures { doneAt: number; counts: StatusCounts | null; anyFailed: boolean; timeline: { at: number; done: number }[] }

/**
 * Waits until nothing of the tenant is queued or running (and, with the database, `expected`
 * events are finished). Polls every `everyMs`; counts the open events every `countEveryMs`.
 */
export const waitDrained = async (t: Target, key: string, db: Client | null, tenant: string, expected: number, opts: { everyMs?: number; countEveryMs?: number; timeoutMs?: number; progress?: boolean } = {}): Promise<DrainFigures> => {
  const started = now();
  const timeline: { at: number; done: number }[] = [];
  let lastLog = 0;
  let lastCount = 0;
  for (;;) {
    // Polled often, so each poll only asks whether anything is open (it stops at the first open
    // row); the open rows are counted (the timeline, the progress line) at most once a second and
    // when nothing is open. Counting them on every poll (every 100 ms in the suite) cost PostgreSQL
    // 4 % of its statement time in the distributed ingest run (6 ms a count with 10,000 open), and
    // the figure charged it to the service. The full counts are read once, when nothing is open.
    const some = await anyOpen(db, tenant);
    let open: number | null = null; // null: no database (the API is asked below)
    if (some === false) open = 0;
    else if (some === true) {
      if (now() - lastCount >= (opts.countEveryMs ?? 1000)) {
        open = await openCount(db, tenant);
        lastCount = now();
      } else open = -1;
    }
    if (open === -1) {
      // open events, not counted this time
    } else if (open !== null) {
      timeline.push({ at: now(), done: Math.max(0, expected - open) });
      if (opts.progress !== false && now() - lastLog > 5000) {
        lastLog = now();
        log(`open (queued or running) ${open} of ${expected}`);
      }
      if (open === 0) {
        const c = (await statusCounts(db, tenant))!;
        if (c.queued === 0 && c.running === 0 && c.completed + c.failed >= expected) return { doneAt: now(), counts: c, anyFailed: c.failed > 0, timeline };
      }
    } else if (!(await anyWithStatus(t, key, 'queued')) && !(await anyWithStatus(t, key, 'running'))) {
      return { doneAt: now(), counts: null, anyFailed: await anyWithStatus(t, key, 'failed'), timeline };
    }
    if (now() - started > (opts.timeoutMs ?? 30 * 60_000)) throw new Error(`events of ${tenant} not drained after ${opts.timeoutMs ?? 1_800_000} ms`);
    await sleep(opts.everyMs ?? 200);
  }
};

/**
 * When every read model has caught up with the event store (ms, `now()` clock): each projection's
 * checkpoint at or past the newest event. Ingest never waits for its read models, so they finish
 * after the events are completed; a filtered runner writes a checkpoint past events it skips at
 * most once a second, so this may read up to a second late. Null without the database.
 */
export const waitReadModels = async (db: Client | null, opts: { everyMs?: number; timeoutMs?: number } = {}): Promise<number | null> => {
  if (!db) return null;
  const started = now();
  for (;;) {
    const { rows } = await db.query<{ behind: number }>(
      `select count(*)::int as behind from es.checkpoints c,
         (select transaction_id, global_position from es.events order by transaction_id desc, global_position desc limit 1) h
       where (c.commit_pos::numeric, c.prepare_pos::numeric) < (h.transaction_id::text::numeric, h.global_position::numeric)`);
    if (rows[0].behind === 0) return now();
    if (now() - started > (opts.timeoutMs ?? 10 * 60_000)) throw new Error(`read models not caught up after ${opts.timeoutMs ?? 600_000} ms`);
    await sleep(opts.everyMs ?? 100);
  }
};

/** Events completed per second in five consecutive slices of the total (from the database timeline). */
export const ratesByFifth = (timeline: { at: number; done: number }[], start: number, total: number): number[] => {
  if (timeline.length < 2) return [];
  const out: number[] = [];
  let prev = { at: start, done: 0 };
  for (let k = 1; k <= 5; k++) {
    const p = timeline.find((x) => x.done >= Math.round((k * total) / 5)) ?? timeline[timeline.length - 1];
    out.push(Math.round((p.done - prev.done) / Math.max(0.001, (p.at - prev.at) / 1000)));
    prev = p;
  }
  return out;
};

/** Transactions committed in a database so far (pg_stat_database; flushed by the server within about a second). */
export const commits = async (db: Client | null): Promise<number | null> => {
  if (!db) return null;
  await db.query('select pg_stat_clear_snapshot()');
  const { rows } = await db.query<{ n: string }>('select xact_commit::text as n from pg_stat_database where datname = current_database()');
  return Number(rows[0].n);
};

export const connect = async (url: string | undefined): Promise<Client | null> => {
  if (!url) return null;
  const c = new Client({ connectionString: url });
  await c.connect();
  return c;
};

/** The tenant of a live key: the programme id. */
export const liveTenant = (programId: string): string => programId;

// ---------- raw PostgreSQL insert rate ----------

export interface RawFigures { connections: number; rows: number; ms: number }

/**
 * Autocommit single-row inserts into a fresh table of a fresh database on the same server, from
 * one connection and from `connections` connections sharing the rows. The row looks like a queued
 * event (text id, jsonb payload, timestamp).
 */
export const rawInsertRate = async (serverUrl: string | undefined, rows = 5000, manyConnections = 8): Promise<RawFigures[]> => {
  const base = new URL(serverUrl ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  base.pathname = '/postgres';
  const name = `bench_raw_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: base.toString() });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(base.toString());
  url.pathname = `/${name}`;
  const out: RawFigures[] = [];
  try {
    const setup = new Client({ connectionString: url.toString() });
    await setup.connect();
    await setup.query('create table raw_events (id text primary key, payload jsonb not null, received_at timestamptz not null default now())');
    await setup.end();
    const payload = JSON.stringify({ type: 'order.paid', order_ref: 'ORD-00000000', gross_cents: 12345, email: 'someone@bench.test' });
    for (const n of [1, manyConnections]) {
      const clients = await Promise.all(Array.from({ length: n }, async () => {
        const c = new Client({ connectionString: url.toString() });
        await c.connect();
        return c;
      }));
      let next = 0;
      const t0 = now();
      await Promise.all(clients.map(async (c) => {
        while (next < rows) {
          const i = next++;
          await c.query('insert into raw_events (id, payload) values ($1, $2)', [`${n}-${i}`, payload]);
        }
      }));
      out.push({ connections: n, rows, ms: now() - t0 });
      await Promise.all(clients.map((c) => c.end()));
    }
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`).catch(() => undefined);
    await admin.end();
  }
  return out;
};

export const rawTable = (raw: RawFigures[]): void => table('Raw PostgreSQL: autocommit single-row inserts into a fresh table (same server)',
  ['connections', 'rows', 'seconds', 'rows/s'],
  raw.map((r) => [r.connections, r.rows, fmt(r.ms / 1000, 2), Math.round(r.rows / (r.ms / 1000))]));

// ---------- the ingest benchmark ----------

const main = async (): Promise<void> => {
  const total = env('BENCH_EVENTS', 20_000);
  const memberCount = env('BENCH_MEMBERS', 1000);
  const batch = env('BENCH_BATCH', 100);
  const inFlight = env('BENCH_IN_FLIGHT', 4);
  const t = await target();
  const db = await connect(t.databaseUrl);
  try {
    const { programId, key } = await benchProgram(t, benchProgramBody());
    const tenant = liveTenant(programId);
    const tag = randomBytes(3).toString('hex');
    log(`${t.mode}: enrolling ${memberCount} members`);
    const e0 = now();
    const customers = await enrolMembers(t, key, memberCount, tag);
    const enrolMs = now() - e0;

    const events = Array.from({ length: total }, (_, i) => orderPaid(`ORD-${tag}-${i}`, customers[i % customers.length], i));
    log(`posting ${total} order.paid events, batches of ${batch}, ${inFlight} in flight`);
    const c0 = await commits(db);
    const posted = await postEvents(t, key, events, { batch, inFlight });
    log(`accepted ${posted.accepted} (replayed ${posted.replayed}) in ${fmt((posted.lastAcceptAt - posted.firstPostAt) / 1000, 2)} s; waiting for completion`);
    const drained = await waitDrained(t, key, db, tenant, total);
    await sleep(1500); // let the server flush its transaction counters
    const c1 = await commits(db);

    const acceptS = (posted.lastAcceptAt - posted.firstPostAt) / 1000;
    const completeS = (drained.doneAt - posted.firstPostAt) / 1000;
    let serverS = NaN;
    if (db) {
      const { rows } = await db.query<{ s: number }>(
        'select extract(epoch from max(processed_at) - min(received_at))::float8 as s from ingest.events where tenant = $1', [tenant]);
      serverS = rows[0].s;
    }
    log('measuring raw PostgreSQL insert rate');
    const raw = await rawInsertRate(t.databaseUrl);
    const completedRate = total / completeS;

    table(`Ingest throughput (${t.mode}; ${programLabel()}; ${memberCount} members enrolled in ${fmt(enrolMs / 1000, 1)} s; batches of ${batch}, ${inFlight} in flight)`,
      ['events', 'accepted', 'accept s', 'accepted ev/s', 'all completed s', 'completed ev/s', 'server s (first received → last processed)', 'failed', '429 resent', 'xact/event'],
      [[total, posted.accepted, fmt(acceptS, 2), Math.round(posted.accepted / acceptS), fmt(completeS, 2), Math.round(completedRate),
        fmt(serverS, 2), drained.counts ? drained.counts.failed : (drained.anyFailed ? '>0' : 0), posted.retries429,
        c0 !== null && c1 !== null ? fmt((c1 - c0) / total, 1) : 'n/a']]);
    const slices = ratesByFifth(drained.timeline, posted.firstPostAt, total);
    if (slices.length) table('Processing rate by fifth of the events (completed per second)', ['1st', '2nd', '3rd', '4th', '5th'], [slices]);
    rawTable(raw);
    table('Ratio', ['completed ev/s ÷ raw rows/s (1 connection)', `completed ev/s ÷ raw rows/s (${raw[1].connections} connections)`],
      [[fmt(completedRate / (raw[0].rows / (raw[0].ms / 1000)), 3), fmt(completedRate / (raw[1].rows / (raw[1].ms / 1000)), 3)]]);
  } finally {
    await db?.end();
    await t.close();
  }
};

if (require.main === module) {
  main().catch((e) => { console.error(e); process.exit(1); });
}
