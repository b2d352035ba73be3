/**
 * Soak (issue 13): is the service's resident memory flat once its caches are full?
 *
 *   npm run bench:soak                                   # 100,000 members, 1,000,000 events
 *   SOAK_MEMBERS=10000 SOAK_DRIVE_S=60 npm run bench:soak # a short one (SOAK_SAMPLE_S, SOAK_CATCHUP_S)
 *
 * Starts the standalone service as its own process on a fresh database (default cache budgets:
 * LOYALTY_STATE_CACHE_BYTES 64 MiB, LOYALTY_FOLD_CACHE_BYTES 64 MiB for the process's member fold), then:
 *   1. creates SOAK_MEMBERS members through the API (POST /v1/members: identities, sealed PII);
 *   2. seeds each member's stream to 10 events (orders earning, an adjustment, a direct redemption;
 *      decided by the domain and appended straight to the event store, many streams per statement),
 *      1,000,000 events for 100,000 members, which the service's projections take in as they come
 *      (every member folded once by the ledger and webhook projections: their fold caches cycle);
 *   3. drives commands and reads through the API for SOAK_DRIVE_S seconds (16 clients, random
 *      members: 80 % POST /adjust, 20 % GET /ledger), so the command handler's state cache cycles too.
 * The service's resident memory (RSS, /proc) is sampled every SOAK_SAMPLE_S seconds throughout and
 * printed as a series with the phase, with the caches' bytes and hit ratios from /metrics at the end
 * of each phase. Figures for notes, never asserted. Needs PostgreSQL on 127.0.0.1:5432.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { memberStreamId } from '@loyalty/contracts';
import type { EarnLine } from '@loyalty/domain-earning';
import { MemberAggregate, MemberEvent, decideAdjust, decideIssueRedemption, decideOrderStep, memberEvolver, orderCauses, spendingRules } from '@loyalty/domain-member';
import { benchProgram, json } from './bench-kit';
import { ms, withService } from './service-process';

const MEMBERS = Number(process.env.SOAK_MEMBERS ?? 100_000);
const EVENTS_PER_MEMBER = 10;
const DRIVE_S = Number(process.env.SOAK_DRIVE_S ?? 240);
const SAMPLE_S = Number(process.env.SOAK_SAMPLE_S ?? 10);
const CATCHUP_S = Number(process.env.SOAK_CATCHUP_S ?? 900);
const CLIENTS = 16;

/** Runs `fn` over `items` with at most `n` at a time. */
const pooled = async <T>(items: T[], n: number, fn: (x: T, i: number) => Promise<void>): Promise<void> => {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i], i);
    }
  }));
};

/** A member's history after its creation: orders earning, an adjustment, a direct redemption (until it has 10 events). */
const history = (s0: MemberAggregate, k: number, start: number): MemberEvent[] => {
  let s = s0;
  const out: MemberEvent[] = [];
  const push = (events: MemberEvent[]) => { for (const e of events) { s = memberEvolver.evolve(s, e); out.push(e); } };
  const rules = spendingRules({});
  for (let i = 0; out.length < EVENTS_PER_MEMBER - 1; i++) {
    const at = new Date(start + i * 60_000).toISOString();
    if (i === 3) {
      push(decideAdjust(s, { entryId: `LE-${randomBytes(10).toString('hex')}`, amount_cents: 100, reason_code: 'goodwill', note: null, cause: `adjust:soak-${k}`, actor: 'bench', at }));
    } else if (i === 4 && s.available >= 50) {
      const id = `RD-${randomBytes(8).toString('hex')}`;
      push(decideIssueRedemption(s, rules, { redemption_id: id, entry_id: `LE-${randomBytes(10).toString('hex')}`, code: `S-${k}-${i}`, mode: 'direct', amount_cents: 50, order_ref: `use-${k}`, expires_at: null, cause: `redeem:${id}`, at }));
    } else {
      const ref = `soak-${k}-${i}`;
      const gross = 500 + ((k + i) % 9) * 100;
      const lines: EarnLine[] = [{ rule_id: 'base', rule_name: 'Base', rule_type: 'base', rule_version: 1, amount_cents: Math.floor(gross / 10), timing: 'paid', expiry_months: null }];
      push(decideOrderStep(s, {
        order: { order_ref: ref, earn_entry_ids: [], fulfilled_at: null, delivered: false }, at, expiry: { policy: 'none' }, return_window_days: 30,
        entryId: (cause) => `LE-${randomBytes(6).toString('hex')}-${cause}`, earn: { lines }, activity: { spend_cents: gross, orders: 1, cause: orderCauses.earnActivity(ref) },
      }).events);
    }
  }
  return out.slice(0, EVENTS_PER_MEMBER - 1);
};

