import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { Client } from 'pg';
import type { Tier } from '@loyalty/contracts';
import { MemberAggregate, MemberEvent, decideTier, memberEvolver, orderEarnRecorded } from '@loyalty/domain-member';
import { dueItemsOf } from '@loyalty/ledger';
import { Target, benchProgram, json, target } from './bench-kit';
import { Customer, benchProgramBody, programLabel, connect, enrolMembers, env, fmt, liveTenant, log, now, orderPaid, postEvents, quantile, sleep, table, waitDrained } from './ingest';

/**
 * Per-event processing cost for a member with 10 vs 10,000 prior ledger entries (issue 3: it must
 * stay flat; figures for notes, never asserted).
 *
 * Two members are seeded with BENCH_SMALL (10) and BENCH_LARGE (10,000) `order.paid` events (one
 * earn entry each), in batches of 100. Then BENCH_RUNS (200) more events are sent to each, one
 * at a time, alternating between the two members, and for every event:
 *   - server: `processed_at - received_at` of its EventStatus (queue pick-up + ledger processing +
 *     recording the outcome; the programme clock, millisecond resolution);
 *   - e2e: from the POST until the status reads `completed` (polled every BENCH_POLL_MS = 2 ms).
 * Cold (standalone only): the app is restarted on the same database (a fresh process state: no
 * cached aggregates or projection state; the JIT stays warm) and the first event of each member is
 * timed, BENCH_COLD_RUNS (3) times.
 * BENCH_PROFILE=<path prefix> also writes a CPU profile of BENCH_RUNS events of each member alone.
 * Last, the pure per-event functions that walk the whole member state are timed in memory on
 * aggregates of BENCH_SMALL and BENCH_LARGE earn entries (no I/O), to attribute any growth.
 *
 *   tools/bench/run.sh ledger-cost               # standalone
 *   BENCH_TIERS=1 tools/bench/run.sh ledger-cost # with two spend tiers on a rolling 365-day window
 */

interface Sample { e2e: number; server: number }

/** A member aggregate with `n` posted earns from `n` orders (as order.paid under a base rule writes them). */
const aggregateWith = (n: number, expires: boolean): MemberAggregate => {
  let s = memberEvolver.initialState();
  const ev = (e: MemberEvent) => { s = memberEvolver.evolve(s, e); };
  ev({ type: 'MemberCreated', data: { member_id: 'M-BENCH', state: 'registered', referral_code: 'BENCH', pii: null as never, marketing_consent: false, accepted_terms_version: null, at: '2025-01-01T00:00:00.000Z' } });
  const t0 = Date.parse('2025-01-01T00:00:00.000Z');
  for (let i = 0; i < n; i++) {
    const at = new Date(t0 + i * 60_000).toISOString();
    ev({ type: 'EntryRecorded', data: {
      id: `LE-${i}`, type: 'earn', status: 'posted', amount_cents: 100, reason_code: 'order', rule: 'R-base', parent_entry_id: null, release_at: null,
      expires_at: expires ? new Date(t0 + i * 60_000 + 365 * 86_400_000).toISOString() : null, created_at: at, order_ref: `O-${i}`, cause: `earn:O-${i}:R-base`,
    } });
    ev({ type: 'OrderActivityRecorded', data: { at, spend_cents: 10_000, orders: 1, cause: `activity:O-${i}:earn` } } as MemberEvent);
  }
  return s;
};

/** Median ms of `fn` over `reps` calls (after one warm-up call). */
const timeIt = (fn: () => unknown, reps: number): number => {
  fn();
  const xs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = now();
    fn();
    xs.push(now() - t0);
  }
  return quantile(xs, 0.5);
};

const pureCosts = (small: number, large: number): void => {
  const tier = (window: Tier['window']): Tier[] => [{
    name: 'Silver', level: 1, threshold_type: 'spend', threshold_value: 5_000_000, criteria: [], criteria_mode: 'all', window, window_days: null, earn_multiplier: 1.25, benefits: {},
  }];
  const at = '2026-01-01T00:00:00.000Z';
  const rows: (string | number)[][] = [];
  const states = [small, large].map((n) => [aggregateWith(n, false), aggregateWith(n, true)] as const);
  const fns: [string, (s: MemberAggregate) => unknown, 0 | 1][] = [
    ['dueItemsOf (ledger.due_items projection, every member event)', (s) => dueItemsOf(s), 0],
    ['dueItemsOf, points with an expiry date', (s) => dueItemsOf(s), 1],
    ['orderEarnRecorded, new order (twice per order event)', (s) => orderEarnRecorded(s, 'O-new'), 0],
    ['decideTier, no tiers (once per order event)', (s) => decideTier(s, [], at), 0],
    ['decideTier, 1 lifetime tier', (s) => decideTier(s, tier('lifetime'), at), 0],
    ['decideTier, 1 rolling_365 tier', (s) => decideTier(s, tier('rolling_365'), at), 0],
  ];
  for (const [name, fn, variant] of fns) {
    const ms = states.map(([plain, dated]) => timeIt(() => fn(variant ? dated : plain), 30));
    rows.push([name, fmt(ms[0], 3), fmt(ms[1], 3), ms[0] >= 0.0005 ? fmt(ms[1] / ms[0], 0) : '—']);
  }
  table(`Pure functions that walk the whole member state (in memory, median ms per call; ${small} vs ${large} earn entries)`,
    ['function', `${small} entries`, `${large} entries`, 'ratio'], rows);
};

