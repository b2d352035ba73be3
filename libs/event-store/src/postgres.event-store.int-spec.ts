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

  it('a live subscriber is woken by NOTIFY, not by polling, even when an append commits while it is reading', async () => {
    const db = await createTestDatabase('es_notify', { migrations: EVENT_STORE_MIGRATIONS });
    // Reads that take a while widen the window in which a NOTIFY arrives during a read.
    class SlowReads extends PostgresEventStore {
      override async readAll(...args: Parameters<PostgresEventStore['readAll']>): Promise<RecordedEvent[]> {
        const events = await super.readAll(...args);
        await sleep(40);
        return events;
      }
    }
    const store = new SlowReads(db.pool, 60_000); // polling alone would never deliver in time
    const writer = new PostgresEventStore(db.pool, 60_000);
    try {
      const seen: RecordedEvent[] = [];
      const sub = store.subscribe({ from: START, onEvents: async (e) => { seen.push(...e); } });
      await sleep(100); // LISTEN is up
      for (let i = 0; i < 5; i++) {
        await writer.append('s-1', [{ id: randomUUID(), type: 'E', data: { i } }], 'any');
        // the subscriber delivers it, then at once reads again (finding nothing): the next append commits during that read
        await eventually(() => expect(seen).toHaveLength(i + 1), { timeoutMs: 2000, intervalMs: 1 });
      }
      await sub.stop();
    } finally {
      await store.close();
      await writer.close();
      await db.drop();
    }
  });
});
