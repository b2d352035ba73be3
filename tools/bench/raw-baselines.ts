import { ChildProcess, fork, spawn } from 'node:child_process';
import { httpLoad, procCpu } from './bench-kit';
import { randomBytes } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client, Pool } from 'pg';

/**
 * The raw baselines every service figure of the suite is divided by (issue 7), run in the same
 * invocation as the service:
 *
 * - tools/bench/baselines/run.sh (pgbench scripts: the least SQL each operation needs), on a
 *   scratch database of the same PostgreSQL server, parsed from its `name tps=… units/s=…` lines;
 * - a bare Node `http` + `pg` route answering GET /members/:id with one indexed select from a
 *   table shaped like the member read row, loaded by the suite's load generator (httpLoad) like GET /v1/members/{id}.
 */

export interface PgbenchFigure {
  name: string; tps: number; units: number;
  /** taken beside a scenario: the runs just before and just after it (units/s), and the start-of-run figure `units` replaced */
  beside?: number[]; start?: number;
}
export interface BareRouteFigure { rps: number; p50: number; p99: number; requests: number; non2xx: number; errors: number; rows: number; pool: number; process: 'same' | 'child'; cpuMsPerRequest: number | null }

/** Repository root (this file runs from dist/tools/bench). */
const root = (): string => {
  const here = __dirname;
  return here.includes(`${join('dist', 'tools', 'bench')}`) ? resolve(here, '../../..') : resolve(here, '../..');
};

/** The server named by TEST_DATABASE_URL (or BENCH_BASELINE_DATABASE_URL), database `postgres`. */
export const serverUrl = (): URL => {
  const u = new URL(process.env.BENCH_BASELINE_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  u.pathname = '/postgres';
  return u;
};

export const dbUrl = (name: string): string => {
  const u = serverUrl();
  u.pathname = `/${name}`;
  return u.toString();
};

/** A scratch database on the benchmark's server; `drop()` removes it. */
export const scratchDatabase = async (prefix: string): Promise<{ name: string; url: string; drop: () => Promise<void> }> => {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl().toString() });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  return {
    name, url: dbUrl(name),
    drop: async () => {
      const c = new Client({ connectionString: serverUrl().toString() });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
};

/** Parses `name tps=… units/s=…` lines of baselines/run.sh. */
export const parsePgbench = (out: string): PgbenchFigure[] => {
  const figures: PgbenchFigure[] = [];
  for (const line of out.split('\n')) {
    const m = /^(\S+)\s+tps=\s*([0-9.]+)\s+units\/s=\s*([0-9.]+)/.exec(line.trim());
    if (m) figures.push({ name: m[1], tps: Number(m[2]), units: Number(m[3]) });
  }
  return figures;
};

/** The environment pgbench and psql run with: the benchmark's server (PG* variables given win). */
const pgbenchEnv = (): NodeJS.ProcessEnv => {
  const u = serverUrl();
  return {
    ...process.env,
    PGHOST: process.env.PGHOST ?? u.hostname, PGPORT: process.env.PGPORT ?? (u.port || '5432'),
    PGUSER: process.env.PGUSER ?? (decodeURIComponent(u.username) || 'postgres'),
    ...(u.password && !process.env.PGPASSWORD ? { PGPASSWORD: decodeURIComponent(u.password) } : {}),
  };
};

/** Runs tools/bench/baselines/run.sh `seconds` on database `db` (created by run.sh if missing); returns its output. */
export const runPgbench = (seconds: number, db: string): Promise<{ out: string; figures: PgbenchFigure[] }> => {
  const env = pgbenchEnv();
  return new Promise((res, rej) => {
    const child = spawn('bash', [join(root(), 'tools/bench/baselines/run.sh'), String(seconds), db], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); process.stderr.write(`[baseline] ${d.toString()}`); });
    child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    child.on('error', rej);
    child.on('close', (code) => {
      const figures = parsePgbench(out);
      if (code !== 0 && !figures.length) rej(new Error(`baselines/run.sh exited ${code}: ${err.trim().slice(-500)}`));
      else res({ out, figures });
    });
  });
};

