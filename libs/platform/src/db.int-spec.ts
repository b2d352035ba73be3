import { ASYNC_COMMIT, createPool, poolConfig, prepared, preparedShapes, unknownArrayLengths } from './db';

/**
 * A PostgreSQL restart terminates every backend. A client checked out at that moment used to emit
 * an 'error' event nobody listened to, which ends a Node process (issue 8: a ledger died in the
 * fault test's PostgreSQL restart). Here one backend is terminated while its client is checked out.
 */
describe('createPool when the server drops a connection', () => {
  const url = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  const uncaught: unknown[] = [];
  const record = (e: unknown) => { uncaught.push(e); };
  beforeAll(() => { process.on('uncaughtException', record); });
  afterAll(() => { process.off('uncaughtException', record); });

  it('a checked-out client whose backend is terminated does not end the process, and the pool goes on', async () => {
    const pool = createPool(url, 4);
    try {
      const held = await pool.connect();
      const { rows } = await held.query<{ pid: number }>('select pg_backend_pid() as pid');
      const ended = new Promise<void>((r) => held.once('end', () => r()));
      // terminated between two queries of the holder, as a restart does
      await pool.query('select pg_terminate_backend($1)', [rows[0].pid]);
      await ended;
      await expect(held.query('select 1')).rejects.toThrow();
      held.release();
      expect(uncaught).toEqual([]);
      expect((await pool.query<{ ok: number }>('select 1 as ok')).rows).toEqual([{ ok: 1 }]);
    } finally {
      await pool.end();
    }
  });
});

describe('createPool connection settings', () => {
  const url = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

  it('turns JIT compilation off, and the URL\'s own options still apply (and win)', async () => {
    const plain = createPool(url, 1);
    const withOptions = new URL(url);
    withOptions.searchParams.set('options', '-c work_mem=8MB');
    const tuned = createPool(withOptions.toString(), 1);
    const overridden = new URL(url);
    overridden.searchParams.set('options', '-c jit=on');
    const back = createPool(overridden.toString(), 1);
    try {
      expect((await plain.query<{ jit: string }>('show jit')).rows[0].jit).toBe('off');
      expect((await tuned.query<{ jit: string }>('show jit')).rows[0].jit).toBe('off');
      expect((await tuned.query<{ work_mem: string }>('show work_mem')).rows[0].work_mem).toBe('8MB');
      expect((await back.query<{ jit: string }>('show jit')).rows[0].jit).toBe('on');
    } finally {
      await Promise.all([plain.end(), tuned.end(), back.end()]);
    }
  });
});

describe('prepared statements', () => {
  const url = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

  it('are parsed once per connection under their name, and answer like the plain statement', async () => {
    const pool = createPool(url, 1);
    const twice = prepared('spec_twice', 'select $1::int * 2 as n');
    try {
      expect((await pool.query<{ n: number }>(twice([21]))).rows).toEqual([{ n: 42 }]);
      expect((await pool.query<{ n: number }>(twice([5]))).rows).toEqual([{ n: 10 }]);
      const { rows } = await pool.query<{ name: string }>(`select name from pg_prepared_statements where name like 'loyalty_spec%'`);
      expect(rows).toEqual([{ name: 'loyalty_spec_twice' }]);
    } finally {
      await pool.end();
    }
  });

  it('a family of shapes names each distinct text once', async () => {
    const pool = createPool(url, 1);
    const shape = preparedShapes('spec_shape');
    try {
      for (const op of ['+', '-', '+']) expect((await pool.query<{ n: number }>(shape(`select 10 ${op} $1::int as n`, [1]))).rows[0].n).toBe(op === '+' ? 11 : 9);
      const { rows } = await pool.query<{ n: number }>(`select count(*)::int as n from pg_prepared_statements where name like 'loyalty_spec_shape_%'`);
      expect(rows[0].n).toBe(2);
    } finally {
      await pool.end();
    }
  });

  it('a statement over unnest runs on its generic plan from the sixth call (the plain text is planned on every call)', async () => {
    const pool = createPool(url, 1);
    // one index probe per item: for a custom plan that knows there are two items, cheaper than the generic plan's ten
    const text = `select q.n, q.v * 2 as d, c.oid is not null as found from unnest($1::text[], $2::int[]) with ordinality as q(k, v, n)
      left join lateral (select c.oid from pg_class c where c.relname = q.k limit 1) c on true order by q.n`;
    const plain = { name: 'loyalty_spec_plain_unnest', text };
    const generic = prepared('spec_generic_unnest', text);
    try {
      for (let i = 0; i < 8; i++) {
        const values = [['pg_class', 'no such relation'], [i, i + 1]];
        const a = await pool.query({ ...plain, values });
        const b = await pool.query(generic(values));
        expect(b.rows).toEqual(a.rows);
        expect(b.rows).toEqual([{ n: '1', d: 2 * i, found: true }, { n: '2', d: 2 * (i + 1), found: false }]);
      }
      const { rows } = await pool.query<{ name: string; generic_plans: string; custom_plans: string }>(
        `select name, generic_plans::text, custom_plans::text from pg_prepared_statements where name like 'loyalty_spec_%unnest' order by name`);
      expect(rows).toEqual([
        { name: 'loyalty_spec_generic_unnest', generic_plans: '3', custom_plans: '5' },
        { name: 'loyalty_spec_plain_unnest', generic_plans: '0', custom_plans: '8' },
      ]);
    } finally {
      await pool.end();
    }
  });

  it('hides the lengths of the arrays sent to unnest, and nothing else', () => {
    expect(unknownArrayLengths('select * from unnest($1::text[], $12::bigint[]) with ordinality as q(a, b, n) where x = $3'))
      .toBe('select * from unnest((select $1::text[]), (select $12::bigint[])) with ordinality as q(a, b, n) where x = $3');
    expect(unknownArrayLengths('select * from es.f($1::text[]) cross join unnest(p.list) u')).toBe('select * from es.f($1::text[]) cross join unnest(p.list) u');
  });

  it('a connection string that is not a URL is passed on as it is, with JIT off', () => {
    expect(poolConfig('/var/run/postgresql loyalty', 2)).toEqual({ connectionString: '/var/run/postgresql loyalty', max: 2, options: '-c jit=off' });
  });
});

/**
 * ASYNC_COMMIT (issue 7, nineteenth round): a statement that carries it commits its own implicit
 * transaction without waiting for the WAL flush, and nothing after it is affected.
 */
describe('ASYNC_COMMIT', () => {
  const url = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

  it('turns synchronous_commit off for the statement\'s transaction only', async () => {
    const pool = createPool(url, 1);
    const setting = async (q: { query: (s: string) => Promise<{ rows: { s: string }[] }> }) => (await q.query(`select current_setting('synchronous_commit') as s`)).rows[0].s;
    try {
      expect(await setting(pool)).toBe('on');
      const client = await pool.connect();
      try {
        await client.query('begin');
        await client.query(`select x.n from (select 1 as n) x cross join ${ASYNC_COMMIT}`);
        // the rest of the statement's transaction commits asynchronously
        expect(await setting(client)).toBe('off');
        await client.query('commit');
        // and the next one is as the connection was
        expect(await setting(client)).toBe('on');
      } finally {
        client.release();
      }
      // alone (its own implicit transaction): the same connection is back to synchronous commits after it
      expect((await pool.query<{ n: number }>(`select x.n from (select 7 as n) x cross join ${ASYNC_COMMIT}`)).rows).toEqual([{ n: 7 }]);
      expect(await setting(pool)).toBe('on');
    } finally {
      await pool.end();
    }
  });
});
