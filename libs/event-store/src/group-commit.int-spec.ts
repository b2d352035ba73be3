import { randomUUID } from 'node:crypto';
import { createTestDatabase } from '@loyalty/testing';
import { WrongExpectedRevisionError } from './event-store.port';
import { EVENT_STORE_MIGRATIONS, PostgresEventStore } from './postgres.event-store';

/** Group commit: appends that arrive together share one statement, and each keeps its own outcome. */
describe('PostgresEventStore group commit', () => {
  const ev = (type: string, id = randomUUID()) => ({ id, type, data: { type } });

  // 6 streams go through es.append_few (a loop), 21 through es.append_set (set-based): the same rules either way
  it.each([[5, 'es.append_few'], [20, 'es.append_set']])('appends of one tick go in as one transaction, each with its own revision, conflict or replay (%i new streams: %s)', async (count, fn) => {
    const db = await createTestDatabase('es_group', { migrations: EVENT_STORE_MIGRATIONS });
    const calls = jest.spyOn(db.pool, 'query');
    const store = new PostgresEventStore(db.pool, 50);
    try {
      const existing = `s-${randomUUID()}`;
      const first = ev('A');
      await store.append(existing, [first], 'no_stream');
      const fresh = Array.from({ length: count }, () => `s-${randomUUID()}`);
      const results = await Promise.allSettled([
        ...fresh.map((s) => store.append(s, [ev('A'), ev('B')], 'no_stream')),
        store.append(existing, [ev('C')], 5n), // wrong expected revision
        store.append(existing, [first], 'any'), // the same event again: a replay, nothing written
        store.append(existing, [ev('D')], 0n), // a second append to the same stream in the same tick
      ]);
      for (let i = 0; i < count; i++) expect(results[i]).toMatchObject({ status: 'fulfilled', value: { nextRevision: 1n } });
      expect(results[count]).toMatchObject({ status: 'rejected' });
      expect((results[count] as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedRevisionError);
      expect(results[count + 1]).toMatchObject({ status: 'fulfilled', value: { nextRevision: 0n } });
      expect(results[count + 2]).toMatchObject({ status: 'fulfilled', value: { nextRevision: 1n } });
      expect(calls.mock.calls.some(([q]) => typeof q === 'object' && q !== null && String((q as { text?: string }).text).includes(fn))).toBe(true);
      expect((await store.readStream(existing)).map((e) => e.type)).toEqual(['A', 'D']);
      for (const s of fresh) expect((await store.readStream(s)).map((e) => [e.type, e.revision])).toEqual([['A', 0n], ['B', 1n]]);
      // the new streams were written by one transaction (one statement)
      const { rows } = await db.pool.query<{ n: number }>(
        'select count(distinct transaction_id)::int as n from es.events where stream_id = any($1::text[])', [fresh]);
      expect(rows[0].n).toBe(1);
      // positions grow with revisions inside each append
      const positions = await Promise.all(fresh.map((s) => store.readStream(s)));
      for (const [a, b] of positions) expect(b.position.prepare > a.position.prepare).toBe(true);
    } finally {
      await store.close();
      await db.drop();
    }
  });

  it('an event PostgreSQL refuses fails its own append only', async () => {
    const db = await createTestDatabase('es_group_bad', { migrations: EVENT_STORE_MIGRATIONS });
    const store = new PostgresEventStore(db.pool, 50);
    try {
      const good = Array.from({ length: 5 }, () => `s-${randomUUID()}`);
      const bad = `s-${randomUUID()}`;
      const literal = `s-${randomUUID()}`;
      const results = await Promise.allSettled([
        ...good.map((s) => store.append(s, [ev('A')], 'no_stream')),
        store.append(bad, [{ id: randomUUID(), type: 'A', data: { text: 'nul \u0000 byte' } }], 'no_stream'),
        // a backslash followed by "u0000" is text, not a NUL: stored as sent
        store.append(literal, [{ id: randomUUID(), type: 'A', data: { text: 'literal \\u0000 text' } }], 'no_stream'),
      ]);
      for (let i = 0; i < 5; i++) expect(results[i].status).toBe('fulfilled');
      expect(results[5].status).toBe('rejected');
      expect(results[6].status).toBe('fulfilled');
      expect((await store.readStream(literal))[0].data).toEqual({ text: 'literal \\u0000 text' });
      for (const s of good) expect(await store.readStream(s)).toHaveLength(1);
      expect(await store.readStream(bad)).toEqual([]);
    } finally {
      await store.close();
      await db.drop();
    }
  });
});
