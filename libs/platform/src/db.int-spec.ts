import { createPool } from './db';

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
