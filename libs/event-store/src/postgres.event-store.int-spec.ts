import { randomUUID } from 'node:crypto';
import { createTestDatabase, eventually, sleep } from '@loyalty/testing';
import { runEventStoreContract } from './event-store.contract';
import { ClaimTakenError, RecordedEvent, START, WrongExpectedRevisionError, comparePositions } from './event-store.port';
import type { QueryRunner } from 'typeorm';
import {
  EVENT_STORE_MIGRATIONS, EventStoreAnnounce007_1765100002000, EventStoreAppend010_1765700000000, EventStoreClaims011_1765900000000, EventStoreJson008_1765300000000, EventStorePlans009_1765500000000, EventStorePlans012_1766200000000, EventStoreAppend013_1766300000000,
  PostgresEventStore,
} from './postgres.event-store';
import { PROJECTION_MIGRATIONS, ProjectionRunner } from './projection-runner';

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
  it('the appends plan their statements once per connection (generic plans), and the migrations down restore the default', async () => {
    const db = await createTestDatabase('es_plans', { migrations: EVENT_STORE_MIGRATIONS });
    const settings = async () => (await db.pool.query<{ proname: string; cfg: string[] }>(
      `select proname, coalesce(proconfig, '{}') as cfg from pg_proc where pronamespace = 'es'::regnamespace and proname in ('append_events', 'append_few', 'append_set') order by proname`)).rows;
    try {
      expect(await settings()).toEqual([
        { proname: 'append_events', cfg: ['enable_seqscan=off', 'plan_cache_mode=force_generic_plan'] },
        { proname: 'append_few', cfg: ['enable_seqscan=off', 'plan_cache_mode=force_generic_plan'] },
        { proname: 'append_set', cfg: ['enable_seqscan=off', 'plan_cache_mode=force_generic_plan'] },
      ]);
      // still appends and finds duplicates with the generic plans: the same two-event append twice
      const store = new PostgresEventStore(db.pool, 50);
      const events = [{ id: randomUUID(), type: 'A', data: {} }, { id: randomUUID(), type: 'B', data: {} }];
      const first = await store.append('plans-1', events, 'no_stream');
      const again = await store.append('plans-1', events, 'no_stream');
      expect(again.nextRevision).toBe(first.nextRevision);
      // appends of one tick to 30 streams (a group through es.append_set, as group-commit.int-spec shows), sent twice: written once, then every one a duplicate
      const group = Array.from({ length: 30 }, (_, i) => ({ streamId: `plans-set-${i}`, events: [{ id: randomUUID(), type: 'A', data: { i } }] }));
      const appendAll = () => Promise.all(group.map((g) => store.append(g.streamId, g.events, 'no_stream')));
      const written = await appendAll();
      const twice = await appendAll();
      expect(twice.map((r) => r.nextRevision)).toEqual(written.map((r) => r.nextRevision));
      expect(Number((await db.pool.query<{ n: string }>(`select count(*) as n from es.events where stream_id like 'plans-set-%'`)).rows[0].n)).toBe(30);
      await store.close();
      // es.append_few moves the stream's head in the statement that locks it (EventStoreAppend013); down, it reads the row `for update` again
      const appendFew = async () => (await db.pool.query<{ src: string }>(`select prosrc as src from pg_proc where oid = 'es.append_few(text[], text[], int[], uuid[], text[], json[], json[], text[], text[], int[])'::regprocedure`)).rows[0].src;
      expect(await appendFew()).toContain('returning s.revision - v_n into v_actual');
      await new EventStoreAppend013_1766300000000().down({ query: (sql: string) => db.pool.query(sql) } as unknown as QueryRunner);
      expect(await appendFew()).toContain('where s.stream_id = v_stream for update');
      expect(await appendFew()).not.toContain('returning s.revision - v_n');
      await new EventStorePlans012_1766200000000().down({ query: (sql: string) => db.pool.query(sql) } as unknown as QueryRunner);
      expect((await settings()).map((r) => r.cfg)).toEqual([
        ['enable_seqscan=off', 'plan_cache_mode=force_generic_plan'], ['enable_seqscan=off', 'plan_cache_mode=force_generic_plan'], ['enable_seqscan=off'],
      ]);
      // the migrations after it first (they define the functions again, with their settings)
      await new EventStoreClaims011_1765900000000().down({ query: (sql: string) => db.pool.query(sql) } as unknown as QueryRunner);
      await new EventStoreAppend010_1765700000000().down({ query: (sql: string) => db.pool.query(sql) } as unknown as QueryRunner);
      await new EventStorePlans009_1765500000000().down({ query: (sql: string) => db.pool.query(sql) } as unknown as QueryRunner);
      expect((await settings()).map((r) => r.cfg)).toEqual([['enable_seqscan=off'], ['enable_seqscan=off'], ['enable_seqscan=off']]);
    } finally {
      await db.drop();
    }
  });

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

