import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { Target, benchProgram, cpuMeter, cpuPerOp, httpClientName, httpLoad, json, steadyStatistics, target } from './bench-kit';
import type { LeanStep } from './lean-load';
import {
  benchProgramBody, connect, enrolMembers, env, fmt, liveTenant, log, now, orderPaid, postEvents, quantile, sleep, waitDrained, waitReadModels,
} from './ingest';
import { BareRouteFigure, PgbenchFigure, benchBareRoute, runOneBaseline, runPgbench, scratchDatabase } from './raw-baselines';

/**
 * The throughput suite of issue 7 (figures for notes, never asserted by tests): every hot path of
 * the service, each printed as a ratio against raw PostgreSQL baselines run in the same invocation.
 *
 *   npm run bench                                  # = tools/bench/run.sh suite (standalone)
 *   BENCH_QUICK=1 npm run bench                    # everything scaled down (a minute or two)
 *   tools/bench/run.sh suite distributed           # the ingest scenario over gateway → Kafka → services
 *
 * Order: the pgbench baselines (tools/bench/baselines/run.sh, BENCH_BASELINE_SECONDS each, on a
 * scratch database), the bare Node http + pg route for GET member, then the service scenarios.
 * Standalone (no BENCH_URL): each scenario gets its own standalone app (a child process) on a fresh database and its
 * own programme; with BENCH_URL every scenario uses that deployment, each with its own programme.
 * A scenario that fails prints an error row; the others still run.
 *
 * The ingest figure ends when every posted event is completed; the read models finish later (ingest
 * never waits for them). With the database at hand (standalone, or BENCH_DATABASE_URL) its detail
 * also says when every projection's checkpoint reached the newest event, and the end-to-end rate.
 *
 * Knobs (defaults; BENCH_QUICK=1 in brackets):
 *   BENCH_SCENARIOS        comma list of ingest,enrol,redeem,get-member,reserve,import,expiry
 *                          (all; distributed: ingest); `none` runs only the baselines
 *   BENCH_BASELINE_SECONDS 10 [3]      pgbench seconds per baseline script
 *   BENCH_SECONDS          10 [3]      duration of each timed HTTP load (enrol, redeem, GET, reserve, bare route)
 *   BENCH_EVENTS           20000 [2000], BENCH_MEMBERS 1000 [200], BENCH_IN_FLIGHT 4: ingest
 *   BENCH_SEED_MEMBERS     1000 [200]  funded members for redeem / GET / reserve
 *   BENCH_IMPORT           10000 [1000] members of the migration import
 *   BENCH_EXPIRY_LOTS      10000 [1000] lots expiring at one sweep
 *   BENCH_SCENARIO_TIMEOUT_S 1200      a scenario still running after this is reported as an error
 *   BENCH_IN_PROCESS       0           1: the standalone app runs in this process (shares the load
 *                          generator's event loop); default: its own child process, as `npm start`
 *   BENCH_BARE_PROCESS     same|child  where the bare route runs (default: where the service runs:
 *                          `child`, or `same` with BENCH_IN_PROCESS=1)
 *   BENCH_BARE_POOL        16          pg pool of the bare route
 *   BENCH_WARMUP_SECONDS   15 [1]      each load runs this long, unmeasured, before it is measured (JIT, caches,
 *                          pools: the figure is the service's steady state, not its first seconds; 3 s until round
 *                          25 left the JIT compiling through the measurement on a slower host)
 *   BENCH_WARMUP_EVENTS    20000 [500] ingest: events posted and drained, unmeasured, before the measured ones
 *                          (about 8 s of load: the PostgreSQL connections of the service's pool warm, not only
 *                          the JIT; 2,000 until round 26 measured two dozen cold backends: 10-25 % more time
 *                          in every ingest statement with a pool of 30 than with 12, none once warm)
 *   BENCH_BESIDE           1           each scenario's pgbench baseline run again just before and just after it; the ratio
 *                          divides by their mean (0: by the start-of-run figure). The host's CPU speed moves by half
 *                          within minutes: a baseline taken minutes earlier is not beside the scenario
 *   BENCH_PERF             0           1: also count the instructions per operation of the service and of PostgreSQL
 *                          (`perf stat`): unmoved by the host's CPU speed, but counting is intrusive on this VM (the
 *                          throughput about halves, batches get smaller): compare counts only between counted runs
 *   BENCH_NO_IDEM          0           1: reserve without an Idempotency-Key (diagnostic: what the key costs; the
 *                          scenario's figure is with a key, as a merchant sends it)
 *   BENCH_CLIENT           lean        the HTTP load generator: lean (tools/bench/lean-load.ts) or autocannon (the
 *                          figures until round 22; about twice the lean client's CPU a request on the same cores)
 *   BENCH_OUT              path of the JSON result (default: $TMPDIR/loyalty-bench-<mode>-<time>.json)
 *
 * Each measured load is preceded by a line `[bench] measured load starts (<time>)` on stderr: a mark
 * for tools that watch a run (statement statistics reset at that moment, a profile's window).
 */

