import { randomUUID } from 'node:crypto';
import { memberStreamId } from '@loyalty/contracts';
import type { MemberEvent } from '@loyalty/domain-member';
import type { RecordedEvent } from '@loyalty/event-store';
import { newId } from '@loyalty/platform';
import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { REDEMPTION_MIGRATIONS } from '../redemption.migrations';
import { RedemptionsProjection } from './redemptions.projection';

/**
 * The projection's batches, applied as its runner applies them (beforeBatch, apply per event,
 * afterBatch, in one transaction): a row created and moved in one batch is written once, as the move
 * leaves it, and ends as an insert followed by the update would have left it.
 */
describe('redemption rows: a row created and moved in one batch (PostgreSQL)', () => {
  let db: TestDatabase;
  const tenant = newId('P');
  const memberId = newId('M');
  const at = new Date().toISOString();
  const expires = new Date(Date.now() + 3_600_000).toISOString();
  let revision = 0n;

  beforeAll(async () => {
    db = await createTestDatabase('redemption_projection', { migrations: REDEMPTION_MIGRATIONS });
  });
  afterAll(async () => db.drop());

  const recorded = (e: MemberEvent): RecordedEvent => {
    revision += 1n;
    return {
      id: randomUUID(), streamId: memberStreamId(tenant, memberId), revision, type: e.type, data: e.data, metadata: {},
      position: { commit: revision, prepare: revision }, createdAt: new Date(),
    };
  };
  /** One batch of the runner, in one transaction; returns the statements it sent. */
  const batch = async (p: RedemptionsProjection, events: MemberEvent[]): Promise<string[]> => {
    const client = await db.pool.connect();
    const sent: string[] = [];
    const query = client.query.bind(client);
    (client as unknown as { query: unknown }).query = (q: unknown, ...rest: unknown[]) => {
      sent.push(typeof q === 'string' ? q : String((q as { name?: string }).name ?? (q as { text?: string }).text));
      return (query as (...a: unknown[]) => unknown)(q, ...rest);
    };
    try {
      await client.query('begin');
      const rs = events.map(recorded);
      await p.beforeBatch();
      for (const r of rs) await p.apply(client, r);
      await p.afterBatch(client);
      await client.query('commit');
    } finally {
      (client as unknown as { query: unknown }).query = query;
      client.release();
    }
    return sent.filter((q) => !/^(begin|commit)$/.test(q));
  };
  const row = async (table: 'redemptions' | 'reservations', id: string) =>
    (await db.pool.query(`select * from redemption.${table} where tenant = $1 and id = $2`, [tenant, id])).rows[0] ?? null;

  const opened = (id: string): MemberEvent => ({ type: 'ReservationOpened', data: { reservation_id: id, amount_cents: 100, cart_ref: 'cart', expires_at: expires, at } });
  const confirmed = (id: string, entryId: string): MemberEvent => ({ type: 'ReservationConfirmed', data: { reservation_id: id, order_ref: 'O-9', entry_id: entryId, at } });
  const released = (id: string, reason: 'released' | 'expired'): MemberEvent => ({ type: 'ReservationReleased', data: { reservation_id: id, reason, at } });
  const issued = (id: string): MemberEvent => ({
    type: 'VoucherIssued', data: { redemption_id: id, code: `CODE-${id}`, mode: 'voucher', amount_cents: 100, entry_id: newId('LE'), order_ref: null, expires_at: expires, at },
  });
  const used = (id: string): MemberEvent => ({ type: 'VoucherUsed', data: { redemption_id: id, order_ref: 'O-7', at } });
  const restored = (id: string): MemberEvent => ({ type: 'VoucherRestored', data: { redemption_id: id, reverse_entry_id: newId('LE'), reason: 'voided', at } });

  it('inserts reservations and vouchers moved in the batch that created them as the moves leave them, with no update', async () => {
    const p = new RedemptionsProjection();
    const [confirm, release, expire, open] = [newId('RS'), newId('RS'), newId('RS'), newId('RS')];
    const [use, restore, useThenRestore, keep] = [newId('RD'), newId('RD'), newId('RD'), newId('RD')];
    const entry = newId('LE');
    const sent = await batch(p, [
      opened(confirm), opened(release), opened(expire), opened(open), confirmed(confirm, entry), released(release, 'released'), released(expire, 'expired'),
      issued(use), issued(restore), issued(useThenRestore), issued(keep), used(use), restored(restore), used(useThenRestore), restored(useThenRestore),
    ]);
    // two inserts, no move
    expect(sent).toEqual(['loyalty_redemptions_insert', 'loyalty_reservations_insert']);
    expect(await row('reservations', confirm)).toMatchObject({ status: 'confirmed', order_ref: 'O-9', ledger_entry_id: entry, cart_ref: 'cart', member_id: memberId });
    expect(await row('reservations', release)).toMatchObject({ status: 'released', order_ref: null, ledger_entry_id: null });
    expect((await row('reservations', expire)).status).toBe('expired');
    expect((await row('reservations', open)).status).toBe('open');
    expect(await row('redemptions', use)).toMatchObject({ status: 'used', order_ref: 'O-7' });
    expect((await row('redemptions', restore)).status).toBe('restored');
    // a move only out of `created`, as the update did: a used voucher stays used
    expect(await row('redemptions', useThenRestore)).toMatchObject({ status: 'used', order_ref: 'O-7' });
    expect((await row('redemptions', keep)).status).toBe('created');
  });

  it('moves rows created by an earlier batch with the update, out of their status only', async () => {
    const p = new RedemptionsProjection();
    const [rs, rd] = [newId('RS'), newId('RD')];
    await batch(p, [opened(rs), issued(rd)]);
    const entry = newId('LE');
    const sent = await batch(p, [confirmed(rs, entry), used(rd), released(rs, 'released')]);
    expect(sent).toEqual(expect.arrayContaining(['loyalty_reservations_move', 'loyalty_redemptions_move']));
    expect(await row('reservations', rs)).toMatchObject({ status: 'confirmed', ledger_entry_id: entry });
    expect((await row('redemptions', rd)).status).toBe('used');
  });

  it('a staged terminal row meeting an open row already there moves it, as insert-then-update would; a terminal one stays', async () => {
    const p = new RedemptionsProjection();
    const [rs, done] = [newId('RS'), newId('RS')];
    // rows written outside this batch (as if by another writer)
    await db.pool.query(
      `insert into redemption.reservations (tenant, id, member_id, status, amount_cents, cart_ref, expires_at, created_at)
       values ($1, $2, $3, 'open', 100, null, $4, $5), ($1, $6, $3, 'released', 100, null, $4, $5)`, [tenant, rs, memberId, expires, at, done]);
    const entry = newId('LE');
    await batch(p, [opened(rs), confirmed(rs, entry), opened(done), confirmed(done, newId('LE'))]);
    expect(await row('reservations', rs)).toMatchObject({ status: 'confirmed', order_ref: 'O-9', ledger_entry_id: entry });
    expect(await row('reservations', done)).toMatchObject({ status: 'released', order_ref: null, ledger_entry_id: null });
  });
});