/** One baseline of run.sh: its name, pgbench script, clients and units per transaction (parsed from run.sh's `run` lines). */
interface BaselineScript { name: string; script: string; clients: number; units: number }

const baselineScripts = (): BaselineScript[] => {
  const text = readFileSync(join(root(), 'tools/bench/baselines/run.sh'), 'utf8');
  const out: BaselineScript[] = [];
  for (const line of text.split('\n')) {
    const m = /^run\s+(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s*$/.exec(line.trim());
    if (m) out.push({ name: m[1], script: m[2], clients: Number(m[3]), units: Number(m[4]) });
  }
  return out;
};

/**
 * One baseline of run.sh again, alone, on a database run.sh has set up: the figure taken beside a
 * scenario (just before and just after it), as run.sh would print it. On a shared virtual machine
 * the CPU's speed moves by half within minutes, so a baseline taken at the start of a long suite
 * says little about the minute a scenario ran in.
 */
export const runOneBaseline = (name: string, seconds: number, db: string): Promise<PgbenchFigure> => {
  const b = baselineScripts().find((x) => x.name === name);
  if (!b) return Promise.reject(new Error(`no baseline ${name} in run.sh`));
  const env = pgbenchEnv();
  const args = ['-n', '-d', db, '-f', join(root(), 'tools/bench/baselines', b.script), '-c', String(b.clients), '-j', String(b.clients), '-T', String(seconds)];
  return new Promise((res, rej) => {
    const child = spawn('pgbench', args, { env, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('error', rej);
    child.on('close', (code) => {
      const m = /^tps = ([0-9.]+)/m.exec(out);
      if (!m) { rej(new Error(`pgbench ${b.script} exited ${code} without a tps line`)); return; }
      const tps = Number(m[1]);
      const figure = { name, tps, units: tps * b.units };
      process.stderr.write(`[baseline] ${name.padEnd(22)} tps=${tps.toFixed(1).padStart(9)} units/s=${figure.units.toFixed(1).padStart(10)} (beside)\n`);
      res(figure);
    });
  });
};

// ---------- the bare route ----------

/** A table shaped like the member read row (ledger.members), `rows` members of one tenant. */
export const loadRouteTable = async (url: string, rows: number): Promise<string[]> => {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`
      create schema if not exists route;
      drop table if exists route.members;
      create table route.members (
        seq bigserial not null unique, tenant text not null, member_id text not null,
        email text, phone text, external_ref text, state text not null,
        available_cents bigint not null default 0, pending_cents bigint not null default 0, reserved_cents bigint not null default 0,
        lifetime_earned_cents bigint not null default 0, lifetime_redeemed_cents bigint not null default 0,
        revision bigint not null, created_at timestamptz not null,
        primary key (tenant, member_id))`);
    await c.query(`
      insert into route.members (tenant, member_id, email, external_ref, state, available_cents, lifetime_earned_cents, revision, created_at)
      select 'P-BENCH', 'M-' || lpad(g::text, 26, '0'), 'm' || g || '@bench.test', 'cust-' || g, 'active', 1000 + g, 1000 + g, 3, now()
        from generate_series(1, $1::int) g`, [rows]);
    await c.query('analyze route.members');
    return Array.from({ length: rows }, (_, i) => `M-${String(i + 1).padStart(26, '0')}`);
  } finally {
    await c.end();
  }
};

/** The bare route: GET /members/:id → one indexed select → JSON shaped like the Member resource. */
export const startBareRoute = async (url: string, poolSize: number): Promise<{ port: number; close: () => Promise<void> }> => {
  const pool = new Pool({ connectionString: url, max: poolSize });
  pool.on('error', () => undefined);
  const server: Server = createServer((req, res) => {
    const m = /^\/members\/([^/?]+)$/.exec(req.url ?? '');
    if (req.method !== 'GET' || !m) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"title":"not found"}');
      return;
    }
    pool.query(
      `select member_id, email, phone, external_ref, state, available_cents, pending_cents, reserved_cents,
              lifetime_earned_cents, lifetime_redeemed_cents, revision, created_at
         from route.members where tenant = $1 and member_id = $2`, ['P-BENCH', decodeURIComponent(m[1])],
    ).then(({ rows }) => {
      if (!rows.length) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"title":"not found"}');
        return;
      }
      const r = rows[0];
      const available = Number(r.available_cents);
      const reserved = Number(r.reserved_cents);
      const body = JSON.stringify({
        data: {
          id: r.member_id, email: r.email, phone: r.phone, external_ref: r.external_ref, state: r.state,
          balances: {
            available_cents: available, pending_cents: Number(r.pending_cents), reserved_cents: reserved, spendable_cents: available - reserved,
            lifetime_earned_cents: Number(r.lifetime_earned_cents), lifetime_redeemed_cents: Number(r.lifetime_redeemed_cents),
          },
          aggregate_version: Number(r.revision), created_at: (r.created_at as Date).toISOString(),
        },
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    }, (e: Error) => {
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ title: e.message }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()));
      await pool.end();
    },
  };
};