const QUICK = env('BENCH_QUICK', 0) > 0;
/** Each scenario's baseline also run just before and just after it, and the ratio taken against their mean (BENCH_BESIDE=0: off). */
const BESIDE = env('BENCH_BESIDE', 1) > 0;
const q = (name: string, full: number, quick: number): number => env(name, QUICK ? quick : full);

const SETTINGS = {
  baselineSeconds: q('BENCH_BASELINE_SECONDS', 10, 3),
  seconds: q('BENCH_SECONDS', 10, 3),
  // 15 s: on a host whose CPU is half as fast, TurboFan was still compiling (283 functions) through a
  // 10-s measurement after 3 s of warm-up, on helper threads that took a fifth of the service's CPU
  warmupSeconds: q('BENCH_WARMUP_SECONDS', 15, 1),
  warmupEvents: q('BENCH_WARMUP_EVENTS', 20000, 500),
  events: q('BENCH_EVENTS', 20_000, 2000),
  ingestMembers: q('BENCH_MEMBERS', 1000, 200),
  ingestInFlight: env('BENCH_IN_FLIGHT', 4),
  seedMembers: q('BENCH_SEED_MEMBERS', 1000, 200),
  importMembers: q('BENCH_IMPORT', 10_000, 1000),
  expiryLots: q('BENCH_EXPIRY_LOTS', 10_000, 1000),
  scenarioTimeoutS: env('BENCH_SCENARIO_TIMEOUT_S', 1200),
  barePool: env('BENCH_BARE_POOL', 16),
};

const MODE = process.env.BENCH_URL ? (process.env.BENCH_MODE ?? 'remote') : 'standalone';
const DISTRIBUTED = MODE === 'distributed';
const ALL = ['ingest', 'enrol', 'redeem', 'get-member', 'reserve', 'import', 'expiry'] as const;
type ScenarioId = (typeof ALL)[number];

// ---------- a light HTTP client (keep-alive; no per-call timeout: a 10,000-entry import may take minutes) ----------

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

interface Reply { status: number; body: any }

const call = (base: string, method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> =>
  new Promise((res, rej) => {
    const u = new URL(path, base);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request({
      agent, hostname: u.hostname, port: u.port, path: u.pathname + u.search, method,
      headers: { authorization: `Bearer ${token}`, ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}), ...headers },
    }, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let parsed: unknown = text;
        try { parsed = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
        res({ status: r.statusCode ?? 0, body: parsed });
      });
      r.on('error', rej);
    });
    req.on('error', rej);
    if (payload) req.write(payload);
    req.end();
  });

const ok = async (p: Promise<Reply>, what: string): Promise<any> => {
  const r = await p;
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  return r.body;
};

// ---------- shared set-up ----------

interface Ctx { t: Target; tag: string }

/** A key of another mode (e.g. `test`, the sandbox the test clock drives) on the same programme. */
const extraKey = async (t: Target, programId: string, mode: 'live' | 'test'): Promise<string> =>
  (await json(t.url, 'POST', `/admin/v1/programs/${programId}/keys`, t.adminToken,
    { mode, scopes: ['ingest', 'read', 'act', 'webhooks'], rate_limit: { burst: 1_000_000, per_second: 1_000_000 } })).data.key;

/** POSTs a migration import of `entries` (at most 10,000) and returns the reply's data and the seconds it took. */
const importMigration = async (t: Target, programId: string, mode: 'live' | 'test', entries: Record<string, unknown>[]): Promise<{ data: { imported: number; members_created: number }; s: number }> => {
  const t0 = now();
  const body = await ok(call(t.url, 'POST', `/admin/v1/programs/${programId}/migrations`, t.adminToken, { mode, entries }), 'POST migrations');
  return { data: body.data, s: (now() - t0) / 1000 };
};

