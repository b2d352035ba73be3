import { ChildProcess, fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import autocannon from 'autocannon';
import type { AppConfig } from '@loyalty/platform';
import { LeanOptions, LeanResult, leanLoad } from './lean-load';

/** Shared benchmark plumbing: a target (running URL or an in-process standalone app) and autocannon runs. */
export interface Target {
  url: string; adminToken: string; close: () => Promise<void>; mode: string;
  /** The database the target writes (standalone: its fresh database; otherwise BENCH_DATABASE_URL when given). */
  databaseUrl?: string;
  /** Standalone only: stops the app and starts it again on the same database and port (a cold process). */
  restart?: () => Promise<void>;
  /** Standalone in a child process: the service's process id (for its CPU time). */
  pid?: () => number | undefined;
}

/**
 * BENCH_URL set: that running deployment. Otherwise a standalone app on a fresh database (dropped
 * by close()), with `overrides` applied to its configuration (e.g. backlogLimit). The app runs in
 * a child process (tools/bench/standalone-child.ts), as `npm start` would, so that the load
 * generator does not share its event loop; BENCH_IN_PROCESS=1 runs it in this process instead.
 * BENCH_CHILD_EXEC_ARGV adds Node flags to the child (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 */
export const target = async (overrides: Partial<AppConfig> = {}): Promise<Target> => {
  if (process.env.BENCH_URL) {
    return {
      url: process.env.BENCH_URL, adminToken: process.env.LOYALTY_ADMIN_TOKEN ?? '', close: async () => undefined,
      mode: process.env.BENCH_MODE ?? 'remote', databaseUrl: process.env.BENCH_DATABASE_URL || undefined,
    };
  }
  const { freshDatabaseUrl } = await import('../../apps/standalone/src/testing/harness');
  const db = await freshDatabaseUrl('bench');
  const adminToken = `adm_${randomBytes(12).toString('hex')}`;
  const config = { databaseUrl: db.url, adminToken, adminTokenGenerated: false, baseUrl: 'https://loyalty.test', ...overrides };
  if (process.env.BENCH_IN_PROCESS === '1') {
    const { startStandalone } = await import('../../apps/standalone/src/start');
    let started = await startStandalone({ ...config, port: 0 }, false);
    const port = (started.app.getHttpServer().address() as { port: number }).port;
    return {
      url: started.url, adminToken, mode: 'standalone', databaseUrl: db.url,
      close: async () => { await started.app.close(); await db.drop(); },
      restart: async () => {
        await started.app.close();
        started = await startStandalone({ ...config, port }, false);
      },
    };
  }
  let child = await startChild({ ...config, port: 0 });
  return {
    url: child.url, adminToken, mode: 'standalone', databaseUrl: db.url, pid: () => child.pid,
    close: async () => { await child.stop(); await db.drop(); },
    restart: async () => {
      await child.stop();
      child = await startChild({ ...config, port: child.port });
    },
  };
};

/** The Node flags `npm start` runs the service with (tools/node-flags: heap tuning), so the benchmark measures what it runs. */
export const nodeFlags = (): string[] => readFileSync(join(__dirname, '../../../tools/node-flags'), 'utf8').split(/\s+/).filter(Boolean);

const startChild = (config: Partial<AppConfig>): Promise<{ url: string; port: number; pid: number | undefined; stop: () => Promise<void> }> =>
  new Promise((res, rej) => {
    const extra = [...nodeFlags(), ...(process.env.BENCH_CHILD_EXEC_ARGV ?? '').split(/\s+/).filter(Boolean)];
    const child: ChildProcess = fork(join(__dirname, 'standalone-child.js'), [], {
      // warn, as the distributed run's processes (service-process.ts): the child's Nest logger is off, so an info line was built for nothing
      env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', BENCH_CHILD_CONFIG: JSON.stringify(config) }, stdio: 'inherit', execArgv: [...process.execArgv, ...extra],
    });
    child.once('error', rej);
    child.once('exit', (code) => rej(new Error(`standalone child exited ${code}`)));
    child.once('message', (m: { url: string; port: number }) => res({
      url: m.url, port: m.port, pid: child.pid,
      stop: () => new Promise<void>((r) => { child.removeAllListeners('exit'); child.once('exit', () => r()); child.kill('SIGTERM'); }),
    }));
  });

export const json = async (url: string, method: string, path: string, token: string, body?: unknown): Promise<any> => {
  const res = await fetch(url + path, {
    method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
};

/** A programme plus a key whose rate limit will not throttle the benchmark. */
export const benchProgram = async (t: Target, body: Record<string, unknown> = {}): Promise<{ programId: string; key: string }> => {
  const p = await json(t.url, 'POST', '/admin/v1/programs', t.adminToken, { program_name: 'bench', currency_name: 'points', ...body });
  const k = await json(t.url, 'POST', `/admin/v1/programs/${p.data.id}/keys`, t.adminToken,
    { mode: 'live', scopes: ['ingest', 'read', 'act', 'webhooks'], rate_limit: { burst: 1_000_000, per_second: 1_000_000 } });
  return { programId: p.data.id, key: k.data.key };
};

/** BENCH_CLIENT=autocannon: the suite's HTTP loads run on autocannon instead of the lean client. */
const onAutocannon = (): boolean => process.env.BENCH_CLIENT === 'autocannon';

/** What httpLoad reports, from either client (replies by status are the caller's to count, in onResponse). */
export type HttpLoadResult = Omit<LeanResult, 'statuses'>;

/**
 * The suite's HTTP load generator: the lean client (tools/bench/lean-load.ts, raw keep-alive sockets)
 * by default, autocannon with BENCH_CLIENT=autocannon. Same options (autocannon's request-sequence
 * shape) and the same figures. The lean client takes about half autocannon's CPU a request on the
 * two cores the service and PostgreSQL share (pgbench's C client costs its baselines less still).
 */
export const httpLoad = (opts: LeanOptions): Promise<HttpLoadResult> =>
  onAutocannon()
    ? (autocannon(opts as autocannon.Options) as unknown as Promise<autocannon.Result>).then((r) => ({
      duration: r.duration, requests: { total: r.requests.total }, '2xx': r['2xx'], non2xx: r.non2xx, errors: r.errors,
      latency: { p50: r.latency.p50, p99: r.latency.p99, mean: r.latency.mean },
    }))
    : leanLoad(opts);

/** Which load generator httpLoad uses (for the report). */
export const httpClientName = (): string => (onAutocannon() ? 'autocannon' : 'lean-load');

export interface Figures { name: string; requests: number; rps: number; p50: number; p99: number; errors: number; non2xx: number }

export const run = async (name: string, opts: autocannon.Options): Promise<Figures> => {
  const r = await autocannon({ connections: 50, duration: 10, ...opts });
  return { name, requests: r.requests.total, rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
};

export const printTable = (title: string, rows: Figures[]): void => {
  process.stdout.write(`\n${title}\n`);
  process.stdout.write('| scenario | requests | req/s | p50 ms | p99 ms | errors | non-2xx |\n|---|---|---|---|---|---|---|\n');
  for (const r of rows) process.stdout.write(`| ${r.name} | ${r.requests} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.errors} | ${r.non2xx} |\n`);
};

/** CPU seconds (user + system) of a process, from /proc (Linux); null elsewhere. */
export const procCpu = (pid: number): number | null => procCpuSplit(pid)?.total ?? null;

/** CPU seconds of a process, in all and in the kernel (system calls: socket writes and reads, epoll). */
export const procCpuSplit = (pid: number): { total: number; system: number } | null => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { total: (Number(f[11]) + Number(f[12])) / CLOCK_TICKS, system: Number(f[12]) / CLOCK_TICKS };
  } catch {
    return null;
  }
};
const CLOCK_TICKS = 100;

/** A thread's scheduler statistics (Linux `/proc/<pid>/task/<tid>/schedstat`): ns on a core, ns runnable and waiting for one. */
export interface SchedStat { runNs: number; waitNs: number }

/** The main thread's scheduler statistics of process `pid` (its thread id is its pid); null elsewhere than Linux. */
export const mainThreadSched = (pid: number): SchedStat | null => {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
    return Number.isFinite(run) && Number.isFinite(wait) ? { runNs: run, waitNs: wait } : null;
  } catch {
    return null;
  }
};

/**
 * Shares of a window of `wallNs` the thread spent on a core and waiting for one (whole percent);
 * the rest it was blocked, with nothing to do (waiting for PostgreSQL or the network). Waiting for a
 * core means the machine is saturated: only less CPU per operation helps then, not more concurrency.
 */
export const schedShares = (before: SchedStat, after: SchedStat, wallNs: number): { running: number; waiting: number } => ({
  running: Math.round((100 * (after.runNs - before.runNs)) / wallNs),
  waiting: Math.round((100 * (after.waitNs - before.waitNs)) / wallNs),
});

/**
 * Statistics for the tables the warm-up filled, before the measured window. A fresh benchmark
 * database starts with empty read-model tables; a prepared statement's generic plan made while a
 * table was empty (or before autovacuum first analyzed it) is a sequential scan, and it stays until
 * the table is analyzed (autovacuum does within about a minute of the table growing, too late for
 * a ten-second load). A service that has been running has statistics: so does the benchmark.
 * Analyzing invalidates the cached plans, so the measured window runs on plans made for the
 * tables as they are.
 */
export const steadyStatistics = async (t: Target): Promise<void> => {
  if (!t.databaseUrl) return;
  const db = new Client({ connectionString: t.databaseUrl });
  await db.connect();
  try {
    await db.query('analyze');
  } finally {
    await db.end();
  }
  // a mark for tools that watch the run (statement statistics, profiles): the measured load starts now
  process.stderr.write(`[bench] measured load starts (${new Date().toISOString()})\n`);
};

export interface CpuSpent {
  nodeMs: number | null; pgMs: number | null; nodeSystemMs?: number | null;
  /** instructions retired (hardware counter, `perf stat`; BENCH_PERF=1): the figure a busy neighbour does not move */
  nodeInstructions?: number | null; pgInstructions?: number | null;
  /** CPU of the load generator itself (this process), which shares the machine's cores with the service */
  clientMs?: number | null;
  /** the service's main thread over the window (standalone child only): % on a core, % waiting for one */
  mainThread?: { running: number; waiting: number } | null;
}

/**
 * Counts the instructions a set of processes retire until stopped (`perf stat -e instructions`,
 * every thread of each process). On a shared virtual machine the CPU time of an operation moves
 * with the host's load (by half, minutes apart, here); the instructions it takes do not.
 * Null when perf is missing or refused.
 */
const instructionCounter = (pids: number[]): { stop: () => Promise<number | null> } => {
  if (!pids.length) return { stop: async () => null };
  let out = '';
  const perf = spawn('perf', ['stat', '-x', ',', '-e', 'instructions:u,instructions:k', '-p', pids.join(',')], { stdio: ['ignore', 'ignore', 'pipe'] });
  perf.stderr.on('data', (c: Buffer) => { out += c.toString(); });
  const exited = new Promise<void>((r) => { perf.once('exit', () => r()); perf.once('error', () => r()); });
  return {
    stop: async () => {
      perf.kill('SIGINT');
      await exited;
      let n = 0;
      let seen = false;
      for (const line of out.split('\n')) {
        const [value, , event] = line.split(',');
        if (event?.startsWith('instructions') && /^\d+$/.test(value)) { n += Number(value); seen = true; }
      }
      return seen ? n : null;
    },
  };
};

/**
 * Measures the CPU the service spends on a piece of work, robust to a busy machine where
 * throughput is not: the service process's CPU time (standalone child only) and the CPU time of
 * the PostgreSQL backends connected to its database (backends that exit meanwhile are missed).
 */
export const cpuMeter = async (t: Target): Promise<{ stop: () => Promise<CpuSpent> }> => {
  const pid = t.pid?.();
  const db = t.databaseUrl ? new Client({ connectionString: t.databaseUrl }) : null;
  try { await db?.connect(); } catch { /* no database: node time only */ }
  const backends = async (): Promise<Map<number, number>> => {
    const m = new Map<number, number>();
    if (!db) return m;
    try {
      const { rows } = await db.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
      for (const r of rows) { const c = procCpu(r.pid); if (c !== null) m.set(r.pid, c); }
    } catch { /* ignore */ }
    return m;
  };
  const node0 = pid ? procCpuSplit(pid) : null;
  const sched0 = pid ? mainThreadSched(pid) : null;
  const wall0 = process.hrtime.bigint();
  const pg0 = await backends();
  const client0 = process.cpuUsage();
  const counting = process.env.BENCH_PERF === '1';
  const nodeCount = counting && pid ? instructionCounter([pid]) : null;
  const pgCount = counting ? instructionCounter([...pg0.keys()]) : null;
  return {
    stop: async () => {
      const [nodeInstructions, pgInstructions] = await Promise.all([nodeCount?.stop() ?? null, pgCount?.stop() ?? null]);
      const node1 = pid ? procCpuSplit(pid) : null;
      const sched1 = pid ? mainThreadSched(pid) : null;
      const wallNs = Number(process.hrtime.bigint() - wall0);
      const client = process.cpuUsage(client0);
      const pg1 = await backends();
      await db?.end().catch(() => undefined);
      let pg = 0;
      for (const [p, c] of pg1) pg += c - (pg0.get(p) ?? 0);
      return {
        nodeMs: node0 && node1 ? (node1.total - node0.total) * 1000 : null,
        nodeSystemMs: node0 && node1 ? (node1.system - node0.system) * 1000 : null,
        pgMs: db && pg1.size ? pg * 1000 : null,
        nodeInstructions, pgInstructions,
        clientMs: (client.user + client.system) / 1000,
        mainThread: sched0 && sched1 ? schedShares(sched0, sched1, wallNs) : null,
      };
    },
  };
};

/** "CPU per op: service 0.42 ms + PostgreSQL 0.31 ms" (what is unknown is left out). */
export const cpuPerOp = (c: CpuSpent, ops: number): string => {
  if (!ops) return '';
  const kernel = c.nodeMs && c.nodeSystemMs != null ? ` (${Math.round((100 * c.nodeSystemMs) / c.nodeMs)} % in the kernel)` : '';
  const parts = [c.nodeMs !== null ? `service ${(c.nodeMs / ops).toFixed(3)} ms${kernel}` : null, c.pgMs !== null ? `PostgreSQL ${(c.pgMs / ops).toFixed(3)} ms` : null].filter(Boolean);
  const mega = (n: number | null | undefined): string | null => (n == null ? null : (n / ops / 1e6).toFixed(3));
  const instructions = [mega(c.nodeInstructions), mega(c.pgInstructions)];
  const counted = instructions.some((x) => x !== null) ? `; instructions per op: service ${instructions[0] ?? '?'} M + PostgreSQL ${instructions[1] ?? '?'} M` : '';
  const client = c.clientMs != null ? `; load generator ${(c.clientMs / ops).toFixed(3)} ms` : '';
  const main = c.mainThread ? `; service main thread on a core ${c.mainThread.running} %, waiting for one ${c.mainThread.waiting} %` : '';
  return parts.length ? `CPU per op: ${parts.join(' + ')}${counted}${client}${main}` : '';
};
