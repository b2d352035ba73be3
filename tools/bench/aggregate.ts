/**
 * Aggregate load cost vs stream length (architecture.md: "must not grow with stream length").
 * Figures for notes, never asserted. Run:
 *   npx tsc -p tsconfig.build.json && node -r ./tools/register-paths.js dist/tools/bench/aggregate-load.js
 * Uses a fresh database on BENCH_DATABASE_URL / TEST_DATABASE_URL's server (default: the local one), dropped at the end.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createPool, ensureDatabase, migrate } from '@loyalty/platform';
import { CommandHandler, Decision, EVENT_STORE_MIGRATIONS, Evolver, NewEvent, PostgresEventStore } from '@loyalty/event-store';

type Ev = { type: 'PointsEarned'; data: { points: number } };
interface Balance { points: number; events: number }
const balance: Evolver<Balance, Ev> = {
  initialState: () => ({ points: 0, events: 0 }),
  evolve: (s, e) => ({ points: s.points + e.data.points, events: s.events + 1 }),
};
const earnOne = (): Decision<Ev, number> => ({ events: [{ type: 'PointsEarned', data: { points: 1 } }], result: 1 });
const noop = (s: Balance): Decision<Ev, number> => ({ events: [], result: s.points });

const RUNS = 50;
const COLD_RUNS = 5;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const time = async (fn: () => Promise<unknown>): Promise<number> => {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
};
const ms = (x: number): string => x.toFixed(2);

const main = async (): Promise<void> => {
  const base = new URL(process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres');
  const name = `bench_aggregate_${randomBytes(4).toString('hex')}`;
  const url = new URL(base.toString());
  url.pathname = `/${name}`;
  await ensureDatabase(url.toString());
  const pool = createPool(url.toString(), 10);
  const store = new PostgresEventStore(pool);
  try {
    await migrate(url.toString(), EVENT_STORE_MIGRATIONS);
    const streams: [string, number][] = [['member-bench-short', 10], ['member-bench-long', 10_000]];
    for (const [stream, n] of streams) {
      for (let at = 0; at < n; at += 1000) {
        const batch: NewEvent[] = Array.from({ length: Math.min(1000, n - at) }, () => ({ id: randomUUID(), type: 'PointsEarned', data: { points: 1 } }));
        await store.append(stream, batch, at === 0 ? 'no_stream' : BigInt(at - 1));
      }
    }
    await pool.query('analyze es.events');

    const rows: string[][] = [];
    for (const [stream, n] of streams) {
      // cold: a handler that has never seen the stream (first command after a process start) folds it all
      const cold: number[] = [];
      for (let i = 0; i < COLD_RUNS; i++) cold.push(await time(() => new CommandHandler(store).handle(stream, balance, noop)));
      // warm: one long-lived handler; each command reads only the tail after its cached revision
      const handler = new CommandHandler(store);
      await handler.handle(stream, balance, noop);
      const warmRead: number[] = [];
      for (let i = 0; i < RUNS; i++) warmRead.push(await time(() => handler.handle(stream, balance, noop)));
      const warmAppend: number[] = [];
      for (let i = 0; i < RUNS; i++) warmAppend.push(await time(() => handler.handle(stream, balance, earnOne)));
      const state = (await new CommandHandler(store).load(stream, balance)).state;
      if (state.events !== n + RUNS) throw new Error(`expected ${n + RUNS} events in ${stream}, folded ${state.events}`);
      rows.push([String(n), ms(cold[0]), ms(median(cold)), ms(median(warmRead)), ms(median(warmAppend))]);
    }

    process.stdout.write(`\nCommandHandler.handle on PostgreSQL (${base.host}), ms; warm = median of ${RUNS} runs on one handler\n`);
    process.stdout.write(`| events in stream | cold: first handle | cold: median of ${COLD_RUNS} fresh handlers | warm: handle, no event | warm: handle + append 1 event |\n`);
    process.stdout.write('|---|---|---|---|---|\n');
    for (const r of rows) process.stdout.write(`| ${r.join(' | ')} |\n`);
  } finally {
    await store.close();
    await pool.end();
    const admin = new Client({ connectionString: base.toString() });
    await admin.connect();
    await admin.query(`drop database if exists "${name}" with (force)`).finally(() => admin.end());
  }
};

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
