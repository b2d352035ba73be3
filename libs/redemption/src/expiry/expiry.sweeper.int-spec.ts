import { memberStreamId } from '@loyalty/contracts';
import {
  MemberEvent, decideConfirmRedemption, decideIssueRedemption, decideOpenReservation, decideReleaseReservation, memberEvolver, spendingRules,
} from '@loyalty/domain-member';
import { CommandHandler, EVENT_STORE_MIGRATIONS, PROJECTION_MIGRATIONS, Position, PostgresEventStore, ProjectionRunner } from '@loyalty/event-store';
import { newId, newVoucherCode } from '@loyalty/platform';
import { PROGRAM_MIGRATIONS, ProgramStore } from '@loyalty/programs';
import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { REDEMPTION_MIGRATIONS } from '../redemption.migrations';
import { RedemptionsProjection } from '../projections/redemptions.projection';
import { MemberSpending } from '../member-spending';
import { RedemptionRows } from '../projections/redemption-rows';
import { ExpirySweeper } from './expiry.sweeper';

/** One "replica" of the redemption service: its own event store client, command handler cache and projection runner. */
const replica = async (db: TestDatabase) => {
  const store = new PostgresEventStore(db.pool, 50);
  const handler = new CommandHandler(store);
  const rows = new RedemptionRows(db.pool, store);
  const spending = new MemberSpending(handler);
  const runner = new ProjectionRunner(store, db.pool, new RedemptionsProjection());
  await runner.start();
  const settle = async (p: Position | null | undefined) => { if (p) { store.poke(); await runner.waitFor(p); } };
  return { store, handler, runner, settle, sweeper: new ExpirySweeper(spending, new ProgramStore(db.pool), db.pool, rows), stop: async () => { await runner.stop(); await store.close(); } };
};