describe('PostgresEventStore appends where the caller expected them (EventStoreAppend010)', () => {
  const ev = (type: string) => ({ id: randomUUID(), type, data: { n: type } });
  const call = (store: string, expected: string, events: { id: string; type: string; data: unknown }[]) => [
    [store], [expected], [events.length], events.map((e) => e.id), events.map((e) => e.type),
    JSON.stringify(events.map((e) => e.data)), JSON.stringify(events.map(() => ({}))),
  ];
  const FEW = `select idx, outcome, actual::text, next_revision::text from es.append_few($1::text[], $2::text[], $3::int[], $4::uuid[], $5::text[],
    array(select e from json_array_elements($6::json) with ordinality as t(e, i) order by i), array(select e from json_array_elements($7::json) with ordinality as t(e, i) order by i))`;

  it('ids re-sent at the revision they reached are a duplicate (nothing written); some of them, a conflict that leaves nothing behind', async () => {
    const db = await createTestDatabase('es_append_v2', { migrations: EVENT_STORE_MIGRATIONS });
    const store = new PostgresEventStore(db.pool, 50);
    try {
      const batch = [ev('A'), ev('B')];
      const first = await store.append('dup-1', batch, 'no_stream');
      expect(first.nextRevision).toBe(1n);
      // the caller sends the same ids at the revision the stream is at now: already written
      expect(await store.append('dup-1', batch, 1n)).toEqual(first);
      expect(await store.append('dup-1', [batch[1]], 1n)).toEqual(first);
      // one new id beside one already there: refused, and the new one is not kept
      const fresh = ev('C');
      await expect(store.append('dup-1', [batch[0], fresh], 1n)).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(store.append('dup-1', [fresh, batch[0]], 'any')).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      expect((await store.readStream('dup-1')).map((e) => e.type)).toEqual(['A', 'B']);
      // and the stream goes on from where it was
      expect((await store.append('dup-1', [fresh], 1n)).nextRevision).toBe(2n);
      expect((await db.pool.query<{ revision: string }>(`select revision from es.streams where stream_id = 'dup-1'`)).rows[0].revision).toBe('2');
    } finally {
      await store.close();
      await db.drop();
    }
  });

  it('an append reads a handful of index entries whatever the stream\'s length (2,000 events): no scan of its history', async () => {
    const db = await createTestDatabase('es_append_flat', { migrations: EVENT_STORE_MIGRATIONS });
    const store = new PostgresEventStore(db.pool, 50);
    const client = await db.pool.connect();
    try {
      for (let k = 0; k < 20; k++) await store.append('long-1', Array.from({ length: 100 }, () => ev('E')), k === 0 ? 'no_stream' : BigInt(k * 100 - 1));
      const read = async () => (await client.query<{ n: string }>(
        `select (pg_stat_get_xact_tuples_returned('es.events_event_id'::regclass) + pg_stat_get_xact_tuples_returned('es.events_pkey'::regclass))::text as n`)).rows[0].n;
      const batch = [ev('X'), ev('Y')];
      const cases: [string, string, string][] = [['1999', 'ok', '2001'], ['2001', 'duplicate', '2001'], ['1999', 'duplicate', '2001'], ['any', 'duplicate', '2001']];
      for (const [expected, outcome, next] of cases) {
        await client.query('begin');
        const before = Number(await read());
        const { rows } = await client.query<{ outcome: string; next_revision: string }>(FEW, call('long-1', expected, batch));
        const after = Number(await read());
        await client.query('commit');
        expect([rows[0].outcome, rows[0].next_revision]).toEqual([outcome, next]);
        // the ids probed one by one (and, for a duplicate, its events read back): not 2,000 rows
        expect(after - before).toBeLessThanOrEqual(8);
      }
    } finally {
      client.release();
      await store.close();
      await db.drop();
    }
  });
});

