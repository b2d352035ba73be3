import { randomUUID } from 'node:crypto';
import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { NewEvent, RecordedEvent } from './event-store.port';
import { EVENT_STORE_MIGRATIONS, PostgresEventStore } from './postgres.event-store';
import { PROJECTION_MIGRATIONS, Projection } from './projection-runner';
import { ProjectionHost, SharedFoldKind, sharedFold } from './projection-host';
import { SNAPSHOT_MIGRATIONS } from './snapshots';
import { StreamFold } from './stream-fold';

interface Tally { points: number; events: number }
type TallyEvent = { type: 'Earned'; data: { points: number } };

/** A counting evolver: how many evolves the process did, whoever asked. */
let evolves = 0;
const TALLY: SharedFoldKind<Tally, TallyEvent, number> = {
  key: 'tally-test',
  prefix: 'member-',
  evolver: {
    initialState: () => ({ points: 0, events: 0 }),
    evolve: (s, e) => { evolves++; return { points: s.points + e.data.points, events: s.events + 1 }; },
  },
  head: (s) => s.points,
  cacheName: 'tally_test_fold',
};

const earned = (points: number): NewEvent => ({ id: randomUUID(), type: 'Earned', data: { points } });

/** A read model that records, per event, the state before and after it as its fold saw them. */
const reader = (name: string, fold: StreamFold<Tally, TallyEvent, number>, seen: { id: string; before: number; after: number }[]): Projection => ({
  name,
  filter: { streamPrefixes: ['member-'] },
  tables: [],
  beforeBatch: (_tx, events) => fold.warm(events),
  async apply(_tx, e: RecordedEvent) {
    const { state, before } = await fold.advance(e);
    seen.push({ id: e.id, before, after: state.points });
  },
});

describe('ProjectionHost and the shared fold (PostgreSQL)', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;

  beforeEach(async () => {
    db = await createTestDatabase('projection_host', { migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS, ...SNAPSHOT_MIGRATIONS] });
    store = new PostgresEventStore(db.pool, 20);
    evolves = 0;
  });
  afterEach(async () => {
    await ProjectionHost.of(store, db.pool).stop();
    await store.close();
    await db.drop();
  });

  it('runs every module\'s read models in one runner, where a fold they share evolves each event once', async () => {
    const host = ProjectionHost.of(store, db.pool);
    expect(ProjectionHost.of(store, db.pool)).toBe(host);
    const fold = sharedFold(store, db.pool, TALLY);
    expect(sharedFold(store, db.pool, TALLY)).toBe(fold); // the second module gets the first one's fold
    const a: { id: string; before: number; after: number }[] = [];
    const b: { id: string; before: number; after: number }[] = [];
    const appliedToA: string[] = [];
    host.add([reader('host.a', fold, a)], { onApplied: (events) => appliedToA.push(...events.map((e) => e.id)) });
    host.add([reader('host.b', fold, b)]);
    const runner = await host.start();
    expect(await host.start()).toBe(runner); // every module gets the same runner
    expect(runner.names).toEqual(['host.a', 'host.b']);
    expect(() => host.add([reader('host.c', fold, [])])).toThrow(/after the host started/);

    await store.append('member-1', [earned(10), earned(5)], 'no_stream');
    const last = await store.append('member-2', [earned(7)], 'no_stream');
    await runner.waitFor(last.position);

    expect(a.map((x) => [x.before, x.after])).toEqual([[0, 10], [10, 15], [0, 7]]);
    expect(b).toEqual(a); // the second reader sees the same states, before and after each event
    expect(evolves).toBe(3); // once per event, not once per reader
    expect(appliedToA).toHaveLength(3);
    const { rows } = await db.pool.query<{ name: string }>('select name from es.checkpoints order by name');
    expect(rows.map((r) => r.name)).toEqual(['host.a', 'host.b']);
  });

  it('keeps a reader that is out of step with the fold correct: it folds the stream again', async () => {
    const fold = sharedFold(store, db.pool, TALLY);
    await store.append('member-1', [earned(1), earned(2), earned(3)], 'no_stream');
    const events = await store.readStream('member-1');
    // a reader moves the fold to the end; another then asks from the start (a rebuild, a lagging runner)
    for (const e of events) await fold.advance(e);
    const again = await fold.advance(events[1]);
    expect(again).toEqual({ state: { points: 3, events: 2 }, cold: true, before: 1 });
    // the fold is in step again from there
    expect(await fold.advance(events[2])).toEqual({ state: { points: 6, events: 3 }, cold: false, before: 3 });
  });
});
