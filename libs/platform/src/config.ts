import { randomBytes } from 'node:crypto';

/** Environment configuration (decisions §11). Read once per process. */
export interface AppConfig {
  port: number;
  databaseUrl: string;
  eventStore: 'postgres' | 'eventstoredb';
  eventStoreUrl: string | undefined;
  kafkaBrokers: string[] | undefined;
  redisUrl: string | undefined;
  adminToken: string;
  adminTokenGenerated: boolean;
  backlogLimit: number;
  keyRotationGraceSeconds: number;
  webhookRetrySchedule: number[];
  webhookDisableAfter: number;
  webhookTimeoutMs: number;
  baseUrl: string;
  sweepIntervalMs: number;
  logLevel: string;
  /** rows per internal page while streaming a CSV export (1–1000; decisions §9a) */
  exportPageRows: number;
  /** /readyz fails while a projection's oldest unapplied event is older than this (LOYALTY_READY_MAX_PROJECTION_LAG_SECONDS, default 60; 0 turns the check off) */
  readyMaxProjectionLagSeconds: number;
  /**
   * `run` (default): a process applies pending schema migrations when it starts. `check`: it only
   * checks that none is pending and fails (and retries) until the migration Job has run them.
   */
  migrations?: 'run' | 'check';
}

const int = (v: string | undefined, d: number): number => {
  if (v === undefined || v === '') return d;
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new Error(`expected an integer, got ${v}`);
  return n;
};

const migrationsMode = (v: string | undefined): 'run' | 'check' => {
  if (v === undefined || v === '' || v === 'run') return 'run';
  if (v === 'check') return 'check';
  throw new Error(`LOYALTY_MIGRATIONS must be run or check, got ${v}`);
};

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): AppConfig => {
  const port = int(env.PORT, 3000);
  return {
    port,
    databaseUrl: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/loyalty',
    eventStore: env.EVENT_STORE === 'eventstoredb' ? 'eventstoredb' : 'postgres',
    eventStoreUrl: env.EVENTSTORE_URL,
    kafkaBrokers: env.KAFKA_BROKERS ? env.KAFKA_BROKERS.split(',').map((s) => s.trim()).filter(Boolean) : undefined,
    redisUrl: env.REDIS_URL || undefined,
    adminToken: env.LOYALTY_ADMIN_TOKEN || `adm_${randomBytes(24).toString('base64url')}`,
    adminTokenGenerated: !env.LOYALTY_ADMIN_TOKEN,
    backlogLimit: int(env.LOYALTY_BACKLOG_LIMIT, 20000),
    keyRotationGraceSeconds: int(env.LOYALTY_KEY_ROTATION_GRACE_SECONDS, 86400),
    webhookRetrySchedule: (env.LOYALTY_WEBHOOK_RETRY_SCHEDULE ?? '5,30,120,600,1800,3600,10800,21600,43200,86400')
      .split(',').map((s) => int(s.trim(), 0)),
    webhookDisableAfter: int(env.LOYALTY_WEBHOOK_DISABLE_AFTER, 20),
    webhookTimeoutMs: int(env.LOYALTY_WEBHOOK_TIMEOUT_MS, 10000),
    baseUrl: (env.LOYALTY_BASE_URL ?? `http://localhost:${port}`).replace(/\/$/, ''),
    sweepIntervalMs: int(env.LOYALTY_SWEEP_INTERVAL_MS, 5000),
    logLevel: env.LOG_LEVEL ?? 'info',
    exportPageRows: Math.min(1000, Math.max(1, int(env.LOYALTY_EXPORT_PAGE_ROWS, 1000))),
    readyMaxProjectionLagSeconds: Math.max(0, int(env.LOYALTY_READY_MAX_PROJECTION_LAG_SECONDS, 60)),
    migrations: migrationsMode(env.LOYALTY_MIGRATIONS),
  };
};
