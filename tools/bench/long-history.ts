/**
 * Long histories (issue 13): what one member's history costs a command, warm and after a restart.
 *
 *   npm run bench:long-history                       # members of 10 and 10,000 entries
 *   BENCH_SIZES=10,10000,100000 npm run bench:long-history
 *
 * Starts the standalone service as its own process on a fresh database, enrols one member per size
 * and seeds its stream with that many ledger entries spread over the past years (orders earning,
 * vouchers redeemed and used, refunds, adjustments; decided by the domain's own deciders and
 * appended straight to the event store, as the service would have written them), waits for the read
 * models (a snapshot is stored at the end of the seeded history, as the service would have stored
 * one every 250 events), then restarts the service once. Then, per size:
 *   - warm: POST /v1/members/{id}/adjust, the median (and p90) of 20 after 3 warm-ups;
 *   - restart: the service is stopped and started again (a new process), and the first adjust of
 *     that member is timed (the snapshot + the tail of the stream), one restart per size
 *     (BENCH_RESTARTS=n: n restarts per size, the median and each figure printed).
 * Also prints the member's snapshot size and the process's resident memory. Figures for notes,
 * never asserted. Needs PostgreSQL on 127.0.0.1:5432 (TEST_DATABASE_URL / BENCH_DATABASE_URL).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { memberStreamId } from '@loyalty/contracts';
import { MemberAggregate, MemberEvent, memberEvolver } from '@loyalty/domain-member';
import { NewEvent, PostgresEventStore, SnapshotStore } from '@loyalty/event-store';
import { benchProgram, json } from './bench-kit';
import { seedHistory, spanOf } from './long-history-seed';
import { median, ms, pct, time, withService } from './service-process';

const SIZES = (process.env.BENCH_SIZES ?? '10,10000').split(',').map((s) => Number(s.trim())).filter((n) => Number.isSafeInteger(n) && n > 0);
const WARM = 20;
const RESTARTS = Math.max(1, Number(process.env.BENCH_RESTARTS ?? 1) || 1);

/** Seeds the member's stream with `entries` ledger entries (tools/bench/long-history-seed.ts), appended 1,000 events at a time. */
const seed = async (store: PostgresEventStore, streamId: string, entries: number): Promise<{ state: MemberAggregate; revision: bigint; eventId: string }> => {
  const read = await store.readStream(streamId, 0n);
  let s: MemberAggregate = memberEvolver.initialState();
  for (const e of read) s = memberEvolver.evolve(s, { type: e.type, data: e.data } as MemberEvent);
  let revision = read[read.length - 1].revision;
  let lastId = read[read.length - 1].id;
  const start = Date.parse((read[0].data as { at: string }).at) + 60_000;
  s = await seedHistory(s, start, entries, async (events) => {
    const batch: NewEvent[] = events.map((e) => ({ id: randomUUID(), type: e.type, data: e.data }));
    lastId = batch[batch.length - 1].id;
    await store.append(streamId, batch, revision);
    revision += BigInt(batch.length);
  });
  return { state: s, revision, eventId: lastId };
};

interface Row { entries: number; warmMedian: number; warmP90: number; restart: number; restarts?: number[]; snapshotBytes: number | null; snapshotRev: string | null; streamEvents: number; stateBytes: number }