describe('PostgresEventStore claims (EventStoreClaims011)', () => {
  const ev = (type: string) => ({ id: randomUUID(), type, data: { n: type } });
  const claim = (name: string, fingerprint = 'fp-1', ttlSeconds = 3600) => ({ claim: { name, fingerprint, ttlSeconds } });
  const claims = async (db: { pool: { query: <T>(sql: string) => Promise<{ rows: T[] }> } }) =>
    (await db.pool.query<{ name: string; stream_id: string; fingerprint: string }>('select name, stream_id, fingerprint from es.claims order by name')).rows;

  it('a free name is taken with the events; held by another stream or for another fingerprint, nothing is written; the same stream and fingerprint go on', async () => {
    const db = await createTestDatabase('es_claims', { migrations: EVENT_STORE_MIGRATIONS });
    const store = new PostgresEventStore(db.pool, 50);
    try {
      expect((await store.append('c-a', [ev('A')], 'no_stream', claim('k1'))).nextRevision).toBe(0n);
      expect(await claims(db)).toEqual([{ name: 'k1', stream_id: 'c-a', fingerprint: 'fp-1' }]);
      // another stream: refused, its stream not created
      await expect(store.append('c-b', [ev('B')], 'no_stream', claim('k1'))).rejects.toBeInstanceOf(ClaimTakenError);
      expect(await store.readStream('c-b')).toEqual([]);
      // the same stream with another fingerprint: refused, nothing appended
      await expect(store.append('c-a', [ev('C')], 0n, claim('k1', 'fp-2'))).rejects.toBeInstanceOf(ClaimTakenError);
      // the same stream and fingerprint (a retry): the stream decides, as without a claim
      expect((await store.append('c-a', [ev('D')], 0n, claim('k1'))).nextRevision).toBe(1n);
      expect((await store.readStream('c-a')).map((e) => e.type)).toEqual(['A', 'D']);
      // appends without a claim are not affected by it
      expect((await store.append('c-b', [ev('E')], 'no_stream')).nextRevision).toBe(0n);
      expect(await claims(db)).toEqual([{ name: 'k1', stream_id: 'c-a', fingerprint: 'fp-1' }]);
    } finally {
      await store.close();
      await db.drop();
    }
  });

  it('an append that conflicts gives back the name it took; a lapsed name is free again', async () => {
    const db = await createTestDatabase('es_claims_back', { migrations: EVENT_STORE_MIGRATIONS });
    const store = new PostgresEventStore(db.pool, 50);
    try {
      await store.append('c-x', [ev('A')], 'no_stream');
      await expect(store.append('c-x', [ev('B')], 5n, claim('k2'))).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(store.append('c-y', [ev('B')], 3n, claim('k2'))).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      expect(await claims(db)).toEqual([]);
      expect((await store.append('c-z', [ev('C')], 'no_stream', claim('k2'))).nextRevision).toBe(0n);
      // held for no time: lapsed by the next transaction, so another stream takes it
      await store.append('c-z', [ev('D')], 0n, claim('k3', 'fp-1', 0));
      expect((await store.append('c-w', [ev('E')], 'no_stream', claim('k3', 'fp-9'))).nextRevision).toBe(0n);
      expect(await claims(db)).toEqual([
        { name: 'k2', stream_id: 'c-z', fingerprint: 'fp-1' }, { name: 'k3', stream_id: 'c-w', fingerprint: 'fp-9' },
      ]);
    } finally {
      await store.close();
      await db.drop();
    }
  });

  it('twelve appends to twelve streams claiming one name at once (grouped and alone): exactly one is written', async () => {
    const db = await createTestDatabase('es_claims_race', { migrations: EVENT_STORE_MIGRATIONS });
    const grouped = new PostgresEventStore(db.pool, 50);
    const alone = new PostgresEventStore(db.pool, 50, { groupCommit: false });
    try {
      const outcomes = await Promise.allSettled(Array.from({ length: 12 }, (_, i) =>
        (i % 2 ? alone : grouped).append(`race-${i}`, [ev('R')], 'no_stream', claim('k-race', `fp-${i}`))));
      const ok = outcomes.filter((o) => o.status === 'fulfilled');
      expect(ok).toHaveLength(1);
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(ClaimTakenError);
      const { rows } = await db.pool.query<{ n: string }>(`select count(*)::text as n from es.events where stream_id like 'race-%'`);
      expect(rows[0].n).toBe('1');
      expect((await claims(db)).map((c) => c.name)).toEqual(['k-race']);
    } finally {
      await grouped.close();
      await alone.close();
      await db.drop();
    }
  });
});

