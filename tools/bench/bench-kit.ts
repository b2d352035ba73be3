import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import type { AppConfig } from '@loyalty/platform';

/** Shared benchmark plumbing: a target (running URL or an in-process standalone app) and autocannon runs. */
export interface Target {
  url: string; adminToken: string; close: () => Promise<void>; mode: string;
  /** The database the target writes (standalone: its fresh database; otherwise BENCH_DATABASE_URL when given). */
  databaseUrl?: string;
  /** Standalone only: stops the app and starts it again on the same database and port (a cold process). */
  restart?: () => Promise<void>;
}

/**
 * BENCH_URL set: that running deployment. Otherwise a standalone app in this process on a fresh
 * database (dropped by close()), with `overrides` applied to its configuration (e.g. backlogLimit).
 */
export const target = async (overrides: Partial<AppConfig> = {}): Promise<Target> => {
  if (process.env.BENCH_URL) {
    return {
      url: process.env.BENCH_URL, adminToken: process.env.LOYALTY_ADMIN_TOKEN ?? '', close: async () => undefined,
      mode: process.env.BENCH_MODE ?? 'remote', databaseUrl: process.env.BENCH_DATABASE_URL || undefined,
    };
  }
  const { freshDatabaseUrl } = await import('../../apps/standalone/src/testing/harness');
  const { startStandalone } = await import('../../apps/standalone/src/start');
  const db = await freshDatabaseUrl('bench');
  const adminToken = `adm_${randomBytes(12).toString('hex')}`;
  const config = { databaseUrl: db.url, adminToken, adminTokenGenerated: false, baseUrl: 'https://loyalty.test', ...overrides };
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
};

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
