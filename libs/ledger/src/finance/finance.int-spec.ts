import { INestMicroservice } from '@nestjs/common';
import type { InboundEvent, Rule } from '@loyalty/contracts';
import { decideIssueRedemption, decideVoidRedemption, spendingRules } from '@loyalty/domain-member';
import { EVENT_STORE_MIGRATIONS, PROJECTION_MIGRATIONS, PostgresEventStore, ProjectionRunner } from '@loyalty/event-store';
import { ProblemError, newId } from '@loyalty/platform';
import { PROGRAM_MIGRATIONS, ProgramStore } from '@loyalty/programs';
import { createTestDatabase, TestDatabase } from '@loyalty/testing';
import { LedgerReadModels } from '../ledger.read-models';
import { LEDGER_MIGRATIONS } from '../ledger.migrations';
import { startLedgerTestApp } from '../ledger.test-app';
import { LiabilityService } from '../liability/liability.service';
import { MembersService } from '../members/members.service';
import { EraseMemberService } from '../erase/erase-member.service';
import { ReadMembersService } from '../read-members/read-members.service';
import { OrdersService } from '../orders/orders.service';
import { outstandingMovement } from './finance.figures';
import { FinanceProjection } from './finance.projection';
import { replayRollForward } from './finance.replay';
import { FinanceService, RollForward } from './finance.service';

const HOUR = 3600;

/** A small deterministic PRNG (mulberry32), so a failing history can be replayed. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const movementsSum = (r: RollForward) => outstandingMovement({
  earned: r.movements.earned_cents, adjusted: r.movements.adjusted_cents, redeemed: r.movements.redeemed_cents, restored: r.movements.restored_cents,
  expired: r.movements.expired_cents, reversed: r.movements.reversed_cents, rejected: r.movements.rejected_cents,
});

/**
 * Closing the books (decisions §9a) against real PostgreSQL: a sandbox programme lives through six
 * weeks of test-clock time (orders earning posted, pending and under-review points, fulfilments,
 * refunds, cancellations, reviews, redemptions and voids, a migration import reversed after the
 * members spent, expiries, erasures); at every cut the finance projection's figures equal a full
 * replay of the event store, the roll-forward identity holds and roll-forwards chain.
 */