describe('PostgresEventStore announces its appends (EventStore007)', () => {
  it('a burst of appends sends few NOTIFYs, the last append is announced too, and the appending process is woken at once', async () => {
    const db = await createTestDatabase('es_announce', { migrations: EVENT_STORE_MIGRATIONS });
    const other = new PostgresEventStore(db.pool, 60_000); // another process: only NOTIFY wakes it
    const writer = new PostgresEventStore(db.pool, 60_000); // its own subscriptions: only its pokes wake them
    const listener = await db.pool.connect();
    let notifications = 0;
    listener.on('notification', (n) => { if (n.channel === 'es_appended') notifications++; });
    await listener.query('listen es_appended');
    const seenElsewhere: RecordedEvent[] = [];
    const seenHere: RecordedEvent[] = [];
    const subs = [
      other.subscribe({ from: START, onEvents: async (e) => { seenElsewhere.push(...e); } }),
      writer.subscribe({ from: START, onEvents: async (e) => { seenHere.push(...e); } }),
    ];
    try {
      await sleep(100); // LISTEN is up
      const started = Date.now();
      await Promise.all(Array.from({ length: 200 }, (_, i) => writer.append(`burst-${i}`, [{ id: randomUUID(), type: 'E', data: { i } }], 'no_stream')));
      const took = Date.now() - started;
      await eventually(() => expect(seenHere).toHaveLength(200), { timeoutMs: 2_000, intervalMs: 5 });
      await eventually(() => expect(seenElsewhere).toHaveLength(200), { timeoutMs: 2_000, intervalMs: 5 });
      // one NOTIFY per ANNOUNCE_MS at most (and the trailing one), not one per append; this test's own
      // LISTEN connection may read a NOTIFY a moment after `other`'s did (it woke `other` already)
      await eventually(() => expect(notifications).toBeGreaterThanOrEqual(1), { timeoutMs: 2_000, intervalMs: 5 });
      expect(notifications).toBeLessThanOrEqual(Math.ceil(took / PostgresEventStore.ANNOUNCE_MS) + 2);
      expect(notifications).toBeLessThan(200);
    } finally {
      await Promise.all(subs.map((s) => s.stop()));
      await listener.query('unlisten es_appended');
      listener.release();
      await other.close();
      await writer.close();
      await db.drop();
    }
  });

  it('a store is not woken by its own announcements, only by other stores\' (its appends woke it already)', async () => {
    const db = await createTestDatabase('es_announce_echo', { migrations: EVENT_STORE_MIGRATIONS });
    const writer = new PostgresEventStore(db.pool, 60_000);
    const other = new PostgresEventStore(db.pool, 60_000);
    const seen: RecordedEvent[] = [];
    const sub = writer.subscribe({ from: START, onEvents: async (e) => { seen.push(...e); } });
    await sleep(100); // LISTEN is up (and its own poke done)
    const pokes = jest.spyOn(writer, 'poke');
    try {
      await writer.append('echo-1', [{ id: randomUUID(), type: 'E', data: {} }], 'no_stream');
      await eventually(() => expect(seen).toHaveLength(1), { timeoutMs: 2_000, intervalMs: 5 });
      await sleep(200); // its NOTIFY has come back by now
      expect(pokes).toHaveBeenCalledTimes(1); // the append's own, not the echo
      await other.append('echo-2', [{ id: randomUUID(), type: 'E', data: {} }], 'no_stream');
      await eventually(() => expect(seen).toHaveLength(2), { timeoutMs: 2_000, intervalMs: 5 });
      expect(pokes.mock.calls.length).toBeGreaterThanOrEqual(2); // woken by the other store's NOTIFY (its poll is a minute away)
    } finally {
      pokes.mockRestore();
      await sub.stop();
      await other.close();
      await writer.close();
      await db.drop();
    }
  });

  it('the append functions no longer notify, and the migration back restores their NOTIFY', async () => {
    const db = await createTestDatabase('es_announce_fn', { migrations: EVENT_STORE_MIGRATIONS });
    const notifying = async () => (await db.pool.query<{ proname: string; n: boolean }>(
      `select p.proname, position('pg_notify' in p.prosrc) > 0 as n from pg_proc p join pg_namespace s on s.oid = p.pronamespace
        where s.nspname = 'es' and p.proname like 'append%' order by 1`)).rows;
    try {
      expect(await notifying()).toEqual([{ proname: 'append_events', n: false }, { proname: 'append_few', n: false }, { proname: 'append_set', n: false }]);
      // the migrations after it first (EventStoreAppend013, EventStoreClaims011 and EventStoreAppend010 redefined two of them, EventStoreJson008 changed their signatures)
      await new EventStoreAppend013_1766300000000().down({ query: (sql: string) => db.pool.query(sql) } as unknown as QueryRunner);
      await new EventStoreClaims011_1765900000000().down({ query: (sql: string) => db.pool.query(sql) } as unknown as QueryRunner);
      await new EventStoreAppend010_1765700000000().down({ query: (sql: string) => db.pool.query(sql) } as unknown as QueryRunner);
      await new EventStoreJson008_1765300000000().down({ query: (sql: string) => db.pool.query(sql) } as unknown as QueryRunner);
      await new EventStoreAnnounce007_1765100002000().down({ query: (sql: string) => db.pool.query(sql) } as unknown as QueryRunner);
      expect(await notifying()).toEqual([{ proname: 'append_events', n: true }, { proname: 'append_few', n: true }, { proname: 'append_set', n: true }]);
    } finally {
      await db.drop();
    }
  });
});

