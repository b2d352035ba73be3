import { randomUUID } from 'node:crypto';
import { memberStreamId } from '@loyalty/contracts';
import { MemberEvent } from '@loyalty/domain-member';
import { EVENT_STORE_MIGRATIONS, PROJECTION_MIGRATIONS, PostgresEventStore, Projection, ProjectionRunner } from '@loyalty/event-store';
import { newId } from '@loyalty/platform';
import { createTestDatabase, TestDatabase } from '@loyalty/testing';
import { LEDGER_MIGRATIONS } from '../ledger.migrations';
import { DueItemsProjection } from './due-items.projection';

/** ledger.due_items under a batch that is rolled back and applied again, and under orders that only move the inactivity clock. */
describe('due items read model (PostgreSQL)', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let runner: ProjectionRunner;
  /** a projection of the same runner whose batch fails while `failing` is set (its transaction is rolled back) */
  let failing = false;
  let failures = 0;
  const saboteur: Projection = {
    name: 'test.saboteur', tables: [],
    apply: async () => undefined,
    afterBatch: async () => { if (failing) { failing = false; failures++; throw new Error('this batch fails'); } },
  };
  const tenant = 'P_due';

  const append = async (memberId: string, events: MemberEvent[]) => {
    const r = await store.append(memberStreamId(tenant, memberId), events.map((e) => ({ id: randomUUID(), type: e.type, data: e.data })), 'any');
    return r.position;
  };
  const created = (id: string, at: string): MemberEvent => ({ type: 'MemberCreated', data: { member_id: id, state: 'registered', referral_code: 'ABCDEFGH', pii: { v: 1, kid: 'k', iv: '', tag: '', data: '' }, marketing_consent: false, accepted_terms_version: null, at } } as MemberEvent);
  const earned = (amount: number, at: string): MemberEvent => ({ type: 'EntryRecorded', data: { id: newId('LE'), type: 'earn', status: 'posted', amount_cents: amount, reason_code: 'order', rule: 'base', parent_entry_id: null, release_at: null, expires_at: null, created_at: at, order_ref: `O-${randomUUID()}`, cause: `order:${randomUUID()}` } } as MemberEvent);
  const rows = async (memberId: string) =>
    (await db.pool.query<{ kind: string; due_at: Date }>('select kind, due_at from ledger.due_items where tenant = $1 and member_id = $2 order by kind', [tenant, memberId])).rows
      .map((r) => ({ kind: r.kind, due_at: r.due_at.toISOString() }));

  beforeAll(async () => {
    db = await createTestDatabase('due_items', { migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS, ...LEDGER_MIGRATIONS] });
    store = new PostgresEventStore(db.pool, 50);
    runner = new ProjectionRunner(store, db.pool, [new DueItemsProjection(store), saboteur]);
    await runner.start();
  });
  afterAll(async () => {
    await runner?.stop();
    await store?.close();
    await db?.drop();
  });

  it('an order moves the member\'s inactivity row to its time', async () => {
    const m = newId('M');
    await runner.waitFor(await append(m, [created(m, '2026-01-01T00:00:00.000Z'), earned(100, '2026-01-02T00:00:00.000Z')]));
    expect(await rows(m)).toEqual([{ kind: 'inactive', due_at: '2026-01-02T00:00:00.000Z' }]);
    await runner.waitFor(await append(m, [earned(50, '2026-02-03T00:00:00.000Z')]));
    expect(await rows(m)).toEqual([{ kind: 'inactive', due_at: '2026-02-03T00:00:00.000Z' }]);
  });

  it('activity within the same ten minutes leaves the inactivity row as it is; a later step moves it (rounded down, never past the activity)', async () => {
    const m = newId('M');
    await runner.waitFor(await append(m, [created(m, '2026-01-01T00:00:00.000Z'), earned(100, '2026-01-02T10:01:30.000Z')]));
    expect(await rows(m)).toEqual([{ kind: 'inactive', due_at: '2026-01-02T10:00:00.000Z' }]);
    // the row's version shows whether a later batch wrote it again
    const version = async () => (await db.pool.query<{ xmin: string }>('select xmin::text from ledger.due_items where tenant = $1 and member_id = $2', [tenant, m])).rows[0].xmin;
    const first = await version();
    await runner.waitFor(await append(m, [earned(10, '2026-01-02T10:07:00.000Z')]));
    await runner.waitFor(await append(m, [earned(10, '2026-01-02T10:09:59.999Z')]));
    expect(await rows(m)).toEqual([{ kind: 'inactive', due_at: '2026-01-02T10:00:00.000Z' }]);
    expect(await version()).toBe(first);
    await runner.waitFor(await append(m, [earned(10, '2026-01-02T10:10:00.001Z')]));
    expect(await rows(m)).toEqual([{ kind: 'inactive', due_at: '2026-01-02T10:10:00.000Z' }]);
  });

  it('a kind no longer due is dropped: a member who holds no points has no inactivity row', async () => {
    const m = newId('M');
    await runner.waitFor(await append(m, [created(m, '2026-01-01T00:00:00.000Z'), earned(100, '2026-01-02T00:00:00.000Z')]));
    expect(await rows(m)).toHaveLength(1);
    const spent: MemberEvent = { type: 'EntryRecorded', data: { id: newId('LE'), type: 'redeem', status: 'posted', amount_cents: -100, reason_code: 'direct', rule: null, parent_entry_id: null, release_at: null, expires_at: null, created_at: '2026-01-03T00:00:00.000Z', order_ref: null, cause: `redeem:${randomUUID()}` } } as MemberEvent;
    await runner.waitFor(await append(m, [spent]));
    expect(await rows(m)).toEqual([]);
  });

  it('a batch rolled back and applied again writes its rows (what the failed attempt staged is not taken as written)', async () => {
    const m = newId('M');
    await runner.waitFor(await append(m, [created(m, '2026-01-01T00:00:00.000Z'), earned(100, '2026-01-05T00:00:00.000Z')]));
    failing = true;
    const before = failures;
    await runner.waitFor(await append(m, [earned(50, '2026-03-07T00:00:00.000Z')]), 20_000);
    expect(failures).toBe(before + 1);
    expect(await rows(m)).toEqual([{ kind: 'inactive', due_at: '2026-03-07T00:00:00.000Z' }]);
  });
});