describe('closing the books (PostgreSQL)', () => {
  let db: TestDatabase;
  let app: INestMicroservice;
  let store: PostgresEventStore;
  let programs: ProgramStore;
  let members: MembersService;
  let erasing: EraseMemberService;
  let reading: ReadMembersService;
  let orders: OrdersService;
  let finance: FinanceService;
  let readModels: LedgerReadModels;
  let tenant: string;
  const cuts: Date[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('finance', { migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS, ...PROGRAM_MIGRATIONS, ...LEDGER_MIGRATIONS], poolMax: 40 });
    const started = await startLedgerTestApp(db);
    ({ app, store, programs, members, erasing, reading, orders, finance, readModels } = started);
    const { reviews, sweeps, migrations } = started;

    const rules: Partial<Rule>[] = [
      { id: 'base', name: 'Base 2 %', type: 'base', earn_rate_pct: 2, timing: 'paid' },
      { id: 'ship', name: 'Shipped +3 %', type: 'category_boost', earn_rate_pct: 3, timing: 'fulfilled', tags: ['ship'] },
      { id: 'vip', name: 'VIP +5 % (reviewed)', type: 'category_boost', earn_rate_pct: 5, timing: 'manual', tags: ['vip'] },
    ];
    const p = await programs.create({ program_name: 'Books', currency_name: 'points', rules, settings: { expiry: { policy: 'fixed_days', days: 12 } } });
    tenant = `${p.id}_test`;
    const rnd = prng(9);
    const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)];
    const now = async () => (await programs.now(tenant)).toISOString();
    const emails: string[] = [];
    const paid: { ref: string; email: string; gross: number }[] = [];
    const vouchers: { member: string; id: string }[] = [];
    const send = (event: Record<string, unknown>) =>
      orders.process({ tenant, event_id: newId('EV'), received_at: new Date().toISOString(), event: event as unknown as InboundEvent });

    // a migration import: balances from the previous system, reversed later after some were spent
    const imported = Array.from({ length: 6 }, (_, i) => ({ email: `migrated${i}@example.com`, amount_cents: 2_000 + 500 * i }));
    const batch = await migrations.import(tenant, imported, 'books-import');
    emails.push(...imported.map((e) => e.email));
    cuts.push(new Date(await now()));

    for (let step = 0; step < 36; step++) {
      await programs.advanceTestClock(p.id, 5 * HOUR + Math.floor(rnd() * 20 * HOUR));
      for (let i = 0; i < 2; i++) {
        const email = `m${step}-${i}@example.com`;
        await members.enrol(tenant, { email }, await now());
        emails.push(email);
      }
      for (let i = 0; i < 4; i++) {
        const email = pick(emails);
        const ref = `O-${step}-${i}`;
        const gross = 5_000 + Math.floor(rnd() * 40_000);
        const tags = rnd() < 0.5 ? ['ship'] : rnd() < 0.5 ? ['vip'] : [];
        const r = await send({ type: 'order.paid', order_ref: ref, gross_cents: gross, email, lines: [{ amount_cents: gross, quantity: 1, gift_card: false, tags }] });
        if (r.status === 'completed') paid.push({ ref, email, gross });
      }
      // fulfil, refund or cancel some earlier orders
      for (const o of paid.filter(() => rnd() < 0.15)) {
        const roll = rnd();
        if (roll < 0.5) await send({ type: 'order.fulfilled', order_ref: o.ref, gross_cents: o.gross, email: o.email });
        else if (roll < 0.8) await send({ type: 'order.refunded', order_ref: o.ref, email: o.email, refund_ref: `R-${step}-${o.ref}`, refunded_cents: Math.floor(o.gross / 3) });
        else await send({ type: 'order.cancelled', order_ref: o.ref, email: o.email });
      }
      // review what waits for a person
      const { rows: waiting } = await db.pool.query<{ id: string }>(`select id from ledger.finance_entries where tenant = $1 and status = 'under_review' order by id`, [tenant]);
      for (const w of waiting) if (rnd() < 0.6) await reviews.review(tenant, w.id, rnd() < 0.5 ? 'approve' : 'reject', 'finance-test').catch(() => undefined);
      // redeem from members who have points; void some vouchers
      const { rows: rich } = await db.pool.query<{ member_id: string; available_cents: string }>(
        `select member_id, available_cents from ledger.members where tenant = $1 and available_cents > 300 and state not in ('deleted','anonymised') order by member_id limit 3`, [tenant]);
      for (const m of rich) {
        const amount = 100 + Math.floor(rnd() * (Number(m.available_cents) - 150));
        const at = await now();
        const redemptionId = newId('RD');
        await members.decide(tenant, m.member_id, (s) => ({
          events: decideIssueRedemption(s, spendingRules({}), {
            redemption_id: redemptionId, entry_id: newId('LE'), code: `RWD-${step}`, mode: 'voucher', amount_cents: amount, order_ref: null,
            expires_at: new Date(Date.parse(at) + 30 * 86_400_000).toISOString(), cause: `redeem:${redemptionId}`, at,
          }), result: null,
        })).catch((e) => { if (!(e instanceof ProblemError)) throw e; });
        vouchers.push({ member: m.member_id, id: redemptionId });
      }
      if (step % 4 === 3 && vouchers.length) {
        const v = vouchers.shift()!;
        const at = await now();
        await members.decide(tenant, v.member, (s) => ({ events: s.vouchers.has(v.id) ? decideVoidRedemption(s, { redemption_id: v.id, reverse_entry_id: newId('LE'), at }) : [], result: null }))
          .catch((e) => { if (!(e instanceof ProblemError)) throw e; });
      }
      if (step === 14) await migrations.reverse(batch.batch_id); // members who spent migrated points go negative
      if (step % 9 === 8) {
        const victim = emails.splice(Math.floor(rnd() * emails.length), 1)[0];
        const id = (await reading.list(tenant, { email: victim })).data[0]?.id;
        if (id) await erasing.erase(tenant, id, await now());
      }
      await sweeps.sweepTenant(tenant, true);
      cuts.push(new Date(await now()));
    }
  }, 600_000);

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('lived a history that exercises every movement kind and a negative balance', async () => {
    const last = cuts[cuts.length - 1];
    const { roll, atTo } = await replayRollForward(store, tenant, new Date(0), last);
    expect(roll.movements.earned_cents).toBeGreaterThan(0);
    expect(roll.movements.adjusted_cents).toBeGreaterThan(0);
    expect(roll.movements.redeemed_cents).toBeGreaterThan(0);
    expect(roll.movements.restored_cents).toBeGreaterThan(0);
    expect(roll.movements.expired_cents).toBeGreaterThan(0);
    expect(roll.movements.reversed_cents).toBeGreaterThan(0);
    expect(roll.movements.rejected_cents).toBeGreaterThan(0);
    expect(atTo.negative).toBeGreaterThan(0);
    expect(atTo.pending).toBeGreaterThan(0);
  });

  it('as_of: at every cut the projection equals a full replay (balances, members, lifetime figures, negative balances)', async () => {
    for (const t of cuts) {
      const l = await finance.liabilityAt(tenant, t.toISOString());
      const { atTo } = await replayRollForward(store, tenant, new Date(0), t);
      expect({ at: t.toISOString(), ...l }).toEqual({
        at: t.toISOString(), as_of: t.toISOString(),
        outstanding_cents: atTo.available + atTo.pending, available_cents: atTo.available, pending_cents: atTo.pending,
        lifetime_issued_cents: atTo.issued, lifetime_redeemed_cents: atTo.lifetime_redeemed, members: atTo.members, negative_balance_cents: atTo.negative,
      });
    }
  }, 120_000);

  it('at the programme\'s current time, as_of equals today\'s figure from the members read model', async () => {
    const liability = app.get(LiabilityService);
    liability.clear(tenant);
    const today = await liability.get(tenant);
    const at = await finance.liabilityAt(tenant, (await programs.now(tenant)).toISOString());
    const { as_of: _a, ...a } = today;
    const { as_of: _b, ...b } = at;
    expect(b).toEqual(a);
    expect(a.negative_balance_cents).toBeGreaterThan(0);
  });

  it('roll-forward: equals the replay for many periods; opening + movements = closing exactly; periods chain', async () => {
    const pairs: [Date, Date][] = [];
    for (let i = 0; i < cuts.length; i += 5) for (let j = i + 3; j < cuts.length; j += 7) pairs.push([cuts[i], cuts[j]]);
    pairs.push([new Date(cuts[0].getTime() - 1), cuts[cuts.length - 1]]);
    for (const [f, t] of pairs) {
      const r = await finance.rollForward(tenant, { from: f.toISOString(), to: t.toISOString() });
      const { roll } = await replayRollForward(store, tenant, f, t);
      expect(r).toEqual(roll);
      expect(r.closing.outstanding_cents).toBe(r.opening.outstanding_cents + movementsSum(r));
    }
    // chaining, at instants that fall mid-day (the daily sums and the day's movements meet there)
    const f = cuts[2];
    const t = cuts[cuts.length - 1];
    const ms = [f.getTime(), f.getTime() + 1, Math.floor((f.getTime() + t.getTime()) / 2), cuts[20].getTime() - 1, t.getTime()].sort((a, b) => a - b).map((x) => new Date(x).toISOString());
    const rolls = [];
    for (let i = 0; i + 1 < ms.length; i++) rolls.push(await finance.rollForward(tenant, { from: ms[i], to: ms[i + 1] }));
    const whole = await finance.rollForward(tenant, { from: ms[0], to: ms[ms.length - 1] });
    for (let i = 0; i + 1 < rolls.length; i++) expect(rolls[i].closing).toEqual(rolls[i + 1].opening);
    expect(rolls[0].opening).toEqual(whole.opening);
    expect(rolls[rolls.length - 1].closing).toEqual(whole.closing);
    for (const k of Object.keys(whole.movements) as (keyof RollForward['movements'])[]) {
      expect(rolls.reduce((s, r) => s + r.movements[k], 0)).toBe(whole.movements[k]);
    }
    expect(whole.breakage.rate_bps).toBeGreaterThan(0);
  }, 120_000);

  it('ledger-entries: every entry of the period once, oldest first, with its current status; type filter; keyset walk', async () => {
    const from = cuts[3];
    const to = cuts[30];
    const walk = async (q: Record<string, unknown>) => {
      const out: Awaited<ReturnType<FinanceService['entries']>>['data'] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await finance.entries(tenant, { ...q, limit: '7', cursor });
        out.push(...page.data);
        if (!page.pagination.cursor) return out;
        cursor = page.pagination.cursor;
      }
    };
    const got = await walk({ from: from.toISOString(), to: to.toISOString() });
    // the members' own ledgers (the aggregate) are the truth
    const { rows } = await db.pool.query<{ member_id: string }>('select member_id from ledger.members where tenant = $1', [tenant]);
    const expected: { id: string; status: string; amount_cents: number; created_at: string; member_id: string }[] = [];
    for (const { member_id } of rows) {
      const s = await members.load(tenant, member_id);
      for (const e of s.entries.values()) {
        const at = Date.parse(e.created_at);
        if (at > from.getTime() && at <= to.getTime()) expected.push({ id: e.id, status: e.status, amount_cents: e.amount_cents, created_at: new Date(at).toISOString(), member_id });
      }
    }
    expected.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1));
    expect(got.map((e) => ({ id: e.id, status: e.status, amount_cents: e.amount_cents, created_at: e.created_at, member_id: e.member_id }))).toEqual(expected);
    expect(expected.length).toBeGreaterThan(50);
    expect(got[0]).toMatchObject({ currency: 'points' });
    const redeems = await walk({ from: from.toISOString(), to: to.toISOString(), type: 'redeem' });
    expect(redeems.map((e) => e.id)).toEqual(got.filter((e) => e.type === 'redeem').map((e) => e.id));
  }, 120_000);

  it('refuses bad instants and periods with the offending field', async () => {
    const now = await programs.now(tenant);
    const future = new Date(now.getTime() + 60_000).toISOString();
    const paths = async (f: () => Promise<unknown>) => {
      try { await f(); } catch (e) { if (e instanceof ProblemError && e.problem.slug === 'validation') return e.problem.errors!.map((x) => x.path); throw e; }
      throw new Error('not refused');
    };
    expect(await paths(() => finance.liabilityAt(tenant, 'yesterday'))).toEqual(['/as_of']);
    expect(await paths(() => finance.liabilityAt(tenant, '2026-01-31'))).toEqual(['/as_of']);
    expect(await paths(() => finance.liabilityAt(tenant, future))).toEqual(['/as_of']);
    expect(await paths(() => finance.rollForward(tenant, {}))).toEqual(['/from', '/to']);
    expect(await paths(() => finance.rollForward(tenant, { from: cuts[5].toISOString(), to: cuts[2].toISOString() }))).toEqual(['/from']);
    expect(await paths(() => finance.rollForward(tenant, { from: cuts[5].toISOString(), to: future }))).toEqual(['/to']);
    expect(await paths(() => finance.entries(tenant, { limit: '0', type: 'gift', cursor: 'nope' }))).toEqual(['/type', '/limit', '/cursor']);
  });

  it('the finance projection rebuilt from the event store equals the live one', async () => {
    const snapshot = async () => {
      const m = await db.pool.query(`select tenant, at, member_id, event_id, d_available, d_pending, d_negative, d_members, d_issued, d_lifetime_redeemed,
        earned, adjusted, redeemed, restored, expired, reversed, rejected from ledger.finance_movements order by event_id`);
      const d = await db.pool.query('select * from ledger.finance_daily order by tenant, day');
      const e = await db.pool.query('select * from ledger.finance_entries order by tenant, id');
      return { m: m.rows, d: d.rows, e: e.rows };
    };
    const before = await snapshot();
    expect(before.m.length).toBeGreaterThan(100);
    const runner = new ProjectionRunner(store, db.pool, new FinanceProjection(store));
    await runner.rebuild();
    await runner.stop();
    expect(await snapshot()).toEqual(before);
    // and the live runner carries on from the rebuilt checkpoint
    const r = await finance.rollForward(tenant, { from: cuts[0].toISOString(), to: cuts[cuts.length - 1].toISOString() });
    expect(r.closing.outstanding_cents).toBe(r.opening.outstanding_cents + movementsSum(r));
    expect(readModels.runners.length).toBe(1);
  });
});
