import { randomBytes } from 'node:crypto';
import { Client, Pool } from 'pg';
import { MigrationClass, closeConfigOrm, createPool, migrate } from '@loyalty/platform';

/** Where integration tests create their databases: TEST_DATABASE_URL, else the local server. */
export const testDatabaseBaseUrl = (): string =>
  process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  /** Database name, `t_<prefix>_<random>`. */
  name: string;
  /** Connection string for the new database. */
  url: string;
  /** A pool on the new database; ended by drop(). */
  pool: Pool;
  /** Ends the pool and drops the database, closing any other connection to it. Safe to call twice. */
  drop(): Promise<void>;
}

export interface TestDatabaseOptions {
  /** Applied in order before the database is handed out. */
  migrations?: MigrationClass[];
  /** Pool size (default 20). */
  poolMax?: number;
}

const quoteIdent = (s: string): string => `"${s.replace(/"/g, '""')}"`;

const withAdmin = async <T>(fn: (c: Client) => Promise<T>): Promise<T> => {
  const client = new Client({ connectionString: testDatabaseBaseUrl(), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
};

/**
 * Creates a fresh, uniquely named database (one per suite, so suites run in parallel without
 * sharing rows) and returns its URL and a pool. Always pair with `drop()` in afterAll.
 */
export const createTestDatabase = async (prefix: string, options: TestDatabaseOptions = {}): Promise<TestDatabase> => {
  const clean = prefix.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 40) || 'db';
  const name = `t_${clean}_${randomBytes(5).toString('hex')}`;
  // template0: does not wait for (or fail on) other sessions connected to template1.
  await withAdmin((c) => c.query(`create database ${quoteIdent(name)} template template0`));
  const u = new URL(testDatabaseBaseUrl());
  u.pathname = `/${name}`;
  const url = u.toString();
  const pool = createPool(url, options.poolMax ?? 20);
  let dropped = false;
  const drop = async (): Promise<void> => {
    if (dropped) return;
    dropped = true;
    await closeConfigOrm(pool);
    // A client a test never released would make pool.end() wait forever; the forced drop below ends it anyway.
    await Promise.race([pool.end().catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
    // WITH (FORCE) (PostgreSQL 13+) ends connections a test forgot to close, e.g. a LISTEN client.
    await withAdmin((c) => c.query(`drop database if exists ${quoteIdent(name)} with (force)`));
  };
  try {
    if (options.migrations?.length) await migrate(url, options.migrations);
  } catch (e) {
    await drop().catch(() => undefined);
    throw e;
  }
  return { name, url, pool, drop };
};
