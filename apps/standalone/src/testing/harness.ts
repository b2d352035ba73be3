import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { AppConfig } from '@loyalty/platform';
import type { INestApplication } from '@nestjs/common';

/** End-to-end harness: a real standalone app on a fresh PostgreSQL database, driven over real HTTP. */
export interface HttpResult<T = any> { status: number; headers: Headers; body: T }

export interface TestApp {
  url: string;
  adminToken: string;
  databaseUrl: string;
  http<T = any>(method: string, path: string, opts?: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> }): Promise<HttpResult<T>>;
  admin<T = any>(method: string, path: string, body?: unknown): Promise<HttpResult<T>>;
  /** Creates a programme; returns its id and the live and test keys (all scopes). */
  createProgram(body?: Record<string, unknown>): Promise<{ programId: string; liveKey: string; testKey: string; liveKeyId: string; testKeyId: string }>;
  close(): Promise<void>;
  /** The Nest app, when this process started it (not for an already running deployment). */
  app?: INestApplication;
}

const baseDb = () => process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export const freshDatabaseUrl = async (prefix: string): Promise<{ url: string; drop: () => Promise<void> }> => {
  const name = `t_${prefix.replace(/[^a-z0-9]/gi, '').toLowerCase().slice(0, 20)}_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: baseDb() });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const u = new URL(baseDb());
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      const c = new Client({ connectionString: baseDb() });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`).catch(() => undefined);
      await c.end();
    },
  };
};

export const httpClient = (url: string) => async <T = any>(method: string, path: string, opts: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}): Promise<HttpResult<T>> => {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
  const res = await fetch(url + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try { parsed = text ? JSON.parse(text) : null; } catch { /* keep text */ }
  return { status: res.status, headers: res.headers, body: parsed as T };
};

/**
 * Starts the standalone app in this process on a fresh database and a free port.
 * Pass `url` to drive an already running deployment instead (e.g. the distributed topology).
 */
export const startTestApp = async (overrides: Partial<AppConfig> = {}, existing?: { url: string; adminToken: string; databaseUrl: string; close: () => Promise<void> }): Promise<TestApp> => {
  let url: string; let adminToken: string; let databaseUrl: string; let close: () => Promise<void>; let app: INestApplication | undefined;
  if (existing) {
    ({ url, adminToken, databaseUrl, close } = existing);
  } else {
    const db = await freshDatabaseUrl('e2e');
    adminToken = `adm_${randomBytes(12).toString('hex')}`;
    const { startStandalone } = await import('../start');
    const started = await startStandalone({ databaseUrl: db.url, port: 0, adminToken, adminTokenGenerated: false, baseUrl: 'https://loyalty.test', ...overrides }, false);
    url = started.url;
    app = started.app;
    databaseUrl = db.url;
    close = async () => { await started.app.close(); await db.drop(); };
  }
  const http = httpClient(url);
  const admin = <T = any>(method: string, path: string, body?: unknown) => http<T>(method, path, { key: adminToken, body });
  return {
    url, adminToken, databaseUrl, http, admin, close, app,
    async createProgram(body = {}) {
      const r = await admin('POST', '/admin/v1/programs', { program_name: 'Test programme', currency_name: 'points', ...body });
      if (r.status !== 201) throw new Error(`createProgram: ${r.status} ${JSON.stringify(r.body)}`);
      const d = r.body.data;
      return { programId: d.id, liveKey: d.keys.live.key, testKey: d.keys.test.key, liveKeyId: d.keys.live.id, testKeyId: d.keys.test.id };
    },
  };
};
