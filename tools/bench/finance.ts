import 'reflect-metadata';
import { Pool } from 'pg';
import type { EntryData, MemberEvent } from '@loyalty/domain-member';
import { PostgresEventStore } from '@loyalty/event-store';
import { replayRollForward } from '@loyalty/ledger';
import { randomUUID } from 'node:crypto';
import { newId } from '@loyalty/platform';
import { benchProgram, json, target } from './bench-kit';
import { env, fmt, log, quantile, sleep, table } from './ingest';

/**
 * Closing the books at scale (issue 9; figures for notes, never asserted).
 *
 * Seeds one live programme with BENCH_ENTRIES (100,000) ledger entries over BENCH_MEMBERS (1,000)
 * member streams and the last 90 days of programme time (earns posted and pending, releases,
 * redemptions, adjustments both ways, expiries), appended straight to the event store so the
 * seeding takes seconds; the running service projects them like any other events. Then, over HTTP:
 *   - GET /v1/tenant/liability/roll-forward for (now − 60 d, now − 1 d], BENCH_RUNS (20) times;
 *   - GET /v1/tenant/liability?as_of=now − 30 d, BENCH_RUNS times;
 *   - the full period's ledger-entries as CSV (rows, seconds, the process's peak RSS growth);
 * and last the same roll-forward from a full replay of every stream (what the projection saves),
 * with both figures printed and compared.
 *
 *   tools/bench/run.sh finance
 */
