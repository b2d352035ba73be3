import { randomUUID } from 'node:crypto';
import { PoolClient } from 'pg';
import { TestDatabase, createTestDatabase, eventually, sleep } from '@loyalty/testing';
import { SqlMigration } from '@loyalty/platform';
import { AppendResult, NewEvent, RecordedEvent, comparePositions } from './event-store.port';
import { EVENT_STORE_MIGRATIONS, PostgresEventStore } from './postgres.event-store';
import { PROJECTION_MIGRATIONS, Projection, ProjectionRunner } from './projection-runner';

const POINTS_TABLE = `
  create schema if not exists proj;
  create table proj.points (member_id text primary key, points bigint not null, events int not null);
  create table proj.applied (event_id uuid primary key, member_id text not null);`;
class TestPoints_1999999999999 extends SqlMigration {
  readonly name = 'TestPoints_1999999999999';
  protected readonly upSql = POINTS_TABLE;
  protected readonly downSql = 'drop schema proj cascade';
}

const earned = (points: number): NewEvent => ({ id: randomUUID(), type: 'PointsEarned', data: { points } });
const redeemed = (points: number): NewEvent => ({ id: randomUUID(), type: 'PointsRedeemed', data: { points } });

/** A balance projection over `member-` streams; `proj.applied` has a primary key, so applying an event twice fails loudly. */
const pointsProjection = (calls: RecordedEvent[] = [], poison?: { id: string | null }): Projection => ({
  name: 'points',
  filter: { streamPrefixes: ['member-'], eventTypes: ['PointsEarned', 'PointsRedeemed'] },
  tables: ['proj.points', 'proj.applied'],
  async apply(tx: PoolClient, e: RecordedEvent) {
    calls.push(e);
    const member = e.streamId.slice('member-'.length);
    const delta = (e.data as { points: number }).points * (e.type === 'PointsEarned' ? 1 : -1);
    await tx.query('insert into proj.applied (event_id, member_id) values ($1, $2)', [e.id, member]);
    await tx.query(
      `insert into proj.points (member_id, points, events) values ($1, $2, 1)
       on conflict (member_id) do update set points = proj.points.points + excluded.points, events = proj.points.events + 1`,
      [member, delta]);
    if (poison?.id === e.id) throw new Error('poison event');
  },
});