/** Counters and gauges of the service's caches from /metrics (cache → name → value). */
const cacheMetrics = async (url: string): Promise<Record<string, Record<string, number>>> => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, Record<string, number>> = {};
  for (const m of text.matchAll(/^loyalty_state_cache_(\w+)\{cache="([^"]+)"\} (\S+)$/gm)) (out[m[2]] ??= {})[m[1]] = Number(m[3]);
  return out;
};
const describeCaches = (c: Record<string, Record<string, number>>): string => Object.entries(c).map(([name, v]) => {
  const hits = v.hits_total ?? 0;
  const misses = v.misses_total ?? 0;
  return `${name}: ${((v.bytes ?? 0) / 2 ** 20).toFixed(1)} of ${((v.max_bytes ?? 0) / 2 ** 20).toFixed(0)} MiB, ${v.entries ?? 0} states, hit ratio ${hits + misses ? ((100 * hits) / (hits + misses)).toFixed(1) : '-'} %, ${v.evictions_total ?? 0} evictions`;
}).join('; ');

withService('bench_soak', async ({ service, adminToken, pool, store }) => {
  const t0 = Date.now();
  let phase = 'start';
  const samples: { s: number; phase: string; rssMiB: number | null }[] = [];
  const sample = () => samples.push({ s: Math.round((Date.now() - t0) / 1000), phase, rssMiB: service.rssMiB() });
  const sampler = setInterval(sample, SAMPLE_S * 1000);
  const phases: { phase: string; seconds: number; caches: string }[] = [];
  let phaseStart = Date.now();
  const endPhase = async (next: string) => {
    sample();
    phases.push({ phase, seconds: Math.round((Date.now() - phaseStart) / 1000), caches: describeCaches(await cacheMetrics(service.url)) });
    process.stdout.write(`${phase} done in ${Math.round((Date.now() - phaseStart) / 1000)} s; RSS ${service.rssMiB()?.toFixed(0)} MiB\n`);
    phase = next;
    phaseStart = Date.now();
  };
  await service.start();
  const t = { url: service.url, adminToken, close: async () => undefined, mode: 'standalone' };
  const { programId, key } = await benchProgram(t, { rules: [{ type: 'base', name: 'Base', earn_rate_pct: 10, timing: 'immediate' }] });
  await endPhase('create members (API)');

  const ids: string[] = new Array(MEMBERS);
  const tag = randomBytes(3).toString('hex');
  await pooled([...Array(MEMBERS).keys()], 32, async (i) => {
    const m = await json(service.url, 'POST', '/v1/members', key, { email: `soak-${tag}-${i}@example.com` });
    ids[i] = m.data.id;
  });
  await endPhase('seed 9 events per member (event store)');

  const start = Date.now(); // after each member's enrolment, in time order
  let appended = MEMBERS; // each MemberCreated
  let entries = 0;
  await pooled(ids, 64, async (id, k) => {
    const stream = memberStreamId(programId, id);
    const read = await store.readStream(stream, 0n);
    const s = read.reduce((acc, e) => memberEvolver.evolve(acc, { type: e.type, data: e.data } as MemberEvent), memberEvolver.initialState());
    const events = history(s, k, start);
    await store.append(stream, events.map((e) => ({ id: randomUUID(), type: e.type, data: e.data })), read[read.length - 1].revision);
    appended += events.length;
    entries += events.filter((e) => e.type === 'EntryRecorded').length;
  });
  process.stdout.write(`${appended} events on ${MEMBERS} member streams (${entries} ledger entries)\n`);
  await endPhase('projections catch up');

  // the finance projection (one of the ledger's projection runners) has every ledger entry; at most CATCHUP_S, then the drive starts anyway
  for (const deadline = Date.now() + CATCHUP_S * 1000; ;) {
    const { rows } = await pool.query<{ n: string }>('select count(*) as n from ledger.finance_entries');
    if (Number(rows[0].n) >= entries) break;
    if (Date.now() > deadline) {
      process.stdout.write(`the read models had ${rows[0].n} of ${entries} entries after ${CATCHUP_S} s; driving anyway\n`);
      break;
    }
    await new Promise((r) => setTimeout(r, 2_000));
  }
  await endPhase(`drive ${DRIVE_S} s (API)`);

  let ops = 0;
  let errors = 0;
  const until = Date.now() + DRIVE_S * 1000;
  let seq = 0;
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    while (Date.now() < until) {
      const id = ids[Math.floor(Math.random() * ids.length)];
      try {
        if (Math.random() < 0.8) await json(service.url, 'POST', `/v1/members/${id}/adjust`, key, { amount_cents: 1, reason_code: 'soak', idempotency_key: `soak-${++seq}-${tag}` });
        else await json(service.url, 'GET', `/v1/members/${id}/ledger?limit=10`, key);
        ops++;
      } catch {
        errors++;
      }
    }
  }));
  process.stdout.write(`drive: ${ops} requests (${(ops / DRIVE_S).toFixed(0)}/s), ${errors} errors\n`);
  await endPhase('end');
  clearInterval(sampler);

  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  process.stdout.write(`\nSoak (issue 13): ${MEMBERS} members, ${appended} events; load average ${load}; ${((Date.now() - t0) / 60_000).toFixed(1)} min\n`);
  for (const p of phases) process.stdout.write(`- ${p.phase} (${p.seconds} s): ${p.caches}\n`);
  process.stdout.write('\n| t, s | phase | RSS, MiB |\n|---|---|---|\n');
  for (const x of samples) process.stdout.write(`| ${x.s} | ${x.phase} | ${x.rssMiB === null ? '?' : ms(x.rssMiB)} |\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, JSON.stringify({ load, members: MEMBERS, events: appended, phases, samples }, null, 2));
});