const main = async (): Promise<void> => {
  const entries = env('BENCH_ENTRIES', 100_000);
  const membersN = env('BENCH_MEMBERS', 1_000);
  const runs = env('BENCH_RUNS', 20);
  const t = await target();
  const pool = new Pool({ connectionString: t.databaseUrl, max: 8 });
  const store = new PostgresEventStore(pool, 50);
  try {
    const p = await benchProgram(t);
    const tenant = p.programId;
    const now = Date.now();
    const start = now - 90 * 86_400_000;
    const span = now - 3_600_000 - start;
    let seed = 7;
    const rnd = () => { seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648; return seed / 2_147_483_648; };

    log(`seeding ${entries} entries over ${membersN} members (programme ${tenant})`);
    const seedStarted = Date.now();
    const perMember = Math.ceil(entries / membersN);
    let written = 0;
    for (let m = 0; m < membersN && written < entries; m++) {
      const memberId = newId('M');
      let at = start + Math.floor(rnd() * 5 * 86_400_000);
      const step = Math.floor((span - 5 * 86_400_000) / perMember);
      const events: MemberEvent[] = [{ type: 'MemberCreated', data: {
        member_id: memberId, state: 'registered', referral_code: `B${m}`, pii: null as never, marketing_consent: false, accepted_terms_version: null, at: new Date(at).toISOString(),
      } }];
      let available = 0;
      const pending: { id: string; amount: number }[] = [];
      const entry = (type: EntryData['type'], status: EntryData['status'], amount: number, reason: string): EntryData => ({
        id: newId('LE'), type, status, amount_cents: amount, reason_code: reason, rule: type === 'earn' ? 'base' : null, parent_entry_id: null,
        release_at: null, expires_at: null, created_at: new Date(at).toISOString(), order_ref: type === 'earn' ? `O-${m}-${written}` : null, cause: `bench:${written}`,
      });
      for (let k = 0; k < perMember && written < entries; k++) {
        at += 1 + Math.floor(rnd() * step * 1.9);
        if (at > now - 3_600_000) at = now - 3_600_000 - (perMember - k);
        const r = rnd();
        if (r < 0.15 && pending.length) {
          const rel = pending.shift()!;
          events.push({ type: 'EntryReleased', data: { entry_id: rel.id, at: new Date(at).toISOString() } });
          available += rel.amount;
        }
        let e: EntryData;
        if (r < 0.55) e = entry('earn', 'posted', 100 + Math.floor(rnd() * 900), 'base');
        else if (r < 0.7) e = entry('earn', 'pending', 100 + Math.floor(rnd() * 900), 'base');
        else if (r < 0.85 && available > 200) e = entry('redeem', 'posted', -(100 + Math.floor(rnd() * (available - 150))), 'voucher');
        else if (r < 0.93) e = entry('adjust', 'posted', (rnd() < 0.7 ? 1 : -1) * (50 + Math.floor(rnd() * 500)), 'goodwill');
        else if (available > 60) e = entry('expire', 'posted', -Math.min(available, 50 + Math.floor(rnd() * 200)), 'expiry');
        else e = entry('earn', 'posted', 100 + Math.floor(rnd() * 900), 'base');
        events.push({ type: 'EntryRecorded', data: e });
        if (e.type === 'earn' && e.status === 'pending') pending.push({ id: e.id, amount: e.amount_cents });
        else available += e.amount_cents;
        written++;
      }
      await store.append(`member-${tenant}-${memberId}`, events.map((ev) => ({ id: randomUUID(), type: ev.type, data: ev.data })), 'no_stream');
    }
    const seeded = (Date.now() - seedStarted) / 1000;
    log(`appended ${written} entries in ${fmt(seeded)} s; waiting for the projections`);
    const projStarted = Date.now();
    for (;;) {
      const { rows } = await pool.query<{ n: string }>('select count(*) as n from ledger.finance_entries where tenant = $1', [tenant]);
      if (Number(rows[0].n) >= written) break;
      await sleep(500);
    }
    const projected = (Date.now() - projStarted) / 1000;

    const from = new Date(now - 60 * 86_400_000).toISOString();
    const to = new Date(now - 86_400_000).toISOString();
    const qs = `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
    const time = async (path: string): Promise<{ ms: number[]; last: any }> => {
      const ms: number[] = [];
      let last: any = null;
      for (let i = 0; i < runs; i++) {
        const s = process.hrtime.bigint();
        last = (await json(t.url, 'GET', path, p.key)).data;
        ms.push(Number(process.hrtime.bigint() - s) / 1e6);
      }
      return { ms, last };
    };
    const rf = await time(`/v1/tenant/liability/roll-forward?${qs}`);
    const asOf = await time(`/v1/tenant/liability?as_of=${encodeURIComponent(new Date(now - 30 * 86_400_000).toISOString())}`);
    const movementsInPeriod = (await pool.query<{ n: string }>('select count(*) as n from ledger.finance_movements where tenant = $1 and at > $2 and at <= $3', [tenant, from, to])).rows[0].n;

    // the full period as CSV, streamed
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    const csvStarted = Date.now();
    const res = await fetch(`${t.url}/v1/ledger-entries?from=${encodeURIComponent(new Date(start - 86_400_000).toISOString())}`, { headers: { authorization: `Bearer ${p.key}`, accept: 'text/csv' } });
    let rows = -1;
    let bytes = 0;
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.length;
      for (const b of value) if (b === 10) rows++;
      peak = Math.max(peak, process.memoryUsage().rss);
    }
    const csvSeconds = (Date.now() - csvStarted) / 1000;

    const replayStarted = Date.now();
    const replay = await replayRollForward(store, tenant, new Date(from), new Date(to));
    const replayMs = Date.now() - replayStarted;
    const equal = JSON.stringify(replay.roll) === JSON.stringify(rf.last);

    table(`Finance (${t.mode}): ${written} entries, ${membersN} members, 90 days; period (now−60 d, now−1 d]`, ['measure', 'figure'], [
      ['seed (event store appends)', `${fmt(seeded)} s`],
      ['projection catch-up (all ledger read models)', `${fmt(projected)} s`],
      ['movements in the period', movementsInPeriod],
      [`roll-forward over HTTP, p50 / p99 of ${runs}`, `${fmt(quantile(rf.ms, 0.5))} / ${fmt(quantile(rf.ms, 0.99))} ms`],
      [`liability as_of over HTTP, p50 / p99 of ${runs}`, `${fmt(quantile(asOf.ms, 0.5))} / ${fmt(quantile(asOf.ms, 0.99))} ms`],
      ['full replay of every stream (the reference)', `${replayMs} ms`],
      ['roll-forward equals the full replay', String(equal)],
      ['CSV export of every entry', `${rows} rows, ${fmt(bytes / 1e6)} MB in ${fmt(csvSeconds)} s (${fmt(rows / csvSeconds, 0)} rows/s)`],
      ['peak RSS growth during the CSV export (this process: server and client)', `${fmt((peak - rssBefore) / 1e6)} MB`],
    ]);
    process.stdout.write(`roll-forward: ${JSON.stringify(rf.last, null, 2)}\n`);
    if (!equal) process.stdout.write(`replay: ${JSON.stringify(replay.roll, null, 2)}\n`);
  } finally {
    await pool.end().catch(() => undefined);
    await t.close();
  }
};

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
