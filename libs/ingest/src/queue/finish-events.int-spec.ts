import { createTestDatabase, tableScans, TestDatabase } from '@loyalty/testing';
import { INGEST_MIGRATIONS } from '../ingest.migrations';

/**
 * ingest.finish_events (IngestFinish006): a batch's outcomes, each written only while its caller
 * holds the lease, by primary key: also when the statement was prepared on a young queue.
 */
describe('ingest outcomes (PostgreSQL)', () => {
  let db: TestDatabase;
  const FINISH = { name: 'finish_events_test', text: 'select n from ingest.finish_events($1::jsonb) as f(n)' };
  const finish = async (outcomes: { id: string; attempts: number; status?: string }[]): Promise<number[]> => {
    const json = JSON.stringify(outcomes.map((o, i) => ({
      n: i + 1, tenant: 'T1', id: o.id, attempts: o.attempts, status: o.status ?? 'completed', error: null, ids: ['LE-1', 'LE-2'], processed_at: new Date().toISOString(),
    })));
    return (await db.pool.query<{ n: number }>({ ...FINISH, values: [json] })).rows.map((r) => r.n).sort((a, b) => a - b);
  };

  beforeAll(async () => {
    // one connection: the prepared statement's cached plan is the one every call below uses
    db = await createTestDatabase('finish_events', { migrations: INGEST_MIGRATIONS, poolMax: 1 });
  });
  afterAll(async () => { await db?.drop(); });

  it('writes the outcomes of leased events whose lease is still the caller\'s, and no other', async () => {
    await db.pool.query('analyze ingest.events'); // statistics of an empty queue
    for (let i = 0; i < 6; i++) expect(await finish([{ id: 'EV-none', attempts: 1 }])).toEqual([]); // the plan is made on the empty queue
    // 20,000 events: every tenth leased (attempt 1), the others completed
    await db.pool.query(
      `insert into ingest.events (tenant, id, idempotency_key, type, partition_key, payload, received_at, status, attempts, locked_until)
       select 'T1', 'EV-' || g, 'k' || g, 'order.paid', 'order:' || g, '{}', now(), case when g % 10 = 0 then 'queued' else 'completed' end, 1,
              case when g % 10 = 0 then now() + interval '1 hour' end
         from generate_series(1, 20000) g`);
    // EV-10 is leased (written); EV-20 was leased again since (attempts 2: not the caller's lease); EV-11 is completed
    await db.pool.query(`update ingest.events set attempts = 2 where tenant = 'T1' and id = 'EV-20'`);
    expect(await finish([{ id: 'EV-10', attempts: 1 }, { id: 'EV-20', attempts: 1 }, { id: 'EV-11', attempts: 1 }, { id: 'EV-30', attempts: 1, status: 'failed' }])).toEqual([1, 4]);
    const { rows } = await db.pool.query(`select id, status, locked_until, ledger_entry_ids from ingest.events where tenant = 'T1' and id in ('EV-10', 'EV-20', 'EV-30') order by id`);
    expect(rows).toEqual([
      { id: 'EV-10', status: 'completed', locked_until: null, ledger_entry_ids: ['LE-1', 'LE-2'] },
      { id: 'EV-20', status: 'queued', locked_until: expect.any(Date), ledger_entry_ids: [] },
      { id: 'EV-30', status: 'failed', locked_until: null, ledger_entry_ids: ['LE-1', 'LE-2'] },
    ]);
  });

  it('finds each outcome\'s row by primary key, never by a sequential scan, though the plan was made on an empty queue', async () => {
    const before = await tableScans(db.pool, 'ingest.events');
    for (let i = 0; i < 20; i++) {
      const ids = Array.from({ length: 5 }, (_, j) => ({ id: `EV-${(100 + i * 5 + j) * 10}`, attempts: 1 }));
      expect(await finish(ids)).toEqual([1, 2, 3, 4, 5]);
    }
    const after = await tableScans(db.pool, 'ingest.events', before.idx + 100);
    expect(after.idx - before.idx).toBeGreaterThanOrEqual(100);
    expect(after.seq - before.seq).toBe(0);
  });
});