describe('ProjectionRunner (PostgreSQL)', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  const runners: ProjectionRunner[] = [];
  const stores: PostgresEventStore[] = [];

  const dump = async () => ({
    points: (await db.pool.query('select member_id, points::int, events from proj.points order by member_id')).rows,
    applied: (await db.pool.query('select event_id, member_id from proj.applied order by event_id')).rows,
  });
  const checkpoint = async () =>
    (await db.pool.query<{ commit_pos: string; prepare_pos: string }>("select commit_pos, prepare_pos from es.checkpoints where name = 'points'")).rows[0];
  const newRunner = (projection: Projection, s: PostgresEventStore = store): ProjectionRunner => {
    const r = new ProjectionRunner(s, db.pool, projection);
    runners.push(r);
    return r;
  };
  const newStore = (): PostgresEventStore => {
    const s = new PostgresEventStore(db.pool, 20);
    stores.push(s);
    return s;
  };

  beforeEach(async () => {
    db = await createTestDatabase('projection', {
      migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS, TestPoints_1999999999999],
    });
    store = newStore();
  });
  afterEach(async () => {
    await Promise.all(runners.splice(0).map((r) => r.stop()));
    await Promise.all(stores.splice(0).map((s) => s.close()));
    await db.drop();
  });

  it('writes its rows and its checkpoint in one transaction; waitFor resolves once they reflect an append', async () => {
    const runner = newRunner(pointsProjection());
    await runner.start();
    await store.append('member-1', [earned(100), earned(50)], 'no_stream');
    await store.append('order-1', [{ id: randomUUID(), type: 'OrderPlaced', data: {} }], 'no_stream');
    const last = await store.append('member-2', [earned(10), redeemed(3)], 'no_stream');
    await runner.waitFor(last.position);
    expect((await dump()).points).toEqual([
      { member_id: '1', points: 150, events: 2 },
      { member_id: '2', points: 7, events: 2 },
    ]);
    const cp = await checkpoint();
    expect({ commit: BigInt(cp.commit_pos), prepare: BigInt(cp.prepare_pos) }).toEqual(last.position);
    expect(runner.checkpoint).toEqual(last.position);
    // an event the projection ignores still moves the checkpoint, so a waiter for it is released
    const ignored = await store.append('order-1', [{ id: randomUUID(), type: 'OrderPaid', data: {} }], 0n);
    await runner.waitFor(ignored.position, 5000);
    // and a waiter for a position nobody reaches times out
    await expect(runner.waitFor({ commit: ignored.position.commit + 1000n, prepare: 0n }, 100)).rejects.toThrow(/did not reach/);
  });

  it('a batch that fails halfway leaves neither rows nor checkpoint behind, and is applied once when it succeeds', async () => {
    const poison = { id: null as string | null };
    const runner = newRunner(pointsProjection([], poison));
    await runner.start();
    const first = await store.append('member-1', [earned(5)], 'no_stream');
    await runner.waitFor(first.position);
    const before = await checkpoint();
    runner.lastError = null;
    await runner.stop(); // so the next three events arrive in one batch
    const bad = redeemed(1);
    poison.id = bad.id;
    const batch = await store.append('member-1', [earned(20), bad, earned(300)], 0n);
    const runner2 = newRunner(pointsProjection([], poison));
    await runner2.start();
    await eventually(() => expect((runner2.lastError as Error | null)?.message).toBe('poison event'));
    // earned(20) was written in the failed transaction before the poison event threw: rolled back with it
    expect((await dump()).points).toEqual([{ member_id: '1', points: 5, events: 1 }]);
    expect(await checkpoint()).toEqual(before);
    poison.id = null; // the bug is fixed; the subscription retries the same batch
    await runner2.waitFor(batch.position);
    expect((await dump()).points).toEqual([{ member_id: '1', points: 5 + 20 - 1 + 300, events: 4 }]);
    expect(runner2.lastError).toBeNull();
  });

  it('a rebuild produces identical rows and checkpoint, then carries on live', async () => {
    const runner = newRunner(pointsProjection());
    await runner.start();
    let last: AppendResult | undefined;
    for (let i = 0; i < 60; i++) {
      last = await store.append(`member-${i % 7}`, [i % 4 === 3 ? redeemed(i) : earned(i * 10)], 'any');
      if (i % 10 === 0) await store.append(`order-${i}`, [{ id: randomUUID(), type: 'OrderPlaced', data: {} }], 'any');
    }
    await runner.waitFor(last!.position);
    const live = await dump();
    const liveCheckpoint = await checkpoint();
    expect(live.applied).toHaveLength(60);
    await runner.rebuild();
    expect(await dump()).toEqual(live);
    expect(await checkpoint()).toEqual(liveCheckpoint);
    const more = await store.append('member-1', [earned(7)], 'any');
    await runner.waitFor(more.position);
    expect((await dump()).applied).toHaveLength(61);
  });

  it('a waiter registered before a rebuild is released only once the rebuilt rows reflect its position', async () => {
    const runner = newRunner(pointsProjection());
    await runner.start();
    for (let i = 0; i < 30; i++) await store.append(`member-${i % 5}`, [earned(i)], 'any');
    await runner.stop();
    const tail = await store.append('member-1', [earned(7)], 'any');
    const [tailEvent] = await store.readStream('member-1', tail.nextRevision);
    const seenByWaiter = runner.waitFor(tail.position).then(async () =>
      (await db.pool.query('select 1 from proj.applied where event_id = $1', [tailEvent.id])).rowCount);
    await runner.rebuild();
    expect(await seenByWaiter).toBe(1);
  });

  it('after a restart it resumes from its checkpoint without re-applying anything', async () => {
    const calls1: RecordedEvent[] = [];
    const runner1 = newRunner(pointsProjection(calls1));
    await runner1.start();
    const a = await store.append('member-1', [earned(1), earned(2), earned(3)], 'no_stream');
    await runner1.waitFor(a.position);
    await runner1.stop();
    const b = await store.append('member-1', [earned(4)], 2n);
    const c = await store.append('member-2', [earned(5)], 'no_stream');

    // a new process: new store, new runner, same database
    const calls2: RecordedEvent[] = [];
    const runner2 = newRunner(pointsProjection(calls2), newStore());
    await runner2.start();
    await runner2.waitFor(c.position);
    expect(calls1.map((e) => (e.data as { points: number }).points)).toEqual([1, 2, 3]);
    expect(calls2.map((e) => (e.data as { points: number }).points)).toEqual([4, 5]);
    expect(calls2[0].position).toEqual(b.position);
    expect((await dump()).points).toEqual([{ member_id: '1', points: 10, events: 4 }, { member_id: '2', points: 5, events: 1 }]);
  });

  it('two runners of one projection (replicas) still apply each event exactly once', async () => {
    const calls: RecordedEvent[] = [];
    const a = newRunner(pointsProjection(calls), newStore());
    const b = newRunner(pointsProjection(calls), newStore());
    await Promise.all([a.start(), b.start()]);
    let last: AppendResult | undefined;
    for (let i = 0; i < 40; i++) {
      last = await store.append(`member-${i % 3}`, [earned(1)], 'any');
      if (i % 8 === 0) await sleep(5);
    }
    await Promise.all([a.waitFor(last!.position), b.waitFor(last!.position)]);
    const rows = await dump();
    expect(rows.applied).toHaveLength(40);
    expect(rows.points.reduce((n, r) => n + r.points, 0)).toBe(40);
    expect(a.lastError ?? b.lastError).toBeNull();
  });
});
