import { randomUUID } from 'node:crypto';
import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { CommandHandler, Evolver } from './command-handler';
import { EVENT_STORE_MIGRATIONS, PostgresEventStore } from './postgres.event-store';
import { SNAPSHOT_MIGRATIONS, SnapshotStore, foldStream } from './snapshots';

/**
 * Persisted snapshots against PostgreSQL: a cold load (a new process) starts from the newest
 * snapshot and folds only the events after it, and ends in exactly the state a full fold gives;
 * a snapshot whose event is not in the stream any more (a wiped stream created again) is ignored.
 */
type Ev = { type: 'Earned'; data: { points: number; tag: string } };
interface State { points: number; byTag: Map<string, number>; order: string[]; last: { tag: string } | null; again: { tag: string } | null }

const evolver: Evolver<State, Ev> = {
  initialState: () => ({ points: 0, byTag: new Map(), order: [], last: null, again: null }),
  evolve: (s, e) => {
    s.points += e.data.points;
    s.byTag.set(e.data.tag, (s.byTag.get(e.data.tag) ?? 0) + e.data.points);
    s.order.push(e.data.tag);
    // a shared reference, as the member aggregate's indexes have: it must survive the snapshot
    s.last = { tag: e.data.tag };
    s.again = s.last;
    return s;
  },
  snapshot: { version: 'test-1', every: 10 },
};

describe('snapshots (PostgreSQL)', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let snapshots: SnapshotStore;

  beforeAll(async () => {
    db = await createTestDatabase('snapshots', { migrations: [...EVENT_STORE_MIGRATIONS, ...SNAPSHOT_MIGRATIONS] });
    store = new PostgresEventStore(db.pool, 50);
    snapshots = new SnapshotStore(db.pool);
  });
  afterAll(async () => {
    await store.close();
    await db.drop();
  });

  const rows = async (stream: string) =>
    (await db.pool.query<{ revision: string }>('select revision from es.snapshots where stream_id = $1 order by revision', [stream])).rows.map((r) => Number(r.revision));
  const settle = () => new Promise((r) => setTimeout(r, 200));
  // V8's deserializer builds its Maps in the main realm, not Jest's sandbox: compare their contents
  const plain = (s: State) => ({ ...s, byTag: [...s.byTag] });

  it('is taken as commands cross each multiple of `every` events; a cold load starts there and equals a full fold', async () => {
    const stream = `s-${randomUUID()}`;
    const writer = new CommandHandler(store, undefined, undefined, snapshots);
    for (let i = 0; i < 34; i++) {
      await writer.handle(stream, evolver, () => ({ events: [{ type: 'Earned' as const, data: { points: i + 1, tag: `t${i % 5}` } }], result: null }));
    }
    await settle();
    // after events 10, 20 and 30 (revisions 9, 19, 29); the two newest are kept
    expect(await rows(stream)).toEqual([19, 29]);

    const full = await foldStream(store, null, stream, evolver);
    const fromSnapshot = await foldStream(store, snapshots, stream, evolver);
    expect(fromSnapshot.folded).toBe(4); // revisions 30..33
    expect(full.folded).toBe(34);
    expect(plain(fromSnapshot.state)).toEqual(plain(full.state));
    expect(fromSnapshot.revision).toBe(33n);
    expect(fromSnapshot.state.points).toBe((34 * 35) / 2);
    expect(fromSnapshot.state.again).toBe(fromSnapshot.state.last);

    // a new process loads from the snapshot and decides on the right state
    const cold = new CommandHandler(store, undefined, undefined, snapshots);
    const coldLoad = await cold.load(stream, evolver);
    expect(coldLoad.revision).toBe(33n);
    expect(plain(coldLoad.state)).toEqual(plain(full.state));
    // up to an earlier event: the newest snapshot at or below it
    const upTo = await foldStream(store, snapshots, stream, evolver, 25n);
    expect(upTo.folded).toBe(6); // 20..25 after the snapshot at 19
    expect(plain(upTo.state)).toEqual(plain((await foldStream(store, null, stream, evolver, 25n)).state));
  });

  it('a snapshot of a stream that is no longer the same (its event id differs) is ignored', async () => {
    const stream = `s-${randomUUID()}`;
    const writer = new CommandHandler(store, undefined, undefined, snapshots);
    for (let i = 0; i < 12; i++) await writer.handle(stream, evolver, () => ({ events: [{ type: 'Earned' as const, data: { points: 1, tag: 'a' } }], result: null }));
    await settle();
    expect(await rows(stream)).toEqual([9]);
    // the stream is wiped and written again under the same id (other events, other ids)
    await db.pool.query('delete from es.events where stream_id = $1', [stream]);
    await db.pool.query('delete from es.streams where stream_id = $1', [stream]);
    for (let i = 0; i < 11; i++) await store.append(stream, [{ id: randomUUID(), type: 'Earned', data: { points: 100, tag: 'b' } }], i === 0 ? 'no_stream' : BigInt(i - 1));
    const loaded = await foldStream(store, snapshots, stream, evolver);
    expect(loaded.folded).toBe(11);
    expect(loaded.state.points).toBe(1_100);
    expect([...loaded.state.byTag.keys()]).toEqual(['b']);
  });
});