withService('bench_long', async ({ service, adminToken, pool, store }) => {
  const snapshots = new SnapshotStore(pool);
  await service.start();
  const t = { url: service.url, adminToken, close: async () => undefined, mode: 'standalone' };
  const { programId } = await benchProgram(t, { rules: [{ type: 'base', name: 'Base', earn_rate_pct: 10, timing: 'immediate' }] });
  // a sandbox key: its programme clock moves past the seeded history
  const key = (await json(service.url, 'POST', `/admin/v1/programs/${programId}/keys`, adminToken,
    { mode: 'test', scopes: ['ingest', 'read', 'act', 'webhooks'], rate_limit: { burst: 1_000_000, per_second: 1_000_000 } })).data.key as string;
  const tenant = `${programId}_test`;
  const members: { size: number; id: string; stream: string }[] = [];
  for (const size of SIZES) {
    const m = await json(service.url, 'POST', '/v1/members', key, { email: `long-${size}-${randomBytes(3).toString('hex')}@example.com` });
    members.push({ size, id: m.data.id, stream: memberStreamId(tenant, m.data.id) });
  }
  for (const m of members) {
    const [took, last] = await time(() => seed(store, m.stream, m.size));
    process.stdout.write(`seeded ${m.size} entries in ${ms(took / 1000)} s\n`);
    // the snapshot the service would have stored along the way (every 250 events): without it, a cold
    // projection after a restart would fold the whole stream inside its batch transaction
    snapshots.saveSoon(m.stream, memberEvolver.snapshot, last.revision, last.eventId, last.state);
  }
  // the present: an hour after the longest history ends
  for (let left = Math.ceil((Math.max(...SIZES.map(spanOf)) + 3_600_000) / 1000); left > 0; left -= 315_360_000) {
    await json(service.url, 'POST', `/admin/v1/programs/${programId}/test-clock/advance`, adminToken, { seconds: Math.min(left, 315_360_000) }); // at most ten years a step
  }
  await new Promise((r) => setTimeout(r, 2_000)); // snapshots are written in the background
  // the read models take every seeded event in (the ledger listing catches up before it answers)
  for (const m of members) {
    for (const deadline = Date.now() + 600_000; ;) {
      const { rows } = await pool.query<{ n: string }>('select count(*) as n from ledger.finance_entries where member_id = $1', [m.id]);
      if (Number(rows[0].n) >= m.size) break;
      if (Date.now() > deadline) throw new Error(`the read models did not take in member ${m.id}'s ${m.size} entries in 10 minutes`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  // a first restart: each member's first command folds its stream once and stores a snapshot, as it
  // would have happened over the years of commands that wrote the history
  await service.stop();
  await service.start();
  let seq = 0;
  const adjust = (id: string) => json(service.url, 'POST', `/v1/members/${id}/adjust`, key, { amount_cents: 1, reason_code: 'bench', idempotency_key: `bench-${++seq}-${randomBytes(4).toString('hex')}` });
  for (const m of members) await adjust(m.id);
  await new Promise((r) => setTimeout(r, 1_000)); // snapshots are written in the background

  const rows: Row[] = [];
  for (const m of members) {
    for (let i = 0; i < 3; i++) await adjust(m.id);
    const warm: number[] = [];
    for (let i = 0; i < WARM; i++) warm.push((await time(() => adjust(m.id)))[0]);
    rows.push({ entries: m.size, warmMedian: median(warm), warmP90: pct(warm, 90), restart: 0, snapshotBytes: null, snapshotRev: null, streamEvents: 0, stateBytes: 0 });
  }
  const rssWarm = service.rssMiB();
  for (const [i, m] of members.entries()) {
    // BENCH_RESTARTS (default 1): restarts per size, the median is reported (each is a new process)
    const firsts: number[] = [];
    for (let r = 0; r < RESTARTS; r++) {
      await service.stop();
      await service.start();
      firsts.push((await time(() => adjust(m.id)))[0]);
    }
    rows[i].restart = median(firsts);
    rows[i].restarts = firsts;
    const snap = await pool.query<{ bytes: number; revision: string }>(
      'select length(state) as bytes, revision::text from es.snapshots where stream_id = $1 order by revision desc limit 1', [m.stream]);
    rows[i].snapshotBytes = snap.rows[0]?.bytes ?? null;
    rows[i].snapshotRev = snap.rows[0]?.revision ?? null;
    const events = await store.readStream(m.stream, 0n);
    rows[i].streamEvents = events.length;
    let s = memberEvolver.initialState();
    for (const e of events) s = memberEvolver.evolve(s, { type: e.type, data: e.data } as MemberEvent);
    rows[i].stateBytes = memberEvolver.sizeOf(s);
  }
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  process.stdout.write(`\nLong histories (issue 13), standalone service in its own process; load average ${load}; resident memory after the warm runs ${rssWarm?.toFixed(0) ?? '?'} MiB\n`);
  process.stdout.write(`| ledger entries | stream events | adjust warm: median of ${WARM} (p90), ms | first adjust after a restart, ms | snapshot bytes (revision) | state estimate, bytes |\n|---|---|---|---|---|---|\n`);
  for (const r of rows) {
    process.stdout.write(`| ${r.entries} | ${r.streamEvents} | ${ms(r.warmMedian)} (${ms(r.warmP90)}) | ${ms(r.restart)}${r.restarts && r.restarts.length > 1 ? ` (${r.restarts.map(ms).join(', ')})` : ''} | ${r.snapshotBytes ?? 'none'} (${r.snapshotRev ?? '-'}) | ${r.stateBytes} |\n`);
  }
  if (process.env.BENCH_OUT) {
    const { writeFileSync } = await import('node:fs');
    writeFileSync(process.env.BENCH_OUT, JSON.stringify({ load, rssWarmMiB: rssWarm, rows }, null, 2));
  }
});