/** Starts the bare route in a child process (this file with --bare-route-child); resolves with its port. */
const startBareRouteChild = (url: string, poolSize: number): Promise<{ port: number; pid?: number; close: () => Promise<void> }> =>
  new Promise((res, rej) => {
    const child: ChildProcess = fork(__filename, ['--bare-route-child'], { env: { ...process.env, BARE_ROUTE_DB: url, BARE_ROUTE_POOL: String(poolSize) }, stdio: 'inherit' });
    child.once('error', rej);
    child.once('exit', (code) => rej(new Error(`bare route child exited ${code}`)));
    child.once('message', (m: { port: number }) => res({
      port: m.port, pid: child.pid,
      close: () => new Promise<void>((r) => { child.removeAllListeners('exit'); child.once('exit', () => r()); child.kill('SIGTERM'); }),
    }));
  });

/**
 * Loads the bare route with httpLoad (the service's load generator): `connections` connections for `seconds`, requests spread
 * over the table's members. `where`: in this process (like an in-process standalone target) or a child.
 */
export const benchBareRoute = async (url: string, opts: { rows: number; poolSize: number; connections: number; seconds: number; where: 'same' | 'child' }): Promise<BareRouteFigure> => {
  const ids = await loadRouteTable(url, opts.rows);
  const server = opts.where === 'child' ? await startBareRouteChild(url, opts.poolSize) : await startBareRoute(url, opts.poolSize);
  try {
    let g = 0;
    // warm the pool and the plan cache briefly, then measure
    await httpLoad({ url: `http://127.0.0.1:${server.port}`, connections: opts.connections, amount: Math.min(2000, opts.rows * 2), requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/members/${ids[g++ % ids.length]}` }) }] });
    const pid = (server as { pid?: number }).pid;
    const cpu0 = pid ? procCpu(pid) : null;
    const r = await httpLoad({
      url: `http://127.0.0.1:${server.port}`, connections: opts.connections, duration: opts.seconds,
      requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/members/${ids[g++ % ids.length]}` }) }],
    });
    const cpu1 = pid ? procCpu(pid) : null;
    return {
      rps: r['2xx'] / Math.max(0.001, r.duration), p50: r.latency.p50, p99: r.latency.p99, requests: r.requests.total,
      non2xx: r.non2xx, errors: r.errors, rows: opts.rows, pool: opts.poolSize, process: opts.where,
      cpuMsPerRequest: cpu0 !== null && cpu1 !== null && r['2xx'] ? ((cpu1 - cpu0) * 1000) / r['2xx'] : null,
    };
  } finally {
    await server.close();
  }
};

if (process.argv.includes('--bare-route-child')) {
  startBareRoute(process.env.BARE_ROUTE_DB ?? '', Number(process.env.BARE_ROUTE_POOL ?? 16)).then((s) => {
    process.send?.({ port: s.port });
    process.on('SIGTERM', () => { void s.close().finally(() => process.exit(0)); });
  }, (e: unknown) => { console.error(e); process.exit(1); });
}
