import { Client, Pool, PoolClient } from 'pg';

/** Creates the database named in the URL when it does not exist yet (first start on a fresh machine). */
export const ensureDatabase = async (url: string): Promise<void> => {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) return;
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) {
      try {
        await client.query(`create database "${name.replace(/"/g, '""')}"`);
      } catch (e) {
        // 42P04 / 23505: another process created it first
        const code = (e as { code?: string }).code;
        if (code !== '42P04' && code !== '23505') throw e;
      }
    }
  } finally {
    await client.end();
  }
};

export const createPool = (url: string, max = 20): Pool => {
  const pool = new Pool({ connectionString: url, max });
  pool.on('error', () => undefined); // idle client errors surface on the next query
  return pool;
};

export const inTransaction = async <T>(pool: Pool, fn: (c: PoolClient) => Promise<T>): Promise<T> => {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const result = await fn(client);
    await client.query('commit');
    return result;
  } catch (e) {
    await client.query('rollback').catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
};

export type Queryable = Pick<PoolClient, 'query'>;
