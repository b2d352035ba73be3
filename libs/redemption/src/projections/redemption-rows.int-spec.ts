import { randomUUID } from 'node:crypto';
import { memberStreamId } from '@loyalty/contracts';
import type { MemberEvent } from '@loyalty/domain-member';
import { EVENT_STORE_MIGRATIONS, PROJECTION_MIGRATIONS, PostgresEventStore } from '@loyalty/event-store';
import { newId } from '@loyalty/platform';
import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { REDEMPTION_MIGRATIONS } from '../redemption.migrations';
import { RedemptionRows } from './redemption-rows';

describe('redemption rows: written by their runner alone, found by look-ups that catch it up (PostgreSQL)', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  const tenant = newId('P'); // a live programme's partition
  const at = new Date().toISOString();
  const expires = new Date(Date.now() + 3_600_000).toISOString();

  beforeAll(async () => {
    db = await createTestDatabase('redemption_rows', { migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS, ...REDEMPTION_MIGRATIONS] });
    store = new PostgresEventStore(db.pool, 50);
  });

  afterAll(async () => {
    await store.close();
    await db.drop();
  });

  const opened = (id: string): MemberEvent => ({ type: 'ReservationOpened', data: { reservation_id: id, amount_cents: 100, cart_ref: 'cart', expires_at: expires, at } });
  const issued = (id: string, mode: 'voucher' | 'direct' = 'voucher'): MemberEvent => ({
    type: 'VoucherIssued', data: { redemption_id: id, code: `CODE-${id}`, mode, amount_cents: 100, entry_id: newId('LE'), order_ref: mode === 'direct' ? 'O-1' : null, expires_at: mode === 'direct' ? null : expires, at },
  });
  /** The events as the store takes them (an id each). */
  const stored = (events: MemberEvent[]) => events.map((e) => ({ id: randomUUID(), type: e.type, data: e.data }));
  const statusOf = async (table: 'redemptions' | 'reservations', id: string): Promise<string | null> =>
    (await db.pool.query<{ status: string }>(`select status from redemption.${table} where tenant = $1 and id = $2`, [tenant, id])).rows[0]?.status ?? null;
  const vouchers = (ids: string[]) => Promise.all(ids.map((id) => statusOf('redemptions', id)));

  it('writes no row before the runner does; a look-up by id or by code from another process catches the runner up first', async () => {
    const memberId = newId('M');
    const stream = memberStreamId(tenant, memberId);
    const [voucher, direct, reservation] = [newId('RD'), newId('RD'), newId('RS')];
    // a command's events, appended: no row is written with them (no runner runs yet)
    const last = await store.append(stream, stored([issued(voucher), issued(direct, 'direct'), opened(reservation)]), 'any');
    expect(await statusOf('redemptions', voucher)).toBeNull();
    expect(await statusOf('redemptions', direct)).toBeNull();
    expect(await statusOf('reservations', reservation)).toBeNull();
    // another process's look-ups (nothing remembered): each finds its row once the runner has caught up
    const other = new RedemptionRows(db.pool, store);
    await other.start();
    try {
      expect(await other.ownerOf(tenant, 'redemptions', voucher)).toBe(memberId);
      expect(await vouchers([voucher, direct])).toEqual(['created', 'used']);
      expect(await statusOf('reservations', reservation)).toBe('open');
      expect(await other.ownerOf(tenant, 'reservations', reservation)).toBe(memberId);
      expect(await other.byCode(tenant, `CODE-${direct}`)).toEqual({ id: direct, member_id: memberId });
      // ids and codes no event ever named: still none once caught up
      expect(await other.ownerOf(tenant, 'reservations', newId('RS'))).toBeNull();
      expect(await other.ownerOf(tenant, 'redemptions', newId('RD'))).toBeNull();
      expect(await other.byCode(tenant, 'NO-SUCH-CODE')).toBeNull();
      // a rebuild empties the tables and writes them all again
      await db.pool.query('delete from redemption.redemptions where tenant = $1 and id = $2', [tenant, voucher]);
      await other.runner!.rebuild();
      await other.runner!.waitFor(last.position!, 10_000);
      expect(await vouchers([voucher, direct])).toEqual(['created', 'used']);
    } finally {
      await other.stop();
    }
  });

  it('a look-up right after another process appended finds the row (the catch-up waits for the runner, not for a poll)', async () => {
    const memberId = newId('M');
    const stream = memberStreamId(tenant, memberId);
    const reader = new RedemptionRows(db.pool, store);
    await reader.start();
    try {
      // appended by another client of the store while the reader's runner is running
      const other = new PostgresEventStore(db.pool, 50);
      const id = newId('RD');
      try {
        await other.append(stream, stored([issued(id)]), 'any');
      } finally {
        await other.close();
      }
      expect(await reader.byCode(tenant, `CODE-${id}`)).toEqual({ id, member_id: memberId });
      expect(await reader.ownerOf(tenant, 'redemptions', id)).toBe(memberId);
    } finally {
      await reader.stop();
    }
  });
});