const waitEvent = async (t: Target, key: string, db: Client | null, tenant: string, id: string, pollMs: number): Promise<{ received_at: string; processed_at: string; status: string; error: string | null }> => {
  for (let i = 0; ; i++) {
    let row: { status: string; received_at: string; processed_at: string | null; error: string | null };
    if (db) {
      const { rows } = await db.query(
        `select status, error, to_char(received_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as received_at,
                to_char(processed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as processed_at
           from ingest.events where tenant = $1 and id = $2`, [tenant, id]);
      row = rows[0];
    } else {
      row = (await json(t.url, 'GET', `/v1/events/${id}`, key)).data;
    }
    if (row && (row.status === 'completed' || row.status === 'failed')) return row as { received_at: string; processed_at: string; status: string; error: string | null };
    if (i > 60_000 / pollMs) throw new Error(`event ${id} not processed after 60 s`);
    await sleep(pollMs);
  }
};

/** One event for the customer: POST, wait until processed. */
const oneEvent = async (t: Target, key: string, db: Client | null, tenant: string, ev: Record<string, unknown>, pollMs: number): Promise<Sample> => {
  const t0 = now();
  const accepted = await json(t.url, 'POST', '/v1/events', key, ev);
  const row = await waitEvent(t, key, db, tenant, accepted.data.id, pollMs);
  const e2e = now() - t0;
  if (row.status !== 'completed') throw new Error(`event ${accepted.data.id} ${row.status}: ${row.error}`);
  // microsecond strings when read from the database; Date keeps milliseconds, so add the rest by hand
  const us = (s: string) => Date.parse(s) * 1000 + Number(/\.\d{3}(\d{3})Z$/.exec(s)?.[1] ?? 0);
  return { e2e, server: (us(row.processed_at) - us(row.received_at)) / 1000 };
};