describe('PostgresEventStore prepared reads', () => {
  it('keep working on every connection after a migration adds a column to es.events (no `select *` in a prepared statement)', async () => {
    const db = await createTestDatabase('es_prepared_shape', { migrations: EVENT_STORE_MIGRATIONS });
    const store = new PostgresEventStore(db.pool, 50);
    try {
      await store.append('p-1', [{ id: randomUUID(), type: 'A', data: { n: 1 } }], 'no_stream');
      const read = async () => [
        (await store.readStream('p-1', 0n, 10)).map((e) => e.type), // one stream, prepared
        (await store.readStream('p-1')).map((e) => e.type), // the grouped ranges, prepared
      ];
      expect(await read()).toEqual([['A'], ['A']]);
      await db.pool.query(`alter table es.events add column later_column text`);
      await store.append('p-1', [{ id: randomUUID(), type: 'B', data: { n: 2 } }], 0n);
      expect(await read()).toEqual([['A', 'B'], ['A', 'B']]);
    } finally {
      await store.close();
      await db.drop();
    }
  });
});

describe('PostgresEventStore: filtered subscriptions read only what they take and report how far they looked', () => {
  const mine = (n: number) => ({ id: randomUUID(), type: 'Mine', data: { n } });
  const other = (n: number) => ({ id: randomUUID(), type: 'Other', data: { n } });

  /** Appends `count` rounds of one matching event between two others, each in its own append; returns the matching events' numbers in order and the last position. */
  const seed = async (store: PostgresEventStore, count: number) => {
    let last = START;
    for (let i = 0; i < count; i++) {
      await store.append(`x-${i}`, [other(i)], 'any');
      await store.append(`m-${i}`, [mine(i)], 'any');
      last = (await store.append(`y-${i}`, [other(i)], 'any')).position;
    }
    return { wanted: Array.from({ length: count }, (_, i) => i), last };
  };

  const follow = (store: PostgresEventStore, batchSize: number) => {
    const seen: RecordedEvent[] = [];
    const skips: RecordedEvent['position'][] = [];
    const sub = store.subscribe({
      from: START, batchSize, filter: { eventTypes: ['Mine'] },
      onEvents: async (e) => { seen.push(...e); },
      onSkipped: (to) => { skips.push(to); },
    });
    return { seen, skips, sub };
  };

  it('delivers every matching event in order across small pages, and moves to the last event of the store although it does not match', async () => {
    const db = await createTestDatabase('es_filtered', { migrations: EVENT_STORE_MIGRATIONS });
    const store = new PostgresEventStore(db.pool, 50);
    try {
      expect(store.reportsSkipped).toBe(true);
      const { wanted, last } = await seed(store, 7);
      const f = follow(store, 2); // pages of two: the horizon may only be used by a page that is not full
      await eventually(() => expect(f.skips.some((p) => comparePositions(p, last) === 0)).toBe(true));
      await f.sub.stop();
      expect(f.seen.map((e) => e.type)).toEqual(wanted.map(() => 'Mine'));
      expect(f.seen.map((e) => (e.data as { n: number }).n)).toEqual(wanted);
      // skips only ever move forward, and never past a matching event that was not yet delivered
      for (let i = 1; i < f.skips.length; i++) expect(comparePositions(f.skips[i], f.skips[i - 1])).toBeGreaterThan(0);
    } finally {
      await store.close();
      await db.drop();
    }
  });

  it('looks at a bounded window of the store per page: long runs of other events are crossed window by window, no match is lost', async () => {
    const db = await createTestDatabase('es_filtered_window', { migrations: EVENT_STORE_MIGRATIONS });
    const store = new PostgresEventStore(db.pool, 50);
    const saved = PostgresEventStore.FILTER_WINDOW;
    PostgresEventStore.FILTER_WINDOW = 3;
    try {
      // 7 others, 1 match, 11 others, 2 matches, 5 others: the matches sit inside and across windows of 3
      const plan = [7, 1, 11, 2, 5];
      let n = 0;
      let last = START;
      const wanted: number[] = [];
      for (const [i, count] of plan.entries()) {
        for (let k = 0; k < count; k++, n++) {
          const e = i % 2 === 1 ? mine(n) : other(n);
          if (i % 2 === 1) wanted.push(n);
          last = (await store.append(`w-${n}`, [e], 'any')).position;
        }
      }
      const f = follow(store, 2);
      await eventually(() => expect(f.skips.some((p) => comparePositions(p, last) === 0)).toBe(true));
      await f.sub.stop();
      expect(f.seen.map((e) => (e.data as { n: number }).n)).toEqual(wanted);
      // it moved through the others in several steps, each forward
      expect(f.skips.length).toBeGreaterThanOrEqual(3);
      for (let i = 1; i < f.skips.length; i++) expect(comparePositions(f.skips[i], f.skips[i - 1])).toBeGreaterThan(0);
    } finally {
      PostgresEventStore.FILTER_WINDOW = saved;
      await store.close();
      await db.drop();
    }
  });

  it('served from the run of recent events that an unfiltered reader of the same store keeps, the result is the same', async () => {
    const db = await createTestDatabase('es_filtered_recent', { migrations: EVENT_STORE_MIGRATIONS });
    const store = new PostgresEventStore(db.pool, 50);
    try {
      const { wanted, last } = await seed(store, 5);
      const everything: RecordedEvent[] = [];
      const all = store.subscribe({ from: START, onEvents: async (e) => { everything.push(...e); } });
      await eventually(() => expect(everything).toHaveLength(15));
      const f = follow(store, 2);
      await eventually(() => expect(f.skips.some((p) => comparePositions(p, last) === 0)).toBe(true));
      await Promise.all([all.stop(), f.sub.stop()]);
      expect(f.seen.map((e) => (e.data as { n: number }).n)).toEqual(wanted);
    } finally {
      await store.close();
      await db.drop();
    }
  });

  it('at the end of the recent run, a filtered reader takes the unfiltered readers\' next page instead of a filtered query of its own', async () => {
    const db = await createTestDatabase('es_filtered_tail', { migrations: EVENT_STORE_MIGRATIONS });
    const store = new PostgresEventStore(db.pool, 50);
    const own = jest.spyOn(store as unknown as { queryFilteredPage: () => Promise<unknown> }, 'queryFilteredPage');
    try {
      const first = await seed(store, 3);
      const everything: RecordedEvent[] = [];
      const all = store.subscribe({ from: START, onEvents: async (e) => { everything.push(...e); } });
      await eventually(() => expect(everything).toHaveLength(9));
      const f = follow(store, 2);
      await eventually(() => expect(f.skips.some((p) => comparePositions(p, first.last) === 0)).toBe(true));
      const before = own.mock.calls.length;
      // both readers at the head: new rounds arrive while they wait
      let last = first.last;
      for (let i = 3; i < 8; i++) {
        await store.append(`x-${i}`, [other(i)], 'any');
        await store.append(`m-${i}`, [mine(i)], 'any');
        last = (await store.append(`y-${i}`, [other(i)], 'any')).position;
      }
      await eventually(() => expect(f.skips.some((p) => comparePositions(p, last) === 0)).toBe(true));
      await eventually(() => expect(everything).toHaveLength(24));
      await Promise.all([all.stop(), f.sub.stop()]);
      expect(f.seen.map((e) => (e.data as { n: number }).n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      // (a reader can still fall outside the run in a rare interleaving of reads, and then asks the store itself:
      // without the shared page, every one of its pages was its own query, 17 here)
      expect(own.mock.calls.length - before).toBeLessThanOrEqual(2);
    } finally {
      own.mockRestore();
      await store.close();
      await db.drop();
    }
  });

  it('a ProjectionRunner of one filtered projection releases a waiter for an event it does not take, and writes nothing for it', async () => {
    const db = await createTestDatabase('es_filtered_runner', { migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS] });
    const store = new PostgresEventStore(db.pool, 60_000); // only NOTIFY and pokes wake it
    const applied: RecordedEvent[] = [];
    const runner = new ProjectionRunner(store, db.pool, {
      name: 'mine', tables: [], filter: { eventTypes: ['Mine'] },
      async apply(_tx, e) { applied.push(e); },
    });
    const subscribe = jest.spyOn(store, 'subscribe');
    try {
      await runner.start();
      // the store is asked for the projection's events only, and to report what it skips
      expect(subscribe.mock.calls[0][0].filter).toEqual({ eventTypes: ['Mine'] });
      expect(subscribe.mock.calls[0][0].onSkipped).toEqual(expect.any(Function));
      const { wanted, last } = await seed(store, 3);
      await runner.waitFor(last, 5_000); // the last event is an `Other`: the skip must release the waiter
      expect(applied.map((e) => (e.data as { n: number }).n)).toEqual(wanted);
      expect(comparePositions(runner.checkpoint, last)).toBeGreaterThanOrEqual(0);
      // the stored checkpoint follows the skip too (within about a second), for whoever reads it
      await eventually(async () => {
        const { rows } = await db.pool.query<{ commit_pos: string; prepare_pos: string }>("select commit_pos, prepare_pos from es.checkpoints where name = 'mine'");
        expect(rows[0]).toEqual({ commit_pos: last.commit.toString(), prepare_pos: last.prepare.toString() });
      }, { timeoutMs: 5_000 });
    } finally {
      await runner.stop();
      await store.close();
      await db.drop();
    }
  });
});
