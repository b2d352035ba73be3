import { createHash, randomUUID } from 'node:crypto';
import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { CommandHandler, Decision, Evolver } from './command-handler';
import { StreamRange, WrongExpectedRevisionError } from './event-store.port';
import { EVENT_STORE_MIGRATIONS, PostgresEventStore } from './postgres.event-store';

type Ev =
  | { type: 'PointsEarned'; data: { points: number; command: string } }
  | { type: 'PointsRedeemed'; data: { points: number; command: string } };
interface Balance { points: number; commands: string[] }

const balance: Evolver<Balance, Ev> = {
  initialState: () => ({ points: 0, commands: [] }),
  evolve: (s, e) => ({
    points: s.points + (e.type === 'PointsEarned' ? e.data.points : -e.data.points),
    commands: [...s.commands, e.data.command],
  }),
};

const earn = (points: number, command: string = randomUUID()) => (): Decision<Ev, string> =>
  ({ events: [{ type: 'PointsEarned', data: { points, command } }], result: command });

/** Redeem only what the balance allows: the decision must be taken on fresh state after every conflict. */
const redeem = (points: number, command: string = randomUUID()) => (s: Balance): Decision<Ev, 'redeemed' | 'insufficient'> =>
  s.points >= points
    ? { events: [{ type: 'PointsRedeemed', data: { points, command } }], result: 'redeemed' }
    : { events: [], result: 'insufficient' };

