/**
 * The event store contract (architecture.md "Streams"): one suite every adapter must pass.
 * Run it from an adapter's *.int-spec.ts with runEventStoreContract(name, makeStore).
 *
 * Every test writes to streams under its own random prefix and reads $all from the head it saw
 * before writing, so the suite also runs against a shared, non-empty server (EventStoreDB).
 * Not exported from index.ts: it needs Jest's globals.
 */
import { randomUUID } from 'node:crypto';
import { eventually, gate, sleep } from '@loyalty/testing';
import {
  AppendResult, EventStore, NewEvent, Position, RecordedEvent, START, Subscription, SubscriptionFilter,
  WrongExpectedRevisionError, comparePositions,
} from './event-store.port';

export interface ContractHarness {
  store: EventStore;
  cleanup(): Promise<void>;
  /**
   * A second store over the same data whose appends write their events, then await `beforeCommit`
   * before committing. Adapters whose global positions are handed out before commit (PostgreSQL)
   * must provide it; the out-of-order-commit test then parks transactions and commits them in an
   * order the test chooses. Without it (EventStoreDB: one writer orders the log) that test runs
   * the same checks over plain concurrent appends.
   */
  storeWithDelayedCommit?: (beforeCommit: () => Promise<void>) => EventStore;
}

const ev = (type: string, data: unknown = { n: type }, metadata?: NewEvent['metadata']): NewEvent =>
  ({ id: randomUUID(), type, data, metadata });

const ids = (events: { id: string }[]): string[] => events.map((e) => e.id);
const types = (events: { type: string }[]): string[] => events.map((e) => e.type);

const expectStrictlyIncreasing = (events: RecordedEvent[]): void => {
  for (let i = 1; i < events.length; i++) {
    if (comparePositions(events[i - 1].position, events[i].position) >= 0) {
      throw new Error(`positions not increasing at ${i}: ${String(events[i - 1].position.commit)}:${String(events[i - 1].position.prepare)} then ${String(events[i].position.commit)}:${String(events[i].position.prepare)}`);
    }
  }
};

