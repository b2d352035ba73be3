/**
 * The standalone service as a child process for the benchmarks that restart it or watch its memory
 * (long-history, soak), and small timing helpers.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { Pool } from 'pg';
import { PostgresEventStore } from '@loyalty/event-store';
import { freshDatabaseUrl } from '../../apps/standalone/src/testing/harness';
import { nodeFlags } from './bench-kit';

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
export const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
export const ms = (x: number): string => x.toFixed(1);
export const time = async <T>(fn: () => Promise<T>): Promise<[number, T]> => {
  const t0 = process.hrtime.bigint();
  const out = await fn();
  return [Number(process.hrtime.bigint() - t0) / 1e6, out];
};

export const freePort = (): Promise<number> => new Promise((resolve, reject) => {
  const srv = createServer();
  srv.listen(0, '127.0.0.1', () => {
    const { port } = srv.address() as { port: number };
    srv.close(() => resolve(port));
  });
  srv.on('error', reject);
});

/** The standalone service as a child process (a restart is a new process, as in production). */
export class Service {
  private child: ChildProcess | null = null;
  constructor(readonly url: string, private readonly env: NodeJS.ProcessEnv) {}

  async start(): Promise<void> {
    // BENCH_CHILD_EXEC_ARGV (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) goes to the service's node
    const execArgv = [...nodeFlags(), ...(process.env.BENCH_CHILD_EXEC_ARGV ?? '').split(' ').filter(Boolean)];
    const child = spawn(process.execPath, [...execArgv, '-r', './tools/register-paths.js', 'dist/apps/standalone/src/main.js'], {
      env: { ...process.env, ...this.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' }, stdio: ['ignore', 'ignore', 'inherit'],
    });
    this.child = child;
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
      try {
        if ((await fetch(`${this.url}/readyz`)).ok) return;
      } catch { /* not listening yet */ }
      if (Date.now() > deadline) throw new Error('the service did not become ready in 120 s');
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
    this.child = null;
  }

  /** Resident memory of the service process (Linux), MiB. */
  rssMiB(): number | null {
    try {
      const status = readFileSync(`/proc/${this.child?.pid}/status`, 'utf8');
      const m = /VmRSS:\s+(\d+) kB/.exec(status);
      return m ? Number(m[1]) / 1024 : null;
    } catch {
      return null;
    }
  }
}


/** What a benchmark gets from `withService`: the service (not started), its database and an event store on it. */
export interface ServiceBench { service: Service; adminToken: string; pool: Pool; store: PostgresEventStore }

/**
 * Runs a benchmark against the standalone service in its own process on a fresh database; the
 * service is stopped and the database dropped at the end, or when the run is interrupted.
 */
export const withService = (database: string, body: (b: ServiceBench) => Promise<void>): void => {
  const main = async (): Promise<void> => {
    const db = await freshDatabaseUrl(database);
    const port = await freePort();
    const adminToken = `adm_${randomBytes(12).toString('hex')}`;
    const service = new Service(`http://127.0.0.1:${port}`, { DATABASE_URL: db.url, PORT: String(port), LOYALTY_ADMIN_TOKEN: adminToken });
    const pool = new Pool({ connectionString: db.url, max: 8 });
    const store = new PostgresEventStore(pool);
    const interrupted = () => { void service.stop().finally(() => db.drop()).finally(() => process.exit(130)); };
    process.once('SIGINT', interrupted);
    process.once('SIGTERM', interrupted);
    try {
      await body({ service, adminToken, pool, store });
    } finally {
      await service.stop().catch(() => undefined);
      await store.close().catch(() => undefined);
      await pool.end().catch(() => undefined);
      await db.drop();
    }
  };
  main().catch((e) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exit(1);
  });
};
