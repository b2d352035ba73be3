import { randomUUID } from 'node:crypto';
import { memberStreamId } from '@loyalty/contracts';
import type { MemberEvent } from '@loyalty/domain-member';
import { EVENT_STORE_MIGRATIONS, PROJECTION_MIGRATIONS, PostgresEventStore } from '@loyalty/event-store';
import { newId } from '@loyalty/platform';
import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { REDEMPTION_MIGRATIONS } from '../redemption.migrations';
import { RedemptionRows } from './redemption-rows';

describe('redemption rows: what the service wrote before replying, the runner does not write again (PostgreSQL)', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let rows: RedemptionRows;
  const tenant = newId('P'); // a live programme's partition
  const at = new Date().toISOString();
  const expires = new Date(Date.now() + 3_600_000).toISOString();

  beforeAll(async () => {
    db = await createTestDatabase('redemption_rows', { migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS, ...REDEMPTION_MIGRATIONS] });
    store = new PostgresEventStore(db.pool, 50);
    rows = new RedemptionRows(db.pool, store);
  });

  afterAll(async () => {
    await rows.stop();
    await store.close();
    await db.drop();
  });

  const opened = (id: string): MemberEvent => ({ type: 'ReservationOpened', data: { reservation_id: id, amount_cents: 100, cart_ref: 'cart', expires_at: expires, at } });
  /** The events as the store takes them (an id each), the same objects as the service's read-model call gets. */
  const stored = (events: MemberEvent[]) => events.map((e) => ({ id: randomUUID(), type: e.type, data: e.data }));
  const statusOf = async (id: string): Promise<string | null> =>
    (await db.pool.query<{ status: string }>('select status from redemption.reservations where tenant = $1 and id = $2', [tenant, id])).rows[0]?.status ?? null;

  it('skips the events written inline, applies the others, and a rebuild writes them all', async () => {
    const memberId = newId('M');
    const stream = memberStreamId(tenant, memberId);
    const [mine, theirs, confirmedHere] = [newId('RS'), newId('RS'), newId('RS')];
    // this process's commands: appended, then written to the rows before the reply
    await store.append(stream, stored([opened(mine), opened(confirmedHere)]), 'any');
    await rows.project(stream, [opened(mine), opened(confirmedHere)]);
    const confirm: MemberEvent = { type: 'ReservationConfirmed', data: { reservation_id: confirmedHere, order_ref: 'O-1', entry_id: newId('LE'), at } };
    await store.append(stream, stored([confirm]), 'any');
    await rows.project(stream, [confirm]);
    // another writer's event (an order confirming a reservation, an erasure): only the runner writes it
    const last = await store.append(stream, stored([opened(theirs)]), 'any');
    expect([await statusOf(mine), await statusOf(confirmedHere), await statusOf(theirs)]).toEqual(['open', 'confirmed', null]);

    // a row taken away behind the service's back shows whether the runner wrote it again
    await db.pool.query('delete from redemption.reservations where tenant = $1 and id = any($2::text[])', [tenant, [mine, confirmedHere]]);
    await rows.start();
    await rows.runner!.waitFor(last.position!, 10_000);
    expect([await statusOf(mine), await statusOf(confirmedHere), await statusOf(theirs)]).toEqual([null, null, 'open']);

    // a rebuild empties the tables and replays everything: nothing is skipped then
    await rows.project(stream, [opened(mine)]); // remembered again, and forgotten by the rebuild
    await db.pool.query('delete from redemption.reservations where tenant = $1 and id = $2', [tenant, mine]);
    await rows.runner!.rebuild();
    await rows.runner!.waitFor(last.position!, 10_000);
    expect([await statusOf(mine), await statusOf(confirmedHere), await statusOf(theirs)]).toEqual(['open', 'confirmed', 'open']);
  });
});
