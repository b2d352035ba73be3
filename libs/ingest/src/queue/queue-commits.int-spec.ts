import { createTestDatabase, TestDatabase } from '@loyalty/testing';
import { INGEST_MIGRATIONS } from '../ingest.migrations';
import { EventQueueRepository } from './event-queue.repository';

/**
 * Which queue statements wait for the disk (issue 7, nineteenth round): accepting an event does
 * (the 202 promises it is kept); its lease and its outcome do not (ASYNC_COMMIT: lost with a
 * PostgreSQL crash, the event is claimed and processed again, idempotently).
 */
describe('ingest queue commits (PostgreSQL)', () => {
  let db: TestDatabase;
  beforeAll(async () => { db = await createTestDatabase('queue_commits', { migrations: INGEST_MIGRATIONS }); });
  afterAll(async () => { await db?.drop(); });

  it('the insert commits synchronously; the claim and the finish asynchronously, and they still do their work', async () => {
    const repo = new EventQueueRepository(db.pool);
    const texts: string[] = [];
    const query = db.pool.query.bind(db.pool) as (...a: unknown[]) => Promise<unknown>;
    const spy = jest.spyOn(db.pool, 'query').mockImplementation(((...args: unknown[]) => {
      const q = args[0];
      texts.push(typeof q === 'string' ? q : (q as { text: string }).text);
      return query(...args);
    }) as never);
    try {
      await repo.insert('T-c', [{ id: 'EV-c1', idempotency_key: 'k-c1', type: 'order.paid', order_ref: 'O-c1', partition_key: 'order:O-c1', payload: { type: 'order.paid', order_ref: 'O-c1', gross_cents: 100 } as never }], new Date());
      const [claimed] = await repo.claim(10, 60_000);
      expect(claimed).toMatchObject({ tenant: 'T-c', id: 'EV-c1' });
      expect(await repo.finish(claimed, { status: 'completed', error: null, ledger_entry_ids: ['LE-c1'] }, new Date())).toBe(true);
    } finally {
      spy.mockRestore();
    }
    const async = (t: string) => t.includes(`set_config('synchronous_commit', 'off', true)`);
    const of = (fragment: string) => texts.filter((t) => t.includes(fragment));
    expect(of('insert into ingest.events').length).toBeGreaterThan(0);
    expect(of('insert into ingest.events').some(async)).toBe(false);
    expect(of('ingest.claim_events').map(async)).toEqual([true]);
    expect(of('ingest.finish_events').map(async)).toEqual([true]);
    const { rows } = await db.pool.query(`select status, ledger_entry_ids from ingest.events where tenant = 'T-c' and id = 'EV-c1'`);
    expect(rows).toEqual([{ status: 'completed', ledger_entry_ids: ['LE-c1'] }]);
    // the pool's connections are back to synchronous commits afterwards
    expect((await db.pool.query<{ s: string }>(`select current_setting('synchronous_commit') as s`)).rows[0].s).toBe('on');
  });
});