/** Every member id of the key's programme partition, through GET /v1/members (100 a page). */
const listMemberIds = async (t: Target, key: string): Promise<{ id: string; available: number }[]> => {
  const out: { id: string; available: number }[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await ok(call(t.url, 'GET', `/v1/members?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, key), 'GET /v1/members');
    for (const m of page.data) out.push({ id: m.id, available: m.balances?.available_cents ?? 0 });
    cursor = page.pagination?.cursor ?? null;
  } while (cursor);
  return out;
};

/**
 * `n` members with a large balance: one migration import (admin plane) of fresh emails; when the
 * import is refused, enrolment plus an adjust each (8 at a time). Returns their ids.
 */
const fundedMembers = async (c: Ctx, programId: string, key: string, n: number): Promise<string[]> => {
  const amount = 1_000_000_000;
  try {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 10_000) {
      const entries = Array.from({ length: Math.min(10_000, n - i) }, (_, j) => ({ email: `f${c.tag}-${i + j}@bench.test`, amount_cents: amount }));
      await importMigration(c.t, programId, 'live', entries);
    }
    ids.push(...(await listMemberIds(c.t, key)).filter((m) => m.available >= amount).map((m) => m.id));
    if (ids.length < n) throw new Error(`import funded ${ids.length} of ${n} members`);
    return ids;
  } catch (e) {
    log(`funding by migration import failed (${(e as Error).message}); enrolling and adjusting instead`);
    const customers = await enrolMembers(c.t, key, n, `fa${c.tag}`);
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < customers.length) {
        const m = customers[next++];
        await ok(call(c.t.url, 'POST', `/v1/members/${m.id}/adjust`, key, { amount_cents: amount, reason_code: 'bench' }), 'adjust');
      }
    }));
    return customers.map((m) => m.id as string);
  }
};

/** httpLoad (the lean client, or autocannon) over `connections` for SETTINGS.seconds; counts only 2xx replies. */
const load = async (name: string, t: Target, key: string, connections: number, req: LeanStep): Promise<{ rps: number; p50: number; p99: number; requests: number; non2xx: number; errors: number; statuses: Record<string, number>; cpu: string }> => {
  const statuses: Record<string, number> = {};
  if (SETTINGS.warmupSeconds > 0) {
    await httpLoad({ url: t.url, connections, duration: SETTINGS.warmupSeconds, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, requests: [req] });
  }
  await steadyStatistics(t);
  const meter = await cpuMeter(t);
  const r = await httpLoad({
    url: t.url, connections, duration: SETTINGS.seconds,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    requests: [{ ...req, onResponse: (status: number) => { statuses[status] = (statuses[status] ?? 0) + 1; } }],
  });
  const cpu = cpuPerOp(await meter.stop(), r['2xx']);
  log(`${name}: ${r['2xx']} ok, ${r.non2xx} non-2xx, ${r.errors} errors in ${fmt(r.duration, 2)} s; ${cpu}`);
  return { rps: r['2xx'] / Math.max(0.001, r.duration), p50: r.latency.p50, p99: r.latency.p99, requests: r.requests.total, non2xx: r.non2xx, errors: r.errors, statuses, cpu };
};

// ---------- the scenarios ----------

interface Measured { value: number; unit: string; p99?: number; detail: string; extra?: Record<string, unknown> }

const scenarios: Record<ScenarioId, (c: Ctx) => Promise<Measured>> = {
  /** 1,000 members enrolled, then order.paid in batches of 100 (4 requests in flight) until every event is completed. */
  ingest: async (c) => {
    const db = await connect(c.t.databaseUrl);
    try {
      const { programId, key } = await benchProgram(c.t, benchProgramBody());
      const tenant = liveTenant(programId);
      log(`ingest: enrolling ${SETTINGS.ingestMembers} members`);
      const customers = await enrolMembers(c.t, key, SETTINGS.ingestMembers, c.tag);
      if (SETTINGS.warmupEvents > 0) {
        const warm = Array.from({ length: SETTINGS.warmupEvents }, (_, i) => orderPaid(`WARM-${c.tag}-${i}`, customers[i % customers.length], i));
        log(`ingest: warming up with ${warm.length} order.paid (not measured)`);
        await postEvents(c.t, key, warm, { batch: 100, inFlight: SETTINGS.ingestInFlight });
        await waitDrained(c.t, key, db, tenant, warm.length, { everyMs: 100 });
        await waitReadModels(db); // the warm-up's read-model work stays out of the measured window
      }
      await steadyStatistics(c.t);
      const events = Array.from({ length: SETTINGS.events }, (_, i) => orderPaid(`ORD-${c.tag}-${i}`, customers[i % customers.length], i));
      log(`ingest: posting ${SETTINGS.events} order.paid, batches of 100, ${SETTINGS.ingestInFlight} in flight`);
      const meter = await cpuMeter(c.t);
      const posted = await postEvents(c.t, key, events, { batch: 100, inFlight: SETTINGS.ingestInFlight });
      const drained = await waitDrained(c.t, key, db, tenant, SETTINGS.warmupEvents + SETTINGS.events, { everyMs: 100 });
      const cpu = cpuPerOp(await meter.stop(), SETTINGS.events);
      const s = (drained.doneAt - posted.firstPostAt) / 1000;
      const failed = drained.counts ? drained.counts.failed : (drained.anyFailed ? NaN : 0);
      if (failed) throw new Error(`${failed} events failed`);
      // the read models finish later (ingest never waits for them): how much later, beside the figure
      const current = await waitReadModels(db);
      const rm = current === null ? null : (current - posted.firstPostAt) / 1000;
      return {
        value: SETTINGS.events / s, unit: 'ev/s',
        detail: `${SETTINGS.events} events, all completed ${fmt(s, 1)} s after the first POST (accepted in ${fmt((posted.lastAcceptAt - posted.firstPostAt) / 1000, 1)} s; 429 resent ${posted.retries429})`
          + `${rm === null ? '' : `; read models current ${fmt(rm, 1)} s after it (${Math.round(SETTINGS.events / rm)} ev/s end to end)`}; ${cpu}`,
        extra: { events: SETTINGS.events, members: SETTINGS.ingestMembers, seconds: s, accepted_s: (posted.lastAcceptAt - posted.firstPostAt) / 1000, retries429: posted.retries429, read_models_current_s: rm },
      };
    } finally {
      await db?.end();
    }
  },

  /** POST /v1/members, a new email each, 16 connections. */
  enrol: async (c) => {
    const { key } = await benchProgram(c.t);
    let n = 0;
    const r = await load('enrol', c.t, key, 16, { method: 'POST', path: '/v1/members', setupRequest: (req) => ({ ...req, body: JSON.stringify({ email: `e${c.tag}-${n++}@bench.test` }) }) });
    const created = r.statuses['201'] ?? 0;
    if (created < r.requests * 0.9) throw new Error(`only ${created} of ${r.requests} enrolments were 201 (${JSON.stringify(r.statuses)})`);
    return { value: r.rps, unit: 'req/s', p99: r.p99, detail: `${r.requests} requests, p50 ${r.p50} ms, p99 ${r.p99} ms, non-2xx ${r.non2xx}; ${r.cpu}`, extra: r };
  },

  /** Direct redemptions (debit and finalise in one call), spread over funded members, 16 connections. */
  redeem: async (c) => {
    const { programId, key } = await benchProgram(c.t);
    const ids = await fundedMembers(c, programId, key, SETTINGS.seedMembers);
    let n = 0;
    const r = await load('redeem', c.t, key, 16, {
      method: 'POST',
      setupRequest: (req) => { const i = n++; return { ...req, path: `/v1/members/${ids[i % ids.length]}/redemptions`, body: JSON.stringify({ amount_cents: 10, mode: 'direct', order_ref: `R-${c.tag}-${i}` }) }; },
    });
    if (r.non2xx > r.requests * 0.1) throw new Error(`${r.non2xx} of ${r.requests} redemptions failed (${JSON.stringify(r.statuses)})`);
    return { value: r.rps, unit: 'redemptions/s', p99: r.p99, detail: `${ids.length} members, ${r.requests} requests, p50 ${r.p50} ms, p99 ${r.p99} ms, non-2xx ${r.non2xx}; ${r.cpu}`, extra: r };
  },

  /** GET /v1/members/{id} spread over members, 32 connections. */
  'get-member': async (c) => {
    const { programId, key } = await benchProgram(c.t);
    const ids = await fundedMembers(c, programId, key, SETTINGS.seedMembers);
    let g = 0;
    const req: LeanStep = { method: 'GET', setupRequest: (r) => ({ ...r, path: `/v1/members/${ids[g++ % ids.length]}` }) };
    // the same short warm-up as the bare route
    await httpLoad({ url: c.t.url, connections: 32, amount: Math.min(2000, ids.length * 2), headers: { authorization: `Bearer ${key}` }, requests: [req] });
    const r = await load('get-member', c.t, key, 32, req);
    if (r.non2xx > r.requests * 0.01) throw new Error(`${r.non2xx} of ${r.requests} reads failed (${JSON.stringify(r.statuses)})`);
    return { value: r.rps, unit: 'req/s', p99: r.p99, detail: `${ids.length} members, ${r.requests} requests, p50 ${r.p50} ms, p99 ${r.p99} ms; ${r.cpu}`, extra: r };
  },

  /**
   * A reservation reserved, then confirmed (two calls in a row per pair), 16 clients, pairs spread
   * over members. httpLoad sends each connection's pair in turn (the confirm names the
   * reservation the reserve answered), as for the other scenarios (an earlier hand-written client on
   * node:http spent 0.23–0.28 ms of the machine's CPU a pair, autocannon about half that).
   */
  reserve: async (c) => {
    const { programId, key } = await benchProgram(c.t);
    const ids = await fundedMembers(c, programId, key, SETTINGS.seedMembers);
    let n = 0;
    let pairs = 0;
    let failures = 0;
    let lastError = '';
    type Pair = { i?: number; id?: string };
    const requests: LeanStep[] = [
      {
        method: 'POST', path: '/v1/redemption-reservations',
        setupRequest: (req, context) => {
          const i = n++;
          (context as Pair).i = i;
          (context as Pair).id = undefined;
          return {
            ...req, headers: env('BENCH_NO_IDEM', 0) > 0 ? req.headers : { ...req.headers, 'idempotency-key': `rsv-${c.tag}-${i}` },
            body: JSON.stringify({ member_id: ids[i % ids.length], amount_cents: 100, cart_ref: `cart-${c.tag}-${i}`, eligible_total_cents: 10_000, payment_method: 'card' }),
          };
        },
        onResponse: (status, body, context) => {
          if (status === 201 || status === 200) (context as Pair).id = (JSON.parse(body) as { data: { id: string } }).data.id;
          else { failures++; lastError = `reserve ${status} ${body.slice(0, 200)}`; }
        },
      },
      {
        method: 'POST',
        // no reservation to confirm: back to a new pair's reserve
        setupRequest: (req, context) => {
          const p = context as Pair;
          return p.id ? { ...req, path: `/v1/redemption-reservations/${p.id}/confirm`, body: JSON.stringify({ order_ref: `O-${c.tag}-${p.i}` }) } : null;
        },
        onResponse: (status, body) => {
          if (status === 200 || status === 201) pairs++;
          else { failures++; lastError = `confirm ${status} ${body.slice(0, 200)}`; }
        },
      },
    ];
    const options = { url: c.t.url, connections: 16, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, requests };
    if (SETTINGS.warmupSeconds > 0) await httpLoad({ ...options, duration: SETTINGS.warmupSeconds }); // not measured
    await steadyStatistics(c.t);
    pairs = 0; failures = 0;
    const meter = await cpuMeter(c.t);
    const r = await httpLoad({ ...options, duration: SETTINGS.seconds });
    const cpu = cpuPerOp(await meter.stop(), pairs);
    const s = r.duration;
    if (failures > pairs * 0.1) throw new Error(`${failures} failed calls vs ${pairs} completed pairs; last: ${lastError}`);
    return {
      value: pairs / s, unit: 'pairs/s', p99: r.latency.p99,
      detail: `${pairs} pairs in ${fmt(s, 1)} s, per call p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, failed calls ${failures}; ${cpu}`,
      extra: { pairs, seconds: s, failures },
    };
  },

  /** One migration import of 10,000 new members (admin plane). */
  import: async (c) => {
    const { programId, key } = await benchProgram(c.t);
    const entries = Array.from({ length: SETTINGS.importMembers }, (_, i) => ({ email: `i${c.tag}-${i}@bench.test`, external_ref: `legacy-${c.tag}-${i}`, amount_cents: 1000 + i }));
    if (SETTINGS.warmupSeconds > 0) { // one smaller import first, not measured
      const warm = Array.from({ length: Math.ceil(entries.length / 10) }, (_, i) => ({ email: `w${c.tag}-${i}@bench.test`, external_ref: `warm-${c.tag}-${i}`, amount_cents: 1000 + i }));
      await importMigration(c.t, programId, 'live', warm);
    }
    const meter = await cpuMeter(c.t);
    const r = await importMigration(c.t, programId, 'live', entries);
    const cpu = cpuPerOp(await meter.stop(), entries.length);
    if (r.data.imported !== entries.length) throw new Error(`imported ${r.data.imported} of ${entries.length}`);
    // read-your-writes spot check: the last member is there with its balance
    const last = await ok(call(c.t.url, 'GET', `/v1/members/ref:legacy-${c.tag}-${entries.length - 1}`, key), 'GET imported member');
    if (last.data.balances.available_cents !== entries[entries.length - 1].amount_cents) throw new Error(`imported balance ${last.data.balances.available_cents}`);
    return { value: entries.length / r.s, unit: 'members/s', detail: `${entries.length} entries (${r.data.members_created} members created) in ${fmt(r.s, 2)} s, one request; ${cpu}`, extra: { entries: entries.length, seconds: r.s } };
  },

  /** 10,000 migrated lots of the sandbox expire at one sweep when its test clock moves past them. */
  expiry: async (c) => {
    const { programId } = await benchProgram(c.t);
    const testKey = await extraKey(c.t, programId, 'test');
    const tenant = `${programId}_test`;
    const n = SETTINGS.expiryLots;
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const entries = Array.from({ length: n }, (_, i) => ({ email: `x${c.tag}-${i}@bench.test`, amount_cents: 500, expires_at: expiresAt }));
    log(`expiry: importing ${n} sandbox lots expiring at ${expiresAt}`);
    const imp = await importMigration(c.t, programId, 'test', entries);
    const db = c.t.databaseUrl ? new Client({ connectionString: c.t.databaseUrl }) : null;
    await db?.connect();
    try {
      /** Members of the sandbox still holding points: the database read model, else (no database) the API. */
      let viaDb = !!db;
      const remaining = async (): Promise<number> => {
        if (viaDb && db) {
          try {
            return (await db.query<{ n: number }>('select count(*)::int as n from ledger.members where tenant = $1 and available_cents > 0', [tenant])).rows[0].n;
          } catch (e) {
            log(`expiry: database count failed (${(e as Error).message}); observing through the API`);
            viaDb = false;
          }
        }
        return (await listMemberIds(c.t, testKey)).filter((m) => m.available > 0).length;
      };
      // the members read model is projected asynchronously after the import: wait for it (bounded)
      let before = await remaining();
      for (const w0 = now(); before !== n && now() - w0 < 300_000; before = await remaining()) await sleep(200);
      if (before !== n) throw new Error(`${before} of ${n} lots hold points before the clock moves`);
      // The sweep finds members through the due-items read model, projected asynchronously after
      // the import: measure the sweep, not that projection's lag (reported beside it), so wait
      // until every lot is due-listed before moving the clock (only when the database is at hand).
      let dueLagS: number | null = null;
      if (db) {
        const w0 = now();
        try {
          for (;;) {
            const { rows } = await db.query<{ n: number }>(`select count(distinct member_id)::int as n from ledger.due_items where tenant = $1 and kind = 'expire'`, [tenant]);
            if (rows[0].n >= n) break;
            if (now() - w0 > 300_000) throw new Error(`only ${rows[0].n} of ${n} lots due-listed after 300 s`);
            await sleep(100);
          }
          dueLagS = (now() - w0) / 1000;
        } catch (e) {
          if (/due-listed/.test((e as Error).message)) throw e;
          log(`expiry: cannot read ledger.due_items (${(e as Error).message}); moving the clock without waiting`);
        }
      }
      const meter = await cpuMeter(c.t);
      const t0 = now();
      const adv = await ok(call(c.t.url, 'POST', `/admin/v1/programs/${programId}/test-clock/advance`, c.t.adminToken, { seconds: 2 * 86_400 }), 'advance');
      const advanceS = (now() - t0) / 1000;
      let left = await remaining();
      const deadline = t0 + SETTINGS.scenarioTimeoutS * 1000;
      while (left > 0) {
        if (now() > deadline) throw new Error(`${left} of ${n} lots still unexpired`);
        await sleep(viaDb ? 100 : 1000);
        left = await remaining();
      }
      const s = (now() - t0) / 1000;
      const cpu = cpuPerOp(await meter.stop(), n);
      return {
        value: n / s, unit: 'lots/s',
        detail: `${n} lots expired ${fmt(s, 2)} s after the clock move (advance call ${fmt(advanceS, 2)} s, sweeps ${JSON.stringify(adv.data?.sweeps ?? [])}; observed via ${viaDb ? 'database' : 'API'}); import of the lots took ${fmt(imp.s, 1)} s${dueLagS === null ? '' : `, their due items were listed ${fmt(dueLagS, 1)} s after it`}; ${cpu}`,
        extra: { lots: n, seconds: s, advance_s: advanceS, import_s: imp.s, due_listed_after_import_s: dueLagS, observed_via: viaDb ? 'database' : 'api' },
      };
    } finally {
      await db?.end();
    }
  },
};

// ---------- rows: service ÷ baseline, floors and goals of issue 7 ----------

interface Row {
  path: string; service: string; baseline: string; ratio: string; floor: string; goal: string; status: string;
  value?: number; unit?: string; baseline_name?: string; baseline_value?: number; ratio_value?: number; p99_ratio?: number; detail?: string; error?: string;
  baseline_beside?: number[]; baseline_start?: number;
}

const unitsOf = (pg: PgbenchFigure[], name: string): number | undefined => pg.find((f) => f.name === name)?.units;

const verdict = (passFloor: boolean, passGoal: boolean): string => (passFloor ? (passGoal ? 'PASS (goal met)' : 'PASS') : 'below floor');

const ratioRow = (path: string, m: Measured, pg: PgbenchFigure[], name: string, floor: number, goal: number | null, baselineUnit: string): Row => {
  const base = unitsOf(pg, name);
  const service = `${Math.round(m.value)} ${m.unit}`;
  if (!base) return { path, service, baseline: `${name}: not measured`, ratio: 'n/a', floor: `≥ ${floor}`, goal: goal === null ? '—' : String(goal), status: 'no baseline', value: m.value, unit: m.unit, detail: m.detail };
  const ratio = m.value / base;
  const f = pg.find((x) => x.name === name);
  const how = f?.beside ? ` (beside: ${f.beside.map((x) => Math.round(x)).join(' before, ')} after; start of run ${Math.round(f.start ?? NaN)})` : '';
  return {
    path, service, baseline: `${name}: ${Math.round(base)} ${baselineUnit}${how}`, ratio: fmt(ratio, 3), floor: `≥ ${floor}`, goal: goal === null ? '—' : String(goal),
    status: verdict(ratio >= floor, goal !== null && ratio >= goal), value: m.value, unit: m.unit, baseline_name: name, baseline_value: base, ratio_value: ratio, detail: m.detail,
    ...(f?.beside ? { baseline_beside: f.beside, baseline_start: f.start } : {}),
  };
};

/** The pgbench baseline each scenario is divided by (get-member: the bare route; expiry: none). */
const BASELINE_OF: Partial<Record<ScenarioId, string>> = {
  ingest: 'b1-ingest-batch100', enrol: 'b6-enrol-c8', redeem: 'b3-redeem-spread-c8', reserve: 'b7-reserve-c8', import: 'b6-enrol-c8',
};

/**
 * The figures a scenario's ratio uses: its baseline taken beside it (the mean of the runs just
 * before and just after it) in place of the start-of-run figure, when both were taken.
 */
const besideFigures = (pg: PgbenchFigure[], name: string | undefined, before: number | null, after: number | null): PgbenchFigure[] => {
  if (!name || before === null || after === null) return pg;
  return pg.map((f) => (f.name === name ? { ...f, units: (before + after) / 2, beside: [before, after], start: f.units } : f));
};

const PATHS: Record<ScenarioId, string> = {
  ingest: `ingest: order.paid batches of 100, ${SETTINGS.ingestMembers} members, until every event is completed${DISTRIBUTED ? ' (distributed: gateway → Kafka → services)' : ''}`,
  enrol: 'enrol POST /v1/members, 16 in flight',
  redeem: 'direct redemption, spread over members, 16 in flight',
  'get-member': 'GET /v1/members/{id}, 32 in flight',
  reserve: 'reservation reserved then confirmed, 16 in flight',
  import: `bulk: migration import of ${SETTINGS.importMembers} members (admin)`,
  expiry: `bulk: ${SETTINGS.expiryLots} lots expiring at one sweep (sandbox clock moved)`,
};

const rowFor = (id: ScenarioId, m: Measured, pg: PgbenchFigure[], bare: BareRouteFigure | null): Row => {
  const path = PATHS[id];
  switch (id) {
    case 'ingest': return ratioRow(path, m, pg, 'b1-ingest-batch100', DISTRIBUTED ? 0.05 : 0.10, DISTRIBUTED ? null : 0.40, 'orders/s');
    case 'enrol': return ratioRow(path, m, pg, 'b6-enrol-c8', 0.25, 0.5, 'enrolments/s');
    case 'redeem': return ratioRow(path, m, pg, 'b3-redeem-spread-c8', 0.25, 0.5, 'redeems/s');
    case 'reserve': return ratioRow(path, m, pg, 'b7-reserve-c8', 0.25, 0.5, 'reservations/s (2-step)');
    case 'get-member': {
      const service = `${Math.round(m.value)} req/s, p99 ${m.p99} ms`;
      if (!bare) return { path, service, baseline: 'bare route: not measured', ratio: 'n/a', floor: '≥ 0.5, p99 ≤ 2×', goal: '0.65, p99 ≤ 1.5×', status: 'no baseline', value: m.value, unit: m.unit, detail: m.detail };
      const ratio = m.value / bare.rps;
      const p99 = (m.p99 ?? NaN) / bare.p99;
      return {
        path, service, baseline: `bare Node http + pg route: ${Math.round(bare.rps)} req/s, p99 ${bare.p99} ms`, ratio: `${fmt(ratio, 3)}, p99 ${fmt(p99, 2)}×`,
        floor: '≥ 0.5, p99 ≤ 2×', goal: '0.65, p99 ≤ 1.5×', status: verdict(ratio >= 0.5 && p99 <= 2, ratio >= 0.65 && p99 <= 1.5),
        value: m.value, unit: m.unit, baseline_name: 'bare-route', baseline_value: bare.rps, ratio_value: ratio, p99_ratio: p99, detail: m.detail,
      };
    }
    case 'import': {
      const base = unitsOf(pg, 'b6-enrol-c8');
      const ratio = base ? m.value / base : NaN;
      return {
        path, service: `${Math.round(m.value)} members/s`, baseline: base ? `b6-enrol-c8: ${Math.round(base)} enrolments/s` : 'b6-enrol-c8: not measured', ratio: fmt(ratio, 3),
        floor: '≥ 1,000 members/s', goal: 'ratio 0.5', status: verdict(m.value >= 1000, ratio >= 0.5), value: m.value, unit: m.unit,
        baseline_name: 'b6-enrol-c8', baseline_value: base, ratio_value: Number.isFinite(ratio) ? ratio : undefined, detail: m.detail,
      };
    }
    case 'expiry': return {
      path, service: `${Math.round(m.value)} lots/s`, baseline: '—', ratio: '—', floor: '≥ 1,000 lots/s', goal: '1 M lots in 10 min (≈ 1,667 lots/s)',
      status: verdict(m.value >= 1000, m.value >= 1_000_000 / 600), value: m.value, unit: m.unit, detail: m.detail,
    };
  }
};

// ---------- the run ----------

const withTimeout = <T>(p: Promise<T>, s: number, what: string): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, rej) => { timer = setTimeout(() => rej(new Error(`${what} still running after ${s} s`)), s * 1000); })])
    .finally(() => clearTimeout(timer));
};

const chosen = (): ScenarioId[] => {
  const raw = process.env.BENCH_SCENARIOS ?? (DISTRIBUTED ? 'ingest' : ALL.join(','));
  if (raw.trim() === 'none') return [];
  const ids = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const id of ids) if (!(ALL as readonly string[]).includes(id)) throw new Error(`unknown scenario ${id} (known: ${ALL.join(', ')})`);
  return ALL.filter((id) => ids.includes(id));
};

const main = async (): Promise<void> => {
  const ids = chosen();
  const startedAt = new Date();
  const load0 = loadavg();
  log(`suite (${MODE}${QUICK ? ', quick' : ''}): ${ids.join(', ') || 'baselines only'}; HTTP load generator ${httpClientName()}; load average ${load0.map((x) => x.toFixed(2)).join(' ')}`);

  // 1. pgbench baselines and 2. the bare route, on one scratch database
  let pg: PgbenchFigure[] = [];
  let bare: BareRouteFigure | null = null;
  const problems: string[] = [];
  let scratch: Awaited<ReturnType<typeof scratchDatabase>> | null = null;
  try {
    scratch = await scratchDatabase('bench_baseline');
    log(`raw baselines: tools/bench/baselines/run.sh ${SETTINGS.baselineSeconds} ${scratch.name}`);
    pg = (await runPgbench(SETTINGS.baselineSeconds, scratch.name)).figures;
  } catch (e) {
    problems.push(`pgbench baselines: ${(e as Error).message}`);
    log(`pgbench baselines failed: ${(e as Error).message}`);
  }
  if (ids.includes('get-member')) {
    try {
      if (!scratch) scratch = await scratchDatabase('bench_baseline');
      const where = (process.env.BENCH_BARE_PROCESS as 'same' | 'child' | undefined) ?? (process.env.BENCH_URL || process.env.BENCH_IN_PROCESS !== '1' ? 'child' : 'same');
      log(`bare route: GET /members/:id, ${SETTINGS.seedMembers} rows, 32 connections, ${SETTINGS.seconds} s (${where} process)`);
      bare = await benchBareRoute(scratch.url, { rows: SETTINGS.seedMembers, poolSize: SETTINGS.barePool, connections: 32, seconds: SETTINGS.seconds, where });
      log(`bare route: ${Math.round(bare.rps)} req/s, p99 ${bare.p99} ms${bare.cpuMsPerRequest !== null ? `, CPU per request ${bare.cpuMsPerRequest.toFixed(3)} ms` : ''}`);
    } catch (e) {
      problems.push(`bare route: ${(e as Error).message}`);
      log(`bare route failed: ${(e as Error).message}`);
    }
  }
  // the scenario's own baseline again, just before and just after it (BENCH_BESIDE=0: the start-of-run figures only)
  const besideDb = BESIDE && pg.length ? scratch : null;
  if (!besideDb) await scratch?.drop().catch((e: Error) => log(`could not drop ${scratch?.name}: ${e.message}`));
  const beside = async (id: ScenarioId): Promise<number | null> => {
    const name = BASELINE_OF[id];
    if (!besideDb || !name) return null;
    try {
      return (await runOneBaseline(name, SETTINGS.baselineSeconds, besideDb.name)).units;
    } catch (e) {
      log(`baseline beside ${id} failed: ${(e as Error).message}`);
      return null;
    }
  };

  // 3. the service scenarios, each on its own programme (and, standalone, its own app and database)
  const rows: Row[] = [];
  let shared: Target | null = null;
  for (const id of ids) {
    const tag = randomBytes(3).toString('hex');
    log(`--- ${id} ---`);
    let t: Target | null = null;
    const s0 = now();
    const before = await beside(id);
    let after: number | null = null;
    try {
      t = process.env.BENCH_URL ? (shared ??= await target()) : await target();
      const m = await withTimeout(scenarios[id]({ t, tag }), SETTINGS.scenarioTimeoutS, id);
      if (t !== shared) { await t.close().catch((e: Error) => log(`closing the ${id} target: ${e.message}`)); t = null; }
      after = await beside(id);
      const row = rowFor(id, m, besideFigures(pg, BASELINE_OF[id], before, after), bare);
      rows.push(row);
      log(`${id}: ${row.service} (${m.detail}) → ${row.ratio} ${row.status} [${fmt((now() - s0) / 1000, 0)} s]`);
    } catch (e) {
      const msg = (e as Error).message ?? String(e);
      log(`${id} failed: ${msg}`);
      rows.push({ path: PATHS[id], service: 'error', baseline: '', ratio: 'n/a', floor: '', goal: '', status: 'error', error: msg.slice(0, 500) });
    } finally {
      if (t && t !== shared) await t.close().catch((e: Error) => log(`closing the ${id} target: ${e.message}`));
    }
  }
  await shared?.close();
  agent.destroy();
  await besideDb?.drop().catch((e: Error) => log(`could not drop ${besideDb?.name}: ${e.message}`));

  // 4. the table, and the JSON for notes
  const load1 = loadavg();
  const title = `Throughput suite (${MODE}${QUICK ? ', QUICK: scaled down' : ''}; ${startedAt.toISOString()}; load generator ${httpClientName()}; 2-core load average ${load0[0].toFixed(1)} → ${load1[0].toFixed(1)})`;
  process.stdout.write(`\n${title}\n\nRaw baselines in this run (tools/bench/baselines/run.sh ${SETTINGS.baselineSeconds}):\n`);
  for (const f of pg) process.stdout.write(`  ${f.name.padEnd(22)} tps=${f.tps.toFixed(1).padStart(9)} units/s=${f.units.toFixed(1).padStart(10)}\n`);
  if (bare) process.stdout.write(`  bare-route (http+pg)   req/s=${bare.rps.toFixed(1).padStart(9)} p50=${bare.p50} ms p99=${bare.p99} ms (${bare.process} process, pool ${bare.pool}, ${bare.rows} rows, non-2xx ${bare.non2xx}${bare.cpuMsPerRequest !== null ? `, CPU per request ${bare.cpuMsPerRequest.toFixed(3)} ms` : ''})\n`);
  for (const p of problems) process.stdout.write(`  ! ${p}\n`);
  process.stdout.write('\n| path | service | raw baseline (same run) | ratio | floor | goal | status |\n|---|---|---|---|---|---|---|\n');
  for (const r of rows) {
    process.stdout.write(r.status === 'error'
      ? `| ${r.path} | error: ${(r.error ?? '').replace(/\|/g, '/').replace(/\n/g, ' ').slice(0, 200)} | | | | | error |\n`
      : `| ${r.path} | ${r.service} | ${r.baseline} | ${r.ratio} | ${r.floor} | ${r.goal} | ${r.status} |\n`);
  }
  process.stdout.write('\nDetails:\n');
  for (const r of rows) if (r.detail) process.stdout.write(`  ${r.path}: ${r.detail}\n`);

  const out = process.env.BENCH_OUT || join(tmpdir(), `loyalty-bench-${MODE}-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  const result = {
    suite: 'issue-7 throughput', mode: MODE, quick: QUICK, started_at: startedAt.toISOString(), finished_at: new Date().toISOString(),
    load_average: { start: load0, end: load1 }, settings: SETTINGS, scenarios: ids,
    baselines: { pgbench: pg, bare_route: bare, problems }, rows,
  };
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`\nJSON: ${out}\n`);
};

main().catch((e) => { console.error(e); process.exit(1); });
