import { randomUUID } from 'node:crypto';
import { memberStreamId } from '@loyalty/contracts';
import type { MemberEvent } from '@loyalty/domain-member';
import { EVENT_STORE_MIGRATIONS, PROJECTION_MIGRATIONS, PostgresEventStore } from '@loyalty/event-store';
import { newId } from '@loyalty/platform';
import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { REDEMPTION_MIGRATIONS } from '../redemption.migrations';
import { RedemptionRows } from './redemption-rows';

describe('redemption rows: what the service writes before replying, what it leaves to the runner (PostgreSQL)', () => {
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
  const issued = (id: string): MemberEvent => ({
    type: 'VoucherIssued', data: { redemption_id: id, code: `CODE-${id}`, mode: 'voucher', amount_cents: 100, entry_id: newId('LE'), order_ref: null, expires_at: expires, at },
  });
  /** The events as the store takes them (an id each), the same objects as the service's read-model call gets. */
  const stored = (events: MemberEvent[]) => events.map((e) => ({ id: randomUUID(), type: e.type, data: e.data }));
  const statusOf = async (table: 'redemptions' | 'reservations', id: string): Promise<string | null> =>
    (await db.pool.query<{ status: string }>(`select status from redemption.${table} where tenant = $1 and id = $2`, [tenant, id])).rows[0]?.status ?? null;
  const vouchers = (ids: string[]) => Promise.all(ids.map((id) => statusOf('redemptions', id)));

  it("writes a command's voucher rows before the reply; the runner skips them, applies the others, and a rebuild writes them all", async () => {
    const memberId = newId('M');
    const stream = memberStreamId(tenant, memberId);
    const [mine, theirs, usedHere] = [newId('RD'), newId('RD'), newId('RD')];
    // this process's commands: appended, then written to the rows before the reply
    await store.append(stream, stored([issued(mine), issued(usedHere)]), 'any');
    await rows.project(stream, [issued(mine), issued(usedHere)]);
    const use: MemberEvent = { type: 'VoucherUsed', data: { redemption_id: usedHere, order_ref: 'O-1', at } };
    await store.append(stream, stored([use]), 'any');
    await rows.project(stream, [use]);
    // another writer's event (an erasure restoring a voucher, …): only the runner writes it
    const last = await store.append(stream, stored([issued(theirs)]), 'any');
    expect(await vouchers([mine, usedHere, theirs])).toEqual(['created', 'used', null]);

    // a row taken away behind the service's back shows whether the runner wrote it again
    await db.pool.query('delete from redemption.redemptions where tenant = $1 and id = any($2::text[])', [tenant, [mine, usedHere]]);
    await rows.start();
    await rows.runner!.waitFor(last.position!, 10_000);
    expect(await vouchers([mine, usedHere, theirs])).toEqual([null, null, 'created']);

    // a rebuild empties the tables and replays everything: nothing is skipped then
    await rows.project(stream, [issued(mine)]); // remembered again, and forgotten by the rebuild
    await db.pool.query('delete from redemption.redemptions where tenant = $1 and id = $2', [tenant, mine]);
    await rows.runner!.rebuild();
    await rows.runner!.waitFor(last.position!, 10_000);
    expect(await vouchers([mine, usedHere, theirs])).toEqual(['created', 'used', 'created']);
  });

  it("leaves a reservation's rows to the runner, and a look-up of one not written yet waits for it", async () => {
    const memberId = newId('M');
    const stream = memberStreamId(tenant, memberId);
    const id = newId('RS');
    await rows.stop(); // the runner of the test above: stopped, so the row can only appear once it runs again
    await store.append(stream, stored([opened(id)]), 'any');
    await rows.project(stream, [opened(id)]);
    expect(await statusOf('reservations', id)).toBeNull(); // not written before the reply
    // another process's look-up (nothing remembered): it finds the row once the runner has caught up
    const other = new RedemptionRows(db.pool, store);
    await other.start();
    try {
      expect(await other.ownerOf(tenant, 'reservations', id)).toBe(memberId);
      expect(await statusOf('reservations', id)).toBe('open');
      // an id no event ever named: still none once caught up
      expect(await other.ownerOf(tenant, 'reservations', newId('RS'))).toBeNull();
    } finally {
      await other.stop();
    }
  });
});
