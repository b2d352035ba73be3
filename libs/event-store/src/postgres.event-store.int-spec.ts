import { randomUUID } from 'node:crypto';
import { createTestDatabase, eventually, sleep } from '@loyalty/testing';
import { runEventStoreContract } from './event-store.contract';
import { RecordedEvent, START } from './event-store.port';
import { EVENT_STORE_MIGRATIONS, PostgresEventStore } from './postgres.event-store';
import { PROJECTION_MIGRATIONS } from './projection-runner';

runEventStoreContract('PostgreSQL', async () => {
  const db = await createTestDatabase('es_contract', { migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS] });
  const pollMs = 50;
  const store = new PostgresEventStore(db.pool, pollMs);
  const slow: PostgresEventStore[] = [];
  return {
    store,
    storeWithDelayedCommit: (beforeCommit) => {
      const s = new PostgresEventStore(db.pool, pollMs, { beforeCommit });
      slow.push(s);
      return s;
    },
    cleanup: async () => {
      await Promise.all([store, ...slow].map((s) => s.close()));
      await db.drop();
    },
  };
});

describe('PostgresEventStore specifics', () => {
  it('subscriptions started in the same tick share one LISTEN connection, and close() returns it to the pool', async () => {
    const db = await createTestDatabase('es_listen', { migrations: EVENT_STORE_MIGRATIONS, poolMax: 4 });
    try {
      const store = new PostgresEventStore(db.pool, 50);
      const subs = Array.from({ length: 3 }, () => store.subscribe({ from: START, onEvents: async () => undefined }));
      await eventually(() => expect(db.pool.totalCount).toBeGreaterThan(0));
      await sleep(100);
      await Promise.all(subs.map((s) => s.stop()));
      await store.close();
      // every connection is back: nothing checked out, so pool.end() can finish
      await eventually(() => expect(db.pool.totalCount - db.pool.idleCount).toBe(0), { timeoutMs: 2000 });
    } finally {
      await db.drop();
    }
  });

  it('a live subscriber is woken by NOTIFY, not by polling, even when appends land while it reads', async () => {
    const db = await createTestDatabase('es_notify', { migrations: EVENT_STORE_MIGRATIONS });
    const store = new PostgresEventStore(db.pool, 60_000); // polling would never deliver in time
    const writer = new PostgresEventStore(db.pool, 60_000);
    try {
      const seen: RecordedEvent[] = [];
      const sub = store.subscribe({ from: START, batchSize: 1, onEvents: async (e) => { seen.push(...e); await sleep(1); } });
      for (let round = 0; round < 5; round++) {
        for (let i = 0; i < 20; i++) await writer.append(`s-${round}`, [{ id: randomUUID(), type: 'E', data: { i } }], 'any');
        await eventually(() => expect(seen).toHaveLength((round + 1) * 20), { timeoutMs: 3000 });
      }
      await sub.stop();
    } finally {
      await store.close();
      await writer.close();
      await db.drop();
    }
  });
});