const entriesOf = async (t: Target, key: string, memberId: string): Promise<number> => {
  let n = 0;
  let cursor: string | null = null;
  do {
    const page: any = await json(t.url, 'GET', `/v1/members/${memberId}/ledger?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, key);
    n += page.data.length;
    cursor = page.pagination.cursor;
  } while (cursor);
  return n;
};

const main = async (): Promise<void> => {
  const small = env('BENCH_SMALL', 10);
  const large = env('BENCH_LARGE', 10_000);
  const runs = env('BENCH_RUNS', 200);
  const coldRuns = env('BENCH_COLD_RUNS', 3);
  const pollMs = env('BENCH_POLL_MS', 2);
  const t = await target();
  const db = await connect(t.databaseUrl);
  try {
    const { programId, key } = await benchProgram(t, benchProgramBody());
    const tenant = liveTenant(programId);
    const tag = randomBytes(3).toString('hex');
    const [S, L] = await enrolMembers(t, key, 2, tag);
    let seq = 0;
    const ev = (c: Customer) => orderPaid(`LC-${tag}-${seq++}`, c, seq);

    // seed: the small member, then the large one (one member's events all queue on its stream)
    const seedRows: (string | number)[][] = [];
    for (const [c, n, name] of [[S, small, 'small'], [L, large, 'large']] as const) {
      log(`seeding the ${name} member with ${n} order.paid events`);
      const before = seq;
      const posted = await postEvents(t, key, Array.from({ length: n }, () => ev(c)), { batch: 100, inFlight: 4 });
      const drained = await waitDrained(t, key, db, tenant, seq, { progress: n > 1000 });
      const s = (drained.doneAt - posted.firstPostAt) / 1000;
      seedRows.push([name, seq - before, fmt(s, 1), Math.round((seq - before) / s)]);
    }
    const memberIds = [S.id!, L.id!];
    const counts = await Promise.all(memberIds.map((id) => entriesOf(t, key, id)));
    log(`entries: small ${counts[0]}, large ${counts[1]}`);

    // warm: alternate between the two members, one event at a time
    log(`measuring ${runs} events per member, one at a time`);
    const warm: [Sample[], Sample[]] = [[], []];
    for (let i = 0; i < 5; i++) for (const c of [S, L]) await oneEvent(t, key, db, tenant, ev(c), pollMs); // warm-up, not counted
    for (let i = 0; i < runs; i++) {
      warm[0].push(await oneEvent(t, key, db, tenant, ev(S), pollMs));
      warm[1].push(await oneEvent(t, key, db, tenant, ev(L), pollMs));
    }

    // BENCH_PROFILE=<prefix> (standalone: the app runs in this process): CPU profiles of BENCH_RUNS events
    // of each member alone, written to <prefix>-small.cpuprofile and <prefix>-large.cpuprofile (Chrome DevTools)
    if (process.env.BENCH_PROFILE) {
      const session = new Session();
      session.connect();
      const post = (method: string, params: object = {}) => new Promise<any>((resolve, reject) => session.post(method, params, (e, r) => (e ? reject(e) : resolve(r))));
      await post('Profiler.enable');
      for (const [name, c] of [['small', S], ['large', L]] as const) {
        await post('Profiler.start');
        for (let i = 0; i < runs; i++) await oneEvent(t, key, db, tenant, ev(c), pollMs);
        const { profile } = await post('Profiler.stop');
        writeFileSync(`${process.env.BENCH_PROFILE}-${name}.cpuprofile`, JSON.stringify(profile));
        log(`wrote ${process.env.BENCH_PROFILE}-${name}.cpuprofile`);
      }
      session.disconnect();
    }

    // cold: restart the process, first event of one member
    const cold: [Sample[], Sample[]] = [[], []];
    if (t.restart) {
      for (let i = 0; i < coldRuns; i++) {
        for (const [k, c] of [[1, L], [0, S]] as const) {
          log(`cold run ${i + 1}: restarting, then one event for the ${k ? 'large' : 'small'} member`);
          await t.restart();
          cold[k].push(await oneEvent(t, key, db, tenant, ev(c), pollMs));
        }
      }
    }
    const after = await Promise.all(memberIds.map((id) => entriesOf(t, key, id)));

    const stat = (xs: number[], q: number) => fmt(quantile(xs, q), 1);
    table(`Seeding (${t.mode}): order.paid events for ONE member, batches of 100, 4 in flight`, ['member', 'events', 'seconds', 'events/s'], seedRows);
    const rows: (string | number)[][] = [];
    const names = [`${counts[0]} entries`, `${counts[1]} entries`];
    for (const k of [0, 1]) {
      rows.push([names[k], 'warm', runs, stat(warm[k].map((s) => s.server), 0.5), stat(warm[k].map((s) => s.server), 0.99), stat(warm[k].map((s) => s.e2e), 0.5), stat(warm[k].map((s) => s.e2e), 0.99)]);
    }
    for (const k of [0, 1]) {
      if (cold[k].length) rows.push([names[k], `cold (first event after restart; ${cold[k].length} runs: ${cold[k].map((s) => fmt(s.server, 0)).join(', ')} ms)`, cold[k].length,
        stat(cold[k].map((s) => s.server), 0.5), stat(cold[k].map((s) => s.server), 1), stat(cold[k].map((s) => s.e2e), 0.5), stat(cold[k].map((s) => s.e2e), 1)]);
    }
    table(`Per-event processing cost (${t.mode}; ${programLabel()}; ms; server = processed_at − received_at, e2e = POST → completed seen)`,
      ['member', 'case', 'events', 'server p50', 'server p99 (cold: max)', 'e2e p50', 'e2e p99 (cold: max)'], rows);
    const ratio = (q: number, f: (s: Sample) => number) => fmt(quantile(warm[1].map(f), q) / quantile(warm[0].map(f), q), 2);
    const ratioRows: (string | number)[][] = [['warm server p50', ratio(0.5, (s) => s.server)], ['warm server p99', ratio(0.99, (s) => s.server)], ['warm e2e p50', ratio(0.5, (s) => s.e2e)], ['warm e2e p99', ratio(0.99, (s) => s.e2e)]];
    if (cold[0].length && cold[1].length) {
      ratioRows.push(['cold server median', fmt(quantile(cold[1].map((s) => s.server), 0.5) / quantile(cold[0].map((s) => s.server), 0.5), 2)]);
      ratioRows.push(['cold large ÷ warm large (server p50)', fmt(quantile(cold[1].map((s) => s.server), 0.5) / quantile(warm[1].map((s) => s.server), 0.5), 1)]);
    }
    table(`Ratio large ÷ small (${counts[1]} vs ${counts[0]} prior entries)`, ['figure', 'ratio'], ratioRows);
    process.stdout.write(`\nentries after the run: small ${after[0]}, large ${after[1]}\n`);
    pureCosts(small, large);
  } finally {
    await db?.end();
    await t.close();
  }
};

main().catch((e) => { console.error(e); process.exit(1); });
