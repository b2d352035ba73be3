import { createHash } from 'node:crypto';
import { Client, Pool, PoolClient, PoolConfig, QueryConfig } from 'pg';

/** Creates the database named in the URL when it does not exist yet (first start on a fresh machine). */
export const ensureDatabase = async (url: string): Promise<void> => {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) return;
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  client.on('error', () => undefined); // a dropped connection fails the query in progress instead
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

/**
 * The service's connection settings: JIT compilation off (before any `options` the URL gives, which
 * win). PostgreSQL compiles a statement whose estimated cost passes jit_above_cost, and estimates
 * for statements over `unnest` of many parameters pass it easily: a batch's stream read (500
 * ranges, every one a single index probe) spent 5.4 ms of its 6.3 ms compiling, about a tenth of
 * PostgreSQL's CPU in the ingest benchmark. Nothing the service runs is long enough to repay it.
 */
export const poolConfig = (url: string, max: number): PoolConfig => {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return { connectionString: url, max, options: '-c jit=off' }; // not a URL (a socket path): nothing to merge
  }
  const given = target.searchParams.get('options');
  target.searchParams.delete('options');
  return { connectionString: target.toString(), max, options: ['-c jit=off', given].filter(Boolean).join(' ') };
};

/**
 * A pool whose connections never end the process. pg emits 'error' on a client whose connection
 * drops (a PostgreSQL restart terminates every backend); the pool listens only while a client is
 * idle, so a client checked out at that moment (a transaction between two queries, a projection
 * batch) had no listener and the 'error' event ended the process (issue 8: a ledger died in the
 * fault test's PostgreSQL restart). Every client gets a listener for its whole life: the query in
 * progress still fails with the error, the client is not queryable any more, and the pool drops it
 * when it is released.
 */
export const createPool = (url: string, max = 20): Pool => {
  const pool = new Pool(poolConfig(url, max));
  pool.on('error', () => undefined); // idle client errors surface on the next query
  pool.on('connect', (client) => { client.on('error', () => undefined); });
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

/**
 * Deletes one tenant's rows from tables keyed by `tenant`, in the order given (children before
 * parents): how a service wipes its own part of a sandbox. Answers the rows deleted.
 */
export const deleteTenantRows = async (db: Pick<Pool, 'query'>, tables: readonly string[], tenant: string): Promise<number> => {
  let n = 0;
  for (const table of tables) n += (await db.query(`delete from ${table} where tenant = $1`, [tenant])).rowCount ?? 0;
  return n;
};

/**
 * The array parameters of `unnest(...)` calls read through a scalar sub-select:
 * `unnest($1::text[], $2::int[])` becomes `unnest((select $1::text[]), (select $2::int[]))`.
 *
 * A plan made for a call's values knows each array's length, a generic plan assumes 10 rows, so
 * the generic plan looks costlier than the custom one whenever fewer than 10 rows are sent, and
 * PostgreSQL (plan_cache_mode auto) goes on planning a prepared statement on every call, forever
 * (pg_prepared_statements: custom_plans 9,000, generic_plans 0). Read through a sub-select, the
 * arrays' lengths are unknown to both plans; they cost the same, and from the sixth call on the
 * statement runs on its generic plan. A sub-select of a parameter is evaluated once per call.
 */
export const unknownArrayLengths = (text: string): string =>
  text.replace(/unnest\(([^()]*)\)/g, (_, args: string) => `unnest(${args.split(',').map((a) => {
    const arg = a.trim();
    return /^\$\d+::[a-z0-9_]+\[\]$/i.test(arg) ? `(select ${arg})` : arg;
  }).join(', ')})`);

/**
 * A FROM item that makes the statement's own (implicit) transaction commit without waiting for its
 * WAL to reach the disk (`synchronous_commit = off` for this transaction only: `set_config(…, true)`),
 * with no statement of its own: `select f.* from some_function($1) f cross join ${ASYNC_COMMIT}`.
 *
 * Only for writes that a PostgreSQL crash may lose because they are redone anyway (issue 7,
 * nineteenth round): the ingest queue's lease and outcomes (a lost lease or outcome puts the event
 * back; processing it again is idempotent: deterministic event ids). What such a statement wrote is
 * visible to everyone at once, as with any commit, and every later synchronous commit (the appends
 * of the events it leased, say) flushes it with its own WAL. Never for the event store's appends,
 * the queue's accepted events, or anything a reply promises is kept.
 */
export const ASYNC_COMMIT = `(select set_config('synchronous_commit', 'off', true)) as async_commit`;

/**
 * A statement PostgreSQL parses once per connection and, after five runs, plans once too (a named,
 * prepared statement on its generic plan). Only for statements whose generic plan is the plan a
 * custom one would be: index probes per row, whatever the row counts (a generic plan assumes 10
 * rows for every `unnest`). Parsing and planning the identity claim of an enrolment took 0.33 ms a
 * call, more than running it (0.18 ms). The arrays sent to `unnest` are hidden from the planner
 * (unknownArrayLengths), or the generic plan would never be chosen. Returns the query config for
 * `pool.query`.
 */
export const prepared = (name: string, text: string) => {
  const fullName = `loyalty_${name}`;
  const generic = unknownArrayLengths(text);
  return (values: unknown[]): QueryConfig<unknown[]> => ({ name: fullName, text: generic, values });
};

/**
 * A family of prepared statements whose text is built at run time from a few shapes (a filter's
 * clauses): each distinct text gets its own name, `loyalty_<name>_<hash of the text>`.
 */
export const preparedShapes = (name: string) => {
  const shapes = new Map<string, { name: string; text: string }>();
  return (text: string, values: unknown[]): QueryConfig<unknown[]> => {
    let shape = shapes.get(text);
    if (shape === undefined) {
      shape = { name: `loyalty_${name}_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`, text: unknownArrayLengths(text) };
      shapes.set(text, shape);
    }
    return { name: shape.name, text: shape.text, values };
  };
};

/** An element the array literal must escape (a quote or a backslash); anything else goes in quotes as it is. */
const ARRAY_ESCAPE = /["\\]/;

/**
 * A one-dimensional array parameter as PostgreSQL's array literal (`{"a","b",NULL}`), the text the
 * pg driver makes of a JavaScript array, made faster: the driver runs two regular-expression
 * replacements and a type dispatch on every element, which made serialising the read models' and
 * the event store's column arrays about 3 % of the service's CPU in the ingest benchmark. Here an
 * element is scanned once and escaped only when it holds a quote or a backslash. Same text, byte
 * for byte (pinned by a property test against the driver's own serialiser); the SQL casts it
 * (`$1::text[]`, `$2::bigint[]`, `$3::timestamptz[]`).
 */
export const pgArray = (values: readonly (string | number | bigint | null | undefined)[]): string => {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const v = values[i];
    if (v === null || v === undefined) {
      out += 'NULL';
      continue;
    }
    const s = typeof v === 'string' ? v : v.toString();
    out += ARRAY_ESCAPE.test(s) ? `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"` : `"${s}"`;
  }
  return `${out}}`;
};
