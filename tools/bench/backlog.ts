import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { benchProgram, target } from './bench-kit';
import {
  benchProgramBody, commits, programLabel, ratesByFifth, connect, enrolMembers, env, fmt, liveTenant, log, now, orderPaid, postEvents, sleep, statusCounts, table, waitDrained,
} from './ingest';

/**
 * Time to drain a 20,000-event backlog (issue 3; figures for notes, never asserted).
 *
 * BENCH_MEMBERS (1,000) members are enrolled, then BENCH_EVENTS (20,000) `order.paid` events are
 * enqueued as fast as the API takes them (batches of 100, BENCH_IN_FLIGHT = 16 requests at a
 * time); the worker starts on them at once. Measured: how long the enqueue took and how much was
 * already processed by then, then how long until every event is completed.
 *
 * The default backlog limit (LOYALTY_BACKLOG_LIMIT, 20,000 waiting events) is raised for the run:
 * the in-process standalone app gets backlogLimit 1,000,000; run.sh exports LOYALTY_BACKLOG_LIMIT
 * for the distributed topology. A 429 is resent after its Retry-After anyway and counted.
 *
 *   tools/bench/run.sh backlog               # standalone
 *   tools/bench/run.sh backlog distributed
 */
const main = async (): Promise<void> => {
  const total = env('BENCH_EVENTS', 20_000);
  const memberCount = env('BENCH_MEMBERS', 1000);
  const inFlight = env('BENCH_IN_FLIGHT', 16);
  const t = await target({ backlogLimit: env('LOYALTY_BACKLOG_LIMIT', 1_000_000) });
  const db = await connect(t.databaseUrl);
  try {
    const { programId, key } = await benchProgram(t, benchProgramBody());
    const tenant = liveTenant(programId);
    const tag = randomBytes(3).toString('hex');
    log(`${t.mode}: enrolling ${memberCount} members`);
    const customers = await enrolMembers(t, key, memberCount, tag);
    const events = Array.from({ length: total }, (_, i) => orderPaid(`BL-${tag}-${i}`, customers[i % customers.length], i));

    log(`enqueueing ${total} events, batches of 100, ${inFlight} in flight`);
    const c0 = await commits(db);
    const posted = await postEvents(t, key, events, { batch: 100, inFlight, max429WaitMs: 2000 });
    const atEnqueued = await statusCounts(db, tenant);
    log(`enqueued ${posted.accepted} in ${fmt((posted.lastAcceptAt - posted.firstPostAt) / 1000, 2)} s; draining`);
    const drained = await waitDrained(t, key, db, tenant, total, { countEveryMs: 250 }); // the rates by fifth need a fine timeline
    await sleep(1500);
    const c1 = await commits(db);

    const enqueueS = (posted.lastAcceptAt - posted.firstPostAt) / 1000;
    const totalS = (drained.doneAt - posted.firstPostAt) / 1000;
    const afterS = (drained.doneAt - posted.lastAcceptAt) / 1000;
    const doneAtEnqueue = atEnqueued ? atEnqueued.completed + atEnqueued.failed : NaN;
    const slices = ratesByFifth(drained.timeline, posted.firstPostAt, total);
    table(`Backlog drain (${t.mode}; ${programLabel()}; ${memberCount} members; ${total} order.paid; batches of 100, ${inFlight} in flight)`,
      ['events', 'enqueue s', 'enqueued ev/s', 'processed while enqueueing', 'drain after enqueue s', 'first POST → all completed s', 'completed ev/s', 'failed', '429 resent', 'xact/event'],
      [[total, fmt(enqueueS, 2), Math.round(posted.accepted / enqueueS), Number.isNaN(doneAtEnqueue) ? 'n/a' : doneAtEnqueue, fmt(afterS, 1), fmt(totalS, 1),
        Math.round(total / totalS), drained.counts ? drained.counts.failed : (drained.anyFailed ? '>0' : 0), posted.retries429,
        c0 !== null && c1 !== null ? fmt((c1 - c0) / total, 1) : 'n/a']]);
    if (slices.length) table('Processing rate by fifth of the events (completed per second; does it slow down as the queue or the tables grow?)', ['1st', '2nd', '3rd', '4th', '5th'], [slices]);
  } finally {
    await db?.end();
    await t.close();
  }
};

main().catch((e) => { console.error(e); process.exit(1); });