const expectConflict = async (p: Promise<unknown>, streamId: string, actual?: bigint | 'no_stream'): Promise<WrongExpectedRevisionError> => {
  let error: unknown;
  try {
    await p;
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(WrongExpectedRevisionError);
  const w = error as WrongExpectedRevisionError;
  expect(w.streamId).toBe(streamId);
  if (actual !== undefined) expect(w.actual).toBe(actual);
  return w;
};

interface Collector { seen: RecordedEvent[]; errors: unknown[]; batches: number; sub: Subscription }
const collect = (store: EventStore, from: Position, filter?: SubscriptionFilter, batchSize?: number): Collector => {
  const c = { seen: [] as RecordedEvent[], errors: [] as unknown[], batches: 0 } as Collector;
  c.sub = store.subscribe({
    from, filter, batchSize,
    onEvents: async (events) => { c.batches++; c.seen.push(...events); },
    onError: (e) => c.errors.push(e),
  });
  return c;
};

export const runEventStoreContract = (name: string, makeStore: () => Promise<ContractHarness>): void => {
  describe(`EventStore contract: ${name}`, () => {
    let h: ContractHarness;
    let store: EventStore;
    const run = `c${randomUUID().slice(0, 8)}`;
    let n = 0;
    /** A fresh stream-name prefix per test, e.g. `c1a2b3c4d-7-`. */
    const prefix = (): string => `${run}-${++n}-`;
    const subs: Subscription[] = [];
    const track = (c: Collector): Collector => { subs.push(c.sub); return c; };

    beforeAll(async () => {
      h = await makeStore();
      store = h.store;
    });
    afterEach(async () => {
      await Promise.all(subs.splice(0).map((s) => s.stop()));
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    describe('append with an expected revision', () => {
      it('no_stream creates the stream at revision 0 and then conflicts', async () => {
        const s = `${prefix()}member-1`;
        const r = await store.append(s, [ev('Enrolled')], 'no_stream');
        expect(r.nextRevision).toBe(0n);
        await expectConflict(store.append(s, [ev('Enrolled')], 'no_stream'), s, 0n);
        expect(await store.readStream(s)).toHaveLength(1);
      });

      it('an exact revision appends after it; several events get contiguous revisions', async () => {
        const s = `${prefix()}member-1`;
        await store.append(s, [ev('A')], 'no_stream');
        const r = await store.append(s, [ev('B'), ev('C'), ev('D')], 0n);
        expect(r.nextRevision).toBe(3n);
        const read = await store.readStream(s);
        expect(read.map((e) => e.revision)).toEqual([0n, 1n, 2n, 3n]);
        expect(types(read)).toEqual(['A', 'B', 'C', 'D']);
        expect(r.position).toEqual(read[3].position);
        expectStrictlyIncreasing(read);
      });

      it('any appends to a new stream and to an existing one', async () => {
        const s = `${prefix()}member-1`;
        expect((await store.append(s, [ev('A')], 'any')).nextRevision).toBe(0n);
        expect((await store.append(s, [ev('B'), ev('C')], 'any')).nextRevision).toBe(2n);
        expect(types(await store.readStream(s))).toEqual(['A', 'B', 'C']);
      });

      it('a stale revision fails with WrongExpectedRevisionError and writes nothing', async () => {
        const s = `${prefix()}member-1`;
        await store.append(s, [ev('A'), ev('B'), ev('C')], 'no_stream');
        const w = await expectConflict(store.append(s, [ev('X')], 0n), s, 2n);
        expect(w.expected).toBe(0n);
        await expectConflict(store.append(s, [ev('X')], 5n), s, 2n);
        expect(types(await store.readStream(s))).toEqual(['A', 'B', 'C']);
      });

      it('an exact revision on a stream that does not exist fails with actual no_stream', async () => {
        const s = `${prefix()}member-1`;
        await expectConflict(store.append(s, [ev('X')], 0n), s, 'no_stream');
        expect(await store.readStream(s)).toEqual([]);
      });
    });

    describe('reading', () => {
      it('readStream returns events from a revision (inclusive), honours maxCount, and keeps data and metadata', async () => {
        const s = `${prefix()}member-1`;
        const meta = { causationId: randomUUID(), correlationId: randomUUID(), idempotencyKey: 'k-1', actor: 'test' };
        const first = ev('PointsEarned', { points: 120, lines: [{ sku: 'a', qty: 2 }], note: 'ünïcødé' }, meta);
        await store.append(s, [first, ev('B'), ev('C'), ev('D'), ev('E')], 'no_stream');
        const all = await store.readStream(s);
        expect(all[0]).toMatchObject({ id: first.id, streamId: s, revision: 0n, type: 'PointsEarned', data: first.data });
        expect(all[0].metadata).toMatchObject(meta);
        expect(all[0].createdAt).toBeInstanceOf(Date);
        expect((await store.readStream(s, 2n)).map((e) => e.revision)).toEqual([2n, 3n, 4n]);
        expect(types(await store.readStream(s, 1n, 2))).toEqual(['B', 'C']);
        expect(await store.readStream(s, 5n)).toEqual([]);
        expect(await store.readStream(`${prefix()}missing`)).toEqual([]);
      });

      it('readAll returns every stream in global (append) order, after a position (exclusive), with filters', async () => {
        const p = prefix();
        const before = await store.headPosition();
        const order: [string, NewEvent][] = [
          [`${p}member-1`, ev('Enrolled')], [`${p}order-9`, ev('OrderPlaced')], [`${p}member-1`, ev('PointsEarned')],
          [`${p}member-2`, ev('Enrolled')], [`${p}order-9`, ev('OrderPaid')], [`${p}member-1`, ev('PointsRedeemed')],
        ];
        for (const [s, e] of order) await store.append(s, [e], 'any');
        const mine: SubscriptionFilter = { streamPrefixes: [p] };
        // eventually: a reader may trail a commit while older transactions are open (the PostgreSQL watermark)
        const all = await eventually(async () => {
          const read = await store.readAll(before, 1000, mine);
          expect(ids(read)).toEqual(order.map(([, e]) => e.id));
          return read;
        });
        expect(all.map((e) => e.streamId)).toEqual(order.map(([s]) => s));
        expectStrictlyIncreasing(all);
        // exclusive paging
        const page = await store.readAll(all[1].position, 2, mine);
        expect(ids(page)).toEqual(ids(all.slice(2, 4)));
        expect(await store.readAll(all[5].position, 10, mine)).toEqual([]);
        // filters
        expect(types(await store.readAll(before, 1000, { streamPrefixes: [`${p}order-`] }))).toEqual(['OrderPlaced', 'OrderPaid']);
        expect(ids(await store.readAll(before, 1000, { streamPrefixes: [p], eventTypes: ['Enrolled'] })))
          .toEqual([order[0][1].id, order[3][1].id]);
        expect(ids(await store.readAll(before, 1000, { streamPrefixes: [`${p}order-`, `${p}member-2`] })))
          .toEqual([order[1][1].id, order[3][1].id, order[4][1].id]);
      });

      it('headPosition is the position of the newest event a reader can see', async () => {
        const p = prefix();
        const r1 = await store.append(`${p}a`, [ev('A')], 'no_stream');
        await eventually(async () => expect(comparePositions(await store.headPosition(), r1.position)).toBeGreaterThanOrEqual(0));
        const r2 = await store.append(`${p}b`, [ev('B'), ev('C')], 'no_stream');
        const head = await eventually(async () => {
          const h = await store.headPosition();
          expect(h).toEqual(r2.position);
          return h;
        });
        expect(comparePositions(head, r1.position)).toBeGreaterThan(0);
        expect(await store.readAll(head, 10, { streamPrefixes: [p] })).toEqual([]);
        expect(comparePositions(head, START)).toBeGreaterThan(0);
      });
    });

    describe('subscriptions', () => {
      it('catch-up from a position, then live: events appended after subscribing arrive, in order, once', async () => {
        const p = prefix();
        const before = await store.headPosition();
        const early = [ev('E1'), ev('E2'), ev('E3')];
        await store.append(`${p}a`, early.slice(0, 2), 'no_stream');
        await store.append(`${p}b`, early.slice(2), 'no_stream');
        const c = track(collect(store, before, { streamPrefixes: [p] }));
        await eventually(() => expect(ids(c.seen)).toEqual(ids(early)));
        const late = [ev('L1'), ev('L2'), ev('L3')];
        await store.append(`${p}a`, [late[0]], 1n);
        await store.append(`${p}c`, late.slice(1), 'no_stream');
        await eventually(() => expect(ids(c.seen)).toEqual(ids([...early, ...late])));
        expectStrictlyIncreasing(c.seen);
        expect(c.errors).toEqual([]);
        // a stopped subscription delivers nothing more
        await c.sub.stop();
        await store.append(`${p}a`, [ev('After')], 'any');
        await sleep(200);
        expect(c.seen).toHaveLength(6);
      });

      it('a subscription delivers only what its filter matches', async () => {
        const p = prefix();
        const before = await store.headPosition();
        const c = track(collect(store, before, { streamPrefixes: [`${p}member-`], eventTypes: ['PointsEarned'] }));
        const wanted = ev('PointsEarned');
        await store.append(`${p}order-1`, [ev('PointsEarned')], 'no_stream');
        await store.append(`${p}member-1`, [ev('Enrolled'), wanted], 'no_stream');
        const marker = ev('PointsEarned');
        await store.append(`${p}member-2`, [marker], 'no_stream');
        await eventually(() => expect(ids(c.seen)).toEqual([wanted.id, marker.id]));
      });

      it('resumes from a checkpoint position without repeats or gaps', async () => {
        const p = prefix();
        const mine = { streamPrefixes: [p] };
        const before = await store.headPosition();
        const written: NewEvent[] = [];
        for (let i = 0; i < 7; i++) {
          const e = ev(`E${i}`);
          written.push(e);
          await store.append(`${p}s${i % 3}`, [e], 'any');
        }
        // first consumer stops after 4 events and keeps the position of the last one it handled
        const firstSeen: RecordedEvent[] = [];
        let checkpoint: Position = before;
        const stopAt = gate();
        const first = store.subscribe({
          from: before, filter: mine, batchSize: 2,
          onEvents: async (events) => {
            if (firstSeen.length >= 4) return; // stopping: pretend the process died before handling these
            firstSeen.push(...events);
            checkpoint = events[events.length - 1].position;
            if (firstSeen.length >= 4) stopAt.open();
          },
        });
        subs.push(first);
        await stopAt.promise;
        await first.stop();
        expect(ids(firstSeen)).toEqual(ids(written.slice(0, 4)));
        for (let i = 7; i < 10; i++) {
          const e = ev(`E${i}`);
          written.push(e);
          await store.append(`${p}s${i % 3}`, [e], 'any');
        }
        const second = track(collect(store, checkpoint, mine, 3));
        await eventually(() => expect(ids(second.seen)).toEqual(ids(written.slice(4))));
        expect(ids([...firstSeen, ...second.seen])).toEqual(ids(written));
      });

      it('redelivers a batch whose handler failed (at-least-once), then moves on', async () => {
        const p = prefix();
        const before = await store.headPosition();
        const written = [ev('A'), ev('B'), ev('C')];
        await store.append(`${p}a`, written, 'no_stream');
        const handled: RecordedEvent[] = [];
        const errors: unknown[] = [];
        let failures = 0;
        subs.push(store.subscribe({
          from: before, filter: { streamPrefixes: [p] },
          onEvents: async (events) => {
            if (failures++ === 0) throw new Error('projection failed once');
            handled.push(...events);
          },
          onError: (e) => errors.push(e),
        }));
        await eventually(() => expect(ids(handled)).toEqual(ids(written)));
        expect(errors.length).toBeGreaterThanOrEqual(1);
        expect((errors[0] as Error).message).toBe('projection failed once');
      });
    });

    describe('idempotence and concurrency', () => {
      it('appending event ids already written is a no-op that returns the same result', async () => {
        const s = `${prefix()}member-1`;
        const batch = [ev('A'), ev('B')];
        const r1 = await store.append(s, batch, 'no_stream');
        const r2 = await store.append(s, batch, 'no_stream');
        expect(r2).toEqual(r1);
        const r3 = await store.append(s, batch, 'any');
        expect(r3).toEqual(r1);
        const read = await store.readStream(s);
        expect(ids(read)).toEqual(ids(batch));
        // a retry after the stream moved on still appends nothing
        await store.append(s, [ev('C')], 1n);
        expect(await store.append(s, batch, 'no_stream')).toEqual(r1);
        expect(types(await store.readStream(s))).toEqual(['A', 'B', 'C']);
      });

      it('concurrent retries of the same append all succeed with one copy written', async () => {
        const s = `${prefix()}member-1`;
        const batch = [ev('A'), ev('B')];
        const results = await Promise.all(Array.from({ length: 8 }, () => store.append(s, batch, 'no_stream')));
        for (const r of results) expect(r).toEqual(results[0]);
        expect(results[0].nextRevision).toBe(1n);
        expect(ids(await store.readStream(s))).toEqual(ids(batch));
      });

      it('concurrent appends at one expected revision: exactly one wins', async () => {
        const s = `${prefix()}member-1`;
        await store.append(s, [ev('Start')], 'no_stream');
        for (const expected of [0n, 1n, 2n]) {
          const attempts = Array.from({ length: 10 }, (_, i) => ev(`Try${i}`));
          const settled = await Promise.allSettled(attempts.map((e) => store.append(s, [e], expected)));
          const won = settled.filter((r): r is PromiseFulfilledResult<AppendResult> => r.status === 'fulfilled');
          expect(won).toHaveLength(1);
          expect(won[0].value.nextRevision).toBe(expected + 1n);
          for (const r of settled) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(WrongExpectedRevisionError);
        }
        const read = await store.readStream(s);
        expect(read.map((e) => e.revision)).toEqual([0n, 1n, 2n, 3n]);
      });

      it('concurrent no_stream appends to a new stream: exactly one wins', async () => {
        const s = `${prefix()}member-1`;
        const settled = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => store.append(s, [ev(`Try${i}`)], 'no_stream')));
        expect(settled.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        for (const r of settled) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(WrongExpectedRevisionError);
        expect(await store.readStream(s)).toHaveLength(1);
      });

      it('concurrent appends with any, even to a new stream, all succeed with contiguous revisions', async () => {
        const s = `${prefix()}member-1`;
        const results = await Promise.all(Array.from({ length: 10 }, (_, i) => store.append(s, [ev(`Any${i}`)], 'any')));
        expect(results.map((r) => r.nextRevision).sort((a, b) => (a < b ? -1 : 1))).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i)));
        expect((await store.readStream(s)).map((e) => e.revision)).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i)));
      });
    });

    describe('global order under concurrent commits', () => {
      const title = 'appends whose commits are delayed out of order are never skipped: readers only ever see a prefix of the final order';
      it(title, async () => {
        const p = prefix();
        const mine = { streamPrefixes: [p] };
        const before = await store.headPosition();
        const live = track(collect(store, before, mine));
        const snapshots: { events: RecordedEvent[]; head: Position }[] = [];
        const look = async (): Promise<void> => {
          const head = await store.headPosition(); // first: the read after it sees at least as much
          snapshots.push({ head, events: await store.readAll(before, 1000, mine) });
        };
        const A = [ev('A1'), ev('A2')], D = [ev('D1')], B = [ev('B1')], C = [ev('C1'), ev('C2')];
        let rA: AppendResult, rD: AppendResult, rB: AppendResult;

        if (h.storeWithDelayedCommit) {
          // A and D take their positions first but commit late, D before A; B commits at once.
          const parkedA = gate(), releaseA = gate(), parkedD = gate(), releaseD = gate();
          const slowA = h.storeWithDelayedCommit(async () => { parkedA.open(); await releaseA.promise; });
          const slowD = h.storeWithDelayedCommit(async () => { parkedD.open(); await releaseD.promise; });
          const pA = slowA.append(`${p}a`, A, 'no_stream');
          await parkedA.promise;
          const pD = slowD.append(`${p}d`, D, 'no_stream');
          await parkedD.promise;
          rB = await store.append(`${p}b`, B, 'no_stream');
          await look();
          await sleep(250); // long enough for a subscriber to run past A and D if it could
          await look();
          releaseD.open();
          rD = await pD;
          await sleep(250);
          await look();
          releaseA.open();
          rA = await pA;
          // while parked, nothing that committed after A took its positions was visible below them
          for (const s of snapshots.slice(0, 3)) expect(ids(s.events)).not.toContain(A[0].id);
        } else {
          [rA, rD, rB] = await Promise.all([
            store.append(`${p}a`, A, 'no_stream'), store.append(`${p}d`, D, 'no_stream'), store.append(`${p}b`, B, 'no_stream'),
          ]);
          await look();
        }
        await store.append(`${p}c`, C, 'no_stream');
        await look();

        const expectedIds = ids([...A, ...D, ...B, ...C]);
        await eventually(() => expect(live.seen).toHaveLength(expectedIds.length), { timeoutMs: 20_000 });
        const final = await eventually(async () => {
          const read = await store.readAll(before, 1000, mine);
          expect(read).toHaveLength(expectedIds.length);
          return read;
        });
        expect([...ids(final)].sort()).toEqual([...expectedIds].sort());
        expectStrictlyIncreasing(final);
        // the subscriber saw exactly the final order: nothing skipped, nothing repeated
        expect(ids(live.seen)).toEqual(ids(final));
        // every earlier look was a prefix of the final order, and covered everything up to the head seen before it
        for (const s of snapshots) {
          expect(ids(s.events)).toEqual(ids(final.slice(0, s.events.length)));
          const atOrBelowHead = final.filter((e) => comparePositions(e.position, s.head) <= 0);
          expect(ids(s.events.slice(0, atOrBelowHead.length))).toEqual(ids(atOrBelowHead));
        }
        // the positions appends reported are where readers find their last events
        const byId = new Map(final.map((e) => [e.id, e.position]));
        expect(rA.position).toEqual(byId.get(A[1].id));
        expect(rD.position).toEqual(byId.get(D[0].id));
        expect(rB.position).toEqual(byId.get(B[0].id));
        // events of one append stay together and in revision order
        const pos = (id: string): number => ids(final).indexOf(id);
        expect(pos(A[1].id)).toBe(pos(A[0].id) + 1);
        expect(pos(C[1].id)).toBe(pos(C[0].id) + 1);
      });
    });
  });
};
