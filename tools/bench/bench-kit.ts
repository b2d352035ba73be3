import autocannon from 'autocannon';

/** Shared benchmark plumbing: a target (running URL or an in-process standalone app) and autocannon runs. */
export interface Target { url: string; adminToken: string; close: () => Promise<void>; mode: string }

export const target = async (): Promise<Target> => {
  if (process.env.BENCH_URL) {
    return { url: process.env.BENCH_URL, adminToken: process.env.LOYALTY_ADMIN_TOKEN ?? '', close: async () => undefined, mode: process.env.BENCH_MODE ?? 'remote' };
  }
  const { startTestApp } = await import('../../apps/standalone/src/testing/harness');
  const app = await startTestApp();
  return { url: app.url, adminToken: app.adminToken, close: () => app.close(), mode: 'standalone' };
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