const uuidFrom = (key: string): string => {
  const h = createHash('sha256').update(key).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

describe('CommandHandler (PostgreSQL)', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;

  beforeAll(async () => {
    db = await createTestDatabase('command_handler', { migrations: EVENT_STORE_MIGRATIONS, poolMax: 30 });
    store = new PostgresEventStore(db.pool, 50);
  });
  afterAll(async () => {
    await store.close();
    await db.drop();
  });

  it('loads, decides, appends with the expected revision and folds its own events', async () => {
    const handler = new CommandHandler(store);
    const s = `member-${randomUUID()}`;
    const first = await handler.handle(s, balance, earn(100, 'c1'));
    expect(first).toMatchObject({ result: 'c1', revision: 0n, state: { points: 100, commands: ['c1'] } });
    expect(first.append?.nextRevision).toBe(0n);
    const second = await handler.handle(s, balance, redeem(30, 'c2'));
    expect(second).toMatchObject({ result: 'redeemed', revision: 1n, state: { points: 70 } });
    const refused = await handler.handle(s, balance, redeem(500, 'c3'));
    expect(refused).toMatchObject({ result: 'insufficient', revision: 1n, append: null });
    const read = await store.readStream(s);
    expect(read.map((e) => [e.revision, e.type])).toEqual([[0n, 'PointsEarned'], [1n, 'PointsRedeemed']]);
    // a fresh handler (another process) folds the same state from the stream
    expect(await new CommandHandler(store).load(s, balance)).toEqual({ state: second.state, revision: 1n });
  });

  it('20 concurrent commands on one stream from 20 processes: all succeed after retries, revisions contiguous', async () => {
    const s = `member-${randomUUID()}`;
    const handlers = Array.from({ length: 20 }, () => new CommandHandler(store));
    const results = await Promise.all(handlers.map((h, i) => h.handle(s, balance, earn(i + 1, `cmd-${i}`))));
    const read = await store.readStream(s);
    expect(read.map((e) => e.revision)).toEqual(Array.from({ length: 20 }, (_, i) => BigInt(i)));
    expect(read.map((e) => (e.data as { command: string }).command).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `cmd-${i}`).sort());
    expect(results.map((r) => r.revision).sort((a, b) => Number(a) - Number(b))).toEqual(read.map((e) => e.revision));
    // each handler's state is the fold of the stream up to its own append
    for (const r of results) expect(r.state.commands).toEqual(read.slice(0, Number(r.revision) + 1).map((e) => (e.data as { command: string }).command));
    expect((await new CommandHandler(store).load(s, balance)).state.points).toBe(210);
  });

  it('20 concurrent commands on one stream in one process are serialised without conflicts', async () => {
    const s = `member-${randomUUID()}`;
    const handler = new CommandHandler(store, 1000, 0); // no retries allowed: the in-process mutex must prevent conflicts
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => handler.handle(s, balance, earn(1, `cmd-${i}`))));
    expect(results.map((r) => r.revision).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 20 }, (_, i) => BigInt(i)));
    expect((await store.readStream(s)).map((e) => e.revision)).toEqual(Array.from({ length: 20 }, (_, i) => BigInt(i)));
  });

  it('retries decide on fresh state: concurrent redemptions never overdraw', async () => {
    const s = `member-${randomUUID()}`;
    await new CommandHandler(store).handle(s, balance, earn(100));
    const handlers = Array.from({ length: 20 }, () => new CommandHandler(store));
    const results = await Promise.all(handlers.map((h) => h.handle(s, balance, redeem(10))));
    expect(results.filter((r) => r.result === 'redeemed')).toHaveLength(10);
    expect(results.filter((r) => r.result === 'insufficient')).toHaveLength(10);
    expect((await new CommandHandler(store).load(s, balance)).state.points).toBe(0);
  });

  it('a cached state picks up events other processes appended since', async () => {
    const s = `member-${randomUUID()}`;
    const a = new CommandHandler(store);
    const b = new CommandHandler(store);
    await a.handle(s, balance, earn(10, 'a1'));
    await b.handle(s, balance, earn(20, 'b1'));
    await b.handle(s, balance, earn(30, 'b2'));
    const next = await a.handle(s, balance, earn(1, 'a2'));
    expect(next.state).toEqual({ points: 61, commands: ['a1', 'b1', 'b2', 'a2'] });
    expect(next.revision).toBe(3n);
  });

  it('a replayed command with deterministic event ids appends nothing and folds nothing twice', async () => {
    const s = `member-${randomUUID()}`;
    const handler = new CommandHandler(store);
    await handler.handle(s, balance, earn(5, 'before'));
    const replayable = (): Decision<Ev, string> => ({
      events: [{ id: uuidFrom(`${s}/order-1/earn`), type: 'PointsEarned', data: { points: 50, command: 'order-1' } }],
      result: 'ok',
    });
    const first = await handler.handle(s, balance, replayable);
    const again = await handler.handle(s, balance, replayable);
    expect(again.append).toEqual(first.append);
    expect(again.state).toEqual({ points: 55, commands: ['before', 'order-1'] });
    expect(await store.readStream(s)).toHaveLength(2);
    // also from a process that never saw the first attempt
    const other = await new CommandHandler(store).handle(s, balance, replayable);
    expect(other.state).toEqual({ points: 55, commands: ['before', 'order-1'] });
  });

  it('a conflict re-reads only the tail after the cached revision, not the whole stream', async () => {
    const s = `member-${randomUUID()}`;
    const reads: bigint[] = [];
    class CountingStore extends PostgresEventStore {
      override readStream(streamId: string, fromRevision = 0n, maxCount?: number) {
        if (streamId === s) reads.push(fromRevision);
        return super.readStream(streamId, fromRevision, maxCount);
      }
    }
    const counting = new CountingStore(db.pool, 50);
    const handler = new CommandHandler(counting);
    await store.append(s, Array.from({ length: 50 }, (_, i) => ({ id: randomUUID(), type: 'PointsEarned', data: { points: 1, command: `seed-${i}` } })), 'no_stream');
    await handler.handle(s, balance, earn(1, 'warm'));
    reads.length = 0;
    let raced = false;
    const result = await handler.handle(s, balance, async (state) => {
      if (!raced) {
        raced = true; // another process appends between our load and our append, once
        await store.append(s, [{ id: randomUUID(), type: 'PointsEarned', data: { points: 1, command: 'other' } }], 'any');
      }
      return earn(1, 'mine')();
    });
    expect(result.revision).toBe(52n);
    expect(result.state.points).toBe(53);
    expect(reads.every((r) => r >= 51n)).toBe(true);
    await counting.close();
  });

  it('gives up after maxRetries conflicts with WrongExpectedRevisionError', async () => {
    const s = `member-${randomUUID()}`;
    const handler = new CommandHandler(store, 1000, 2);
    let decisions = 0;
    const alwaysRaced = async (): Promise<Decision<Ev, string>> => {
      decisions++;
      // someone else appends between our load and our append, every time
      await store.append(s, [{ id: randomUUID(), type: 'PointsEarned', data: { points: 1, command: 'other' } }], 'any');
      return { events: [{ type: 'PointsEarned', data: { points: 1, command: 'mine' } }], result: 'never' };
    };
    await expect(handler.handle(s, balance, alwaysRaced)).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    expect(decisions).toBe(3);
    expect((await store.readStream(s)).every((e) => (e.data as { command: string }).command === 'other')).toBe(true);
  });

  describe('handleFolding (a batch of steps folded in place as they are decided)', () => {
    /** An evolver that mutates its state, as the member aggregate's does. */
    const mutable: Evolver<Balance, Ev> = {
      initialState: () => ({ points: 0, commands: [] }),
      evolve: (st, e) => {
        st.points += e.type === 'PointsEarned' ? e.data.points : -e.data.points;
        st.commands.push(e.data.command);
        return st;
      },
    };
    /** Redeems each amount the balance allows at that step, folding each step before deciding the next. */
    const steps = (amounts: number[], tag: string) => (st: Balance): Decision<Ev, string[]> => {
      const events: Ev[] = [];
      const results: string[] = [];
      amounts.forEach((points, i) => {
        if (st.points < points) return void results.push('insufficient');
        const e: Ev = { type: 'PointsRedeemed', data: { points, command: `${tag}-${i}` } };
        mutable.evolve(st, e);
        events.push(e);
        results.push('redeemed');
      });
      return { events, result: results };
    };

    it('each step sees the steps before it; one append; the folded state is what a fresh fold finds', async () => {
      const handler = new CommandHandler(store);
      const s = `member-${randomUUID()}`;
      await handler.handle(s, mutable, earn(100, 'seed'));
      const out = await handler.handleFolding(s, mutable, steps([60, 60, 30], 'b'));
      expect(out.result).toEqual(['redeemed', 'insufficient', 'redeemed']);
      expect(out).toMatchObject({ revision: 2n, state: { points: 10, commands: ['seed', 'b-0', 'b-2'] } });
      expect(await new CommandHandler(store).load(s, mutable)).toEqual({ state: { points: 10, commands: ['seed', 'b-0', 'b-2'] }, revision: 2n });
      expect(await handler.load(s, mutable)).toEqual({ state: { points: 10, commands: ['seed', 'b-0', 'b-2'] }, revision: 2n });
    });

    it('another process appending first: the steps are decided again on the stream as it is, nothing unwritten stays cached', async () => {
      const handler = new CommandHandler(store);
      const other = new CommandHandler(store);
      const s = `member-${randomUUID()}`;
      await handler.handle(s, mutable, earn(100, 'seed'));
      let calls = 0;
      const out = await handler.handleFolding(s, mutable, async (st, rev) => {
        calls += 1;
        // the first time, another process redeems 50 between our read and our append
        if (calls === 1) await other.handle(s, mutable, redeem(50, 'elsewhere'));
        return steps([40, 40], `try${calls}`)(st);
      });
      expect(calls).toBe(2);
      expect(out.result).toEqual(['redeemed', 'insufficient']);
      expect(out.state).toEqual({ points: 10, commands: ['seed', 'elsewhere', 'try2-0'] });
      expect(await handler.load(s, mutable)).toEqual(await new CommandHandler(store).load(s, mutable));
    });

    it('a step failing after others were folded: nothing is appended and the cached state is dropped', async () => {
      const handler = new CommandHandler(store);
      const s = `member-${randomUUID()}`;
      await handler.handle(s, mutable, earn(100, 'seed'));
      await expect(handler.handleFolding(s, mutable, (st) => {
        steps([30], 'half')(st);
        throw new Error('fault in the middle of a batch');
      })).rejects.toThrow('fault in the middle');
      expect(await handler.load(s, mutable)).toEqual({ state: { points: 100, commands: ['seed'] }, revision: 0n });
    });
  });

  it('warm() reads many cold streams in one read; their commands then decide without reading, and a stale warm state still conflicts and retries', async () => {
    const streams = [`w-${randomUUID()}`, `w-${randomUUID()}`, `w-${randomUUID()}`];
    const writer = new CommandHandler(store);
    for (const [k, s] of streams.entries()) for (let i = 0; i <= k; i++) await writer.handle(s, balance, earn(10));
    const reads: string[] = [];
    const counting = new Proxy(store, {
      get: (t, p) => (p === 'readStreams' ? (r: StreamRange[]) => { reads.push(`many:${r.length}`); return t.readStreams(r); }
        : p === 'readStream' ? (id: string, ...rest: unknown[]) => { reads.push(`one:${id}`); return (t.readStream as (...a: unknown[]) => unknown)(id, ...rest); }
        : (t as never)[p]),
    }) as PostgresEventStore;
    const cold = new CommandHandler(counting);
    await cold.warm([...streams, streams[0]], balance);
    expect(reads).toEqual(['many:3']);
    // another process appends to the second stream after the warm read: the warm state is stale
    await writer.handle(streams[1], balance, earn(5));
    const out = await Promise.all(streams.map((s) => cold.handle(s, balance, redeem(10))));
    expect(out.map((o) => o.result)).toEqual(['redeemed', 'redeemed', 'redeemed']);
    expect(out.map((o) => o.state.points)).toEqual([0, 15, 20]);
    // the two in-step streams decided on the warm state; only the stale one read its tail (after a conflict)
    expect(reads.filter((r) => r.startsWith('one:'))).toEqual([`one:${streams[1]}`]);
  });
});