describe('redemption read model and expiry sweep (PostgreSQL)', () => {
  let db: TestDatabase;
  let a: Awaited<ReturnType<typeof replica>>;
  let b: Awaited<ReturnType<typeof replica>>;
  let tenant: string;
  let programId: string;
  const T0 = new Date().toISOString();

  const run = async (r: typeof a, memberId: string, decide: (s: ReturnType<typeof memberEvolver.initialState>) => MemberEvent[]) => {
    const out = await r.handler.handle(memberStreamId(tenant, memberId), memberEvolver, (s) => ({ events: decide(s), result: null }));
    await r.settle(out.append?.position);
  };

  const newMember = async (credit: number): Promise<string> => {
    const id = newId('M');
    await run(a, id, () => [
      { type: 'MemberCreated', data: { member_id: id, state: 'registered', referral_code: 'ABCDEFGH', pii: { v: 1, kid: 'k', iv: '', tag: '', data: '' }, marketing_consent: false, accepted_terms_version: null, at: T0 } },
      { type: 'EntryRecorded', data: { id: newId('LE'), type: 'adjust', status: 'posted', amount_cents: credit, reason_code: 'seed', rule: null, parent_entry_id: null, release_at: null, expires_at: null, created_at: T0, order_ref: null, cause: `seed:${id}` } },
    ]);
    return id;
  };

  const voucher = (memberId: string, amount: number, expiresAt: string) => {
    const id = newId('RD');
    return run(a, memberId, (s) => decideIssueRedemption(s, spendingRules({}), {
      redemption_id: id, entry_id: newId('LE'), code: newVoucherCode(), mode: 'voucher', amount_cents: amount, order_ref: null, expires_at: expiresAt, cause: `redeem:${id}`, at: T0,
    })).then(() => id);
  };

  const reservation = (memberId: string, amount: number, expiresAt: string) => {
    const id = newId('RS');
    return run(a, memberId, (s) => decideOpenReservation(s, spendingRules({}), {
      reservation_id: id, amount_cents: amount, cart_ref: 'cart', eligible_total_cents: null, payment_method: null, expires_at: expiresAt, cause: null, at: T0,
    })).then(() => id);
  };

  const rows = async () => ({
    redemptions: (await db.pool.query('select * from redemption.redemptions order by tenant, id')).rows,
    reservations: (await db.pool.query('select tenant, id, member_id, status, amount_cents, cart_ref, order_ref, ledger_entry_id, expires_at, created_at from redemption.reservations order by tenant, id')).rows,
  });

  beforeAll(async () => {
    db = await createTestDatabase('redemption_sweep', { migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS, ...PROGRAM_MIGRATIONS, ...REDEMPTION_MIGRATIONS] });
    programId = (await new ProgramStore(db.pool).create({ program_name: 'Sweep', currency_name: 'points' })).id;
    tenant = `${programId}_test`;
    a = await replica(db);
    b = await replica(db);
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await db?.drop();
  });

  it('two replicas sweeping one sandbox at once expire each due voucher and reservation exactly once; nothing not yet due', async () => {
    const due = new Date(Date.now() + 3_600_000).toISOString();
    const later = new Date(Date.now() + 86_400_000).toISOString();
    const members = await Promise.all(Array.from({ length: 12 }, () => newMember(10_000)));
    const vouchers: string[] = [];
    const reservations: string[] = [];
    for (const m of members) {
      vouchers.push(await voucher(m, 1000, due));
      reservations.push(await reservation(m, 500, due));
    }
    const notDue = await voucher(members[0], 100, later);
    expect(await b.sweeper.sweep(tenant)).toMatchObject({ vouchers_expired: 0, reservations_expired: 0 });

    await new ProgramStore(db.pool).advanceTestClock(programId, 7200);
    const results = await Promise.all([a.sweeper.sweep(tenant), b.sweeper.sweep(tenant), a.sweeper.sweepAll(), b.sweeper.sweepAll()]);
    const flat = [results[0], results[1], ...results[2], ...results[3]];
    expect(flat.reduce((n, r) => n + r.vouchers_expired, 0)).toBe(12);
    expect(flat.reduce((n, r) => n + r.reservations_expired, 0)).toBe(12);

    for (const m of members) {
      const s = (await a.handler.load(memberStreamId(tenant, m), memberEvolver)).state;
      const reverses = [...s.entries.values()].filter((e) => e.type === 'reverse');
      expect(reverses).toHaveLength(1);
      expect(reverses[0]).toMatchObject({ amount_cents: 1000, reason_code: 'voucher_expired' });
      expect(s.reserved).toBe(0);
      expect(s.available).toBe(m === members[0] ? 9_900 : 10_000);
      expect(s.lifetime_redeemed).toBe(m === members[0] ? 100 : 0);
    }
    await a.settle(await a.store.headPosition());
    const { redemptions, reservations: res } = await rows();
    expect(redemptions.filter((r) => vouchers.includes(r.id)).every((r) => r.status === 'expired')).toBe(true);
    expect(redemptions.find((r) => r.id === notDue)?.status).toBe('created');
    expect(res.filter((r) => reservations.includes(r.id)).every((r) => r.status === 'expired')).toBe(true);
    // a second sweep finds nothing left to do
    expect(await a.sweeper.sweep(tenant)).toMatchObject({ vouchers_expired: 0, reservations_expired: 0 });
  });

  it('the read model follows confirm, void and release, and a rebuild from the event store gives the same rows', async () => {
    await b.runner.stop(); // one runner of the projection while it is rebuilt
    const m = await newMember(5000);
    const far = new Date(Date.now() + 10 * 86_400_000).toISOString();
    const used = await voucher(m, 100, far);
    await run(a, m, (s) => decideConfirmRedemption(s, { redemption_id: used, order_ref: 'O-1', at: T0 }));
    const held = await reservation(m, 200, far);
    await run(a, m, (s) => decideReleaseReservation(s, { reservation_id: held, at: T0 }));
    const before = await rows();
    expect(before.redemptions.find((r) => r.id === used)).toMatchObject({ status: 'used', order_ref: 'O-1', member_id: m, tenant });
    expect(before.reservations.find((r) => r.id === held)).toMatchObject({ status: 'released', member_id: m });

    await a.runner.rebuild();
    await a.settle(await a.store.headPosition());
    const after = await rows();
    const strip = (r: Record<string, unknown>) => { const { updated_at: _u, ...rest } = r; return rest; };
    expect(after.redemptions.map(strip)).toEqual(before.redemptions.map(strip));
    expect(after.reservations).toEqual(before.reservations);
  });

  it("sweeps page after page of vouchers and reservations whose rows only the runner writes (each page's moves are in before the next is read)", async () => {
    // a replica whose read-model runner is RedemptionRows' own (as in the service), reading pages of 5
    const rows = new RedemptionRows(db.pool, a.store);
    await rows.start();
    try {
      const sweeper = new ExpirySweeper(new MemberSpending(a.handler), new ProgramStore(db.pool), db.pool, rows, 5);
      const now = await new ProgramStore(db.pool).now(tenant);
      const due = new Date(now.getTime() - 1000).toISOString();
      const members = await Promise.all(Array.from({ length: 4 }, () => newMember(10_000)));
      const opened: string[] = [];
      const issued: string[] = [];
      for (const m of members) for (let i = 0; i < 3; i++) opened.push(await reservation(m, 100, due));
      for (const m of members) for (let i = 0; i < 2; i++) issued.push(await voucher(m, 100, due));
      expect(await sweeper.sweep(tenant)).toMatchObject({ reservations_expired: 12, vouchers_expired: 8 });
      await rows.catchUp();
      const { rows: after } = await db.pool.query<{ status: string }>('select status from redemption.reservations where id = any($1::text[])', [opened]);
      expect(after.map((r) => r.status)).toEqual(opened.map(() => 'expired'));
      const { rows: gone } = await db.pool.query<{ status: string }>('select status from redemption.redemptions where id = any($1::text[])', [issued]);
      expect(gone.map((r) => r.status)).toEqual(issued.map(() => 'expired'));
    } finally {
      await rows.stop();
    }
  });
});
