import { INestMicroservice } from '@nestjs/common';
import { CommandHandler, EVENT_STORE_MIGRATIONS, PROJECTION_MIGRATIONS } from '@loyalty/event-store';
import { PROGRAM_MIGRATIONS, ProgramStore } from '@loyalty/programs';
import { createTestDatabase, eventually, TestDatabase } from '@loyalty/testing';
import { LedgerReadModels } from '../ledger.read-models';
import { LEDGER_MIGRATIONS } from '../ledger.migrations';
import { startLedgerTestApp } from '../ledger.test-app';
import { MembersService } from '../members/members.service';
import { AdjustPointsService } from '../adjust/adjust-points.service';
import { EraseMemberService } from '../erase/erase-member.service';
import { SweepService } from './sweep.service';

const DAY = 86_400;

/**
 * Sweeps against real PostgreSQL with two "replicas" (each its own command handler cache, as two
 * processes would have) sweeping the same programme at once: every effect happens once.
 */
describe('sweeps (PostgreSQL)', () => {
  let db: TestDatabase;
  let app: INestMicroservice;
  let members: MembersService;
  let adjusting: AdjustPointsService;
  let erasing: EraseMemberService;
  let programs: ProgramStore;
  let a: SweepService;
  let b: SweepService;

  beforeAll(async () => {
    db = await createTestDatabase('sweeps', { migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS, ...PROGRAM_MIGRATIONS, ...LEDGER_MIGRATIONS], poolMax: 40 });
    const started = await startLedgerTestApp(db);
    ({ app, members, adjusting, erasing, programs, sweeps: a } = started);
    const { store } = started;
    // the second replica: same database and projections, its own state cache and no runners of its own
    b = new SweepService(db.pool, new CommandHandler(store), programs, new LedgerReadModels(store, 2_000));
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  // due_items is a read model, which writes do not wait for: catch it up before reading the table
  const due = async (tenant: string) =>
    (await app.get(LedgerReadModels).catchUp(), await db.pool.query<{ member_id: string; kind: string }>('select member_id, kind from ledger.due_items where tenant = $1 order by kind', [tenant])).rows;

  it('two replicas sweeping one programme at once expire each lot exactly once', async () => {
    const p = await programs.create({ program_name: 'P', currency_name: 'pts', settings: { expiry: { policy: 'fixed_days', days: 10 } } });
    const tenant = `${p.id}_test`;
    const now = (await programs.now(tenant)).toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { member } = await members.enrol(tenant, { email: `m${i}@example.com` }, now);
      await adjusting.adjust(tenant, member.id, { amount_cents: 100 + i, reason_code: 'seed' }, now);
      await adjusting.adjust(tenant, member.id, { amount_cents: 1000, reason_code: 'seed' }, now);
      ids.push(member.id);
    }
    // one expire row per member (at its earliest lot), not one per lot: the sweep takes every due lot of a member at once
    expect((await due(tenant)).filter((r) => r.kind === 'expire').map((r) => r.member_id).sort()).toEqual([...ids].sort());
    // nothing is due yet
    expect(await a.sweepTenant(tenant, true)).toMatchObject({ members: 0, expired: 0 });
    expect(await a.dueTenants()).not.toContain(tenant);

    await programs.advanceTestClock(p.id, 10 * DAY + 1);
    expect(await a.dueTenants()).toContain(tenant);
    const reports = await Promise.all([a.sweepTenant(tenant, true), b.sweepTenant(tenant, true), a.sweepTenant(tenant, false), b.sweepTenant(tenant, true)]);
    const expired = reports.reduce((n, r) => n + (r?.expired ?? 0), 0);
    expect(expired).toBe(10);
    for (const [i, id] of ids.entries()) {
      const s = await members.load(tenant, id);
      const expiries = [...s.entries.values()].filter((e) => e.type === 'expire');
      expect(expiries.map((e) => e.amount_cents).sort((x, y) => x - y)).toEqual([-1000, -(100 + i)]);
      expect(s.available).toBe(0);
    }
    // expired lots leave the due list; the inactivity clock stays only while points are held
    // the other replica's projection may be the one that applies the last expiries: wait for it
    await a.sweepTenant(tenant, true);
    await eventually(async () => expect(await due(tenant)).toEqual([]));
    await eventually(async () => expect(await a.dueTenants()).not.toContain(tenant));
  });

  it('finds due programmes by their own clock: real time for live, the test clock for the sandbox, inactivity by the policy days', async () => {
    const p = await programs.create({ program_name: 'Q', currency_name: 'pts', settings: { expiry: { policy: 'inactivity', days: 30 } } });
    const live = p.id;
    const sandbox = `${p.id}_test`;
    for (const tenant of [live, sandbox]) {
      const at = (await programs.now(tenant)).toISOString();
      const { member } = await members.enrol(tenant, { email: 'idle@example.com' }, at);
      await adjusting.adjust(tenant, member.id, { amount_cents: 50, reason_code: 'seed' }, at);
    }
    expect((await due(sandbox)).map((r) => r.kind)).toEqual(['inactive']);
    expect(await a.dueTenants()).not.toContain(sandbox);
    await programs.advanceTestClock(p.id, 30 * DAY + 1);
    const tenants = await a.dueTenants();
    expect(tenants).toContain(sandbox);
    expect(tenants).not.toContain(live);
    expect(await b.sweepTenant(sandbox, true)).toMatchObject({ members: 1, expired: 1 });
    expect(await a.sweepTenant(live, true)).toMatchObject({ members: 0, expired: 0 });
    // the policy changes to none: the inactivity rows stay but nothing is due
    await programs.patch(p.id, { settings: { expiry: { policy: 'none' } } });
    await programs.advanceTestClock(p.id, 365 * DAY);
    expect(await a.dueTenants()).not.toContain(live);
  });

  it('an erased member has only its anonymisation due (grace 0 days), then nothing', async () => {
    const p = await programs.create({ program_name: 'R', currency_name: 'pts', settings: { expiry: { policy: 'fixed_days', days: 5 } } });
    const at = (await programs.now(p.id)).toISOString();
    const { member } = await members.enrol(p.id, { email: 'gone@example.com' }, at);
    await adjusting.adjust(p.id, member.id, { amount_cents: 10, reason_code: 'seed' }, at);
    expect((await due(p.id)).length).toBe(2);
    await erasing.erase(p.id, member.id, at);
    expect(await due(p.id)).toEqual([{ member_id: member.id, kind: 'anonymise' }]);
    expect(await a.dueTenants()).toContain(p.id);
    expect(await a.sweepTenant(p.id, true)).toMatchObject({ members: 1 });
    expect((await members.get(p.id, member.id)).state).toBe('anonymised');
    expect(await due(p.id)).toEqual([]);
  });

  it('an erasure grace of some days keeps the member deleted until it has passed', async () => {
    const p = await programs.create({ program_name: 'G', currency_name: 'pts', settings: { erasure_grace_days: 3 } });
    const at = (await programs.now(`${p.id}_test`)).toISOString();
    const { member } = await members.enrol(`${p.id}_test`, { email: 'grace@example.com' }, at);
    await erasing.erase(`${p.id}_test`, member.id, at);
    expect(await a.dueTenants()).not.toContain(`${p.id}_test`);
    await a.sweepTenant(`${p.id}_test`, true);
    expect((await members.get(`${p.id}_test`, member.id)).state).toBe('deleted');
    await programs.advanceTestClock(p.id, 3 * DAY);
    expect(await a.dueTenants()).toContain(`${p.id}_test`);
    await a.sweepTenant(`${p.id}_test`, true);
    expect((await members.get(`${p.id}_test`, member.id)).state).toBe('anonymised');
  });
});
