import { randomUUID } from 'node:crypto';
import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { CommandHandler, Evolver } from './command-handler';
import { EVENT_STORE_MIGRATIONS, PostgresEventStore } from './postgres.event-store';
import { SNAPSHOT_MIGRATIONS, SnapshotStore, foldStream, foldStreams } from './snapshots';

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
  it('foldStreams folds many streams in one snapshot query and one read, each equal to its own foldStream', async () => {
    const writer = new CommandHandler(store, undefined, undefined, snapshots);
    const streams = [`s-${randomUUID()}`, `s-${randomUUID()}`, `s-${randomUUID()}`, `s-${randomUUID()}`];
    const lengths = [27, 5, 13, 0];
    for (let k = 0; k < streams.length; k++) {
      for (let i = 0; i < lengths[k]; i++) {
        await writer.handle(streams[k], evolver, () => ({ events: [{ type: 'Earned' as const, data: { points: (k + 1) * (i + 1), tag: `t${i % 3}` } }], result: null }));
      }
    }
    await settle();
    const wanted = [
      { streamId: streams[0], upTo: 26n }, // snapshot at 19, then 20..26
      { streamId: streams[0] + '-absent', upTo: 4n }, // no such stream
      { streamId: streams[1], upTo: 3n }, // no snapshot, part of the stream
      { streamId: streams[2], upTo: 12n }, // snapshot at 9 (every 10), then 10..12
      { streamId: streams[3], upTo: -1n }, // before the first event
    ];
    const reads: number[] = [];
    const counting = new Proxy(store, { get: (t, p) => (p === 'readStreams' ? (r: unknown[]) => { reads.push(r.length); return t.readStreams(r as never); } : (t as never)[p]) });
    const together = await foldStreams(counting as PostgresEventStore, snapshots, wanted, evolver);
    expect(reads).toEqual([4]); // one read for the four streams that may have events
    for (const w of wanted) {
      const alone = await foldStream(store, snapshots, w.streamId, evolver, w.upTo);
      const got = together.get(w.streamId)!;
      expect(got.revision).toEqual(alone.revision);
      expect(plain(got.state)).toEqual(plain(alone.state));
    }
    expect(together.get(streams[0])!.state.points).toBe((27 * 28) / 2);
    expect(together.get(streams[2])!.state.points).toBe(3 * (13 * 14) / 2);
    expect(together.get(streams[3])!.revision).toBe('no_stream');
    // a snapshot whose event is gone (the stream was written again) is ignored here too
    await db.pool.query('delete from es.events where stream_id = $1', [streams[2]]);
    await db.pool.query('delete from es.streams where stream_id = $1', [streams[2]]);
    for (let i = 0; i < 13; i++) await store.append(streams[2], [{ id: randomUUID(), type: 'Earned', data: { points: 7, tag: 'z' } }], i === 0 ? 'no_stream' : BigInt(i - 1));
    const again = await foldStreams(store, snapshots, [{ streamId: streams[2], upTo: 12n }], evolver);
    expect(again.get(streams[2])!.state.points).toBe(7 * 13);
    expect([...again.get(streams[2])!.state.byTag.keys()]).toEqual(['z']);
  });
  it('loads of the newest snapshots made side by side share a statement, and each caller gets its own state', async () => {
    const writer = new CommandHandler(store, undefined, undefined, snapshots);
    const a = `s-${randomUUID()}`;
    const b = `s-${randomUUID()}`;
    for (const [stream, n] of [[a, 12], [b, 23]] as const) {
      for (let i = 0; i < n; i++) await writer.handle(stream, evolver, () => ({ events: [{ type: 'Earned' as const, data: { points: 2, tag: 'x' } }], result: null }));
    }
    await settle();
    const statements: string[] = [];
    const query = db.pool.query.bind(db.pool);
    const spy = jest.spyOn(db.pool, 'query').mockImplementation(((q: string | { text: string }, ...rest: unknown[]) => {
      const text = typeof q === 'string' ? q : q.text;
      if (typeof text === 'string' && text.includes('es.snapshots')) statements.push(text);
      return (query as (...args: unknown[]) => unknown)(q, ...rest);
    }) as never);
    try {
      const [sa, sb, sa2, none] = await Promise.all([
        snapshots.load<State>(a, evolver.snapshot!), snapshots.load<State>(b, evolver.snapshot!),
        snapshots.load<State>(a, evolver.snapshot!), snapshots.load<State>(`s-${randomUUID()}`, evolver.snapshot!),
      ]);
      expect(sa!.revision).toBe(9n);
      expect(sb!.revision).toBe(19n);
      expect(sa2!.revision).toBe(9n);
      expect(none).toBeNull();
      expect(sa!.state.points).toBe(20);
      expect(sb!.state.points).toBe(40);
      // the stream asked for twice: two states, never one shared object evolved by two callers
      expect(sa2!.state).not.toBe(sa!.state);
      expect(plain(sa2!.state)).toEqual(plain(sa!.state));
      // a, b and the absent stream in one statement; the second ask for a in another
      expect(statements).toHaveLength(2);
    } finally {
      spy.mockRestore();
    }
  });
});
