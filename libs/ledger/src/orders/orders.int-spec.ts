import { INestMicroservice } from '@nestjs/common';
import fc from 'fast-check';
import type { InboundEvent, LedgerEntryView, MemberView, Program, ProcessEventReply, Rule, Tier } from '@loyalty/contracts';
import { PATTERNS, memberStreamId as memberStream, orderStreamId } from '@loyalty/contracts';
import { decideOpenReservation, memberEvolver, spendingRules } from '@loyalty/domain-member';
import { CommandHandler, EVENT_STORE_MIGRATIONS, PROJECTION_MIGRATIONS, PostgresEventStore } from '@loyalty/event-store';
import { InProcessBus } from '@loyalty/messaging';
import { ProblemError, newId } from '@loyalty/platform';
import { PROGRAM_MIGRATIONS, ProgramStore } from '@loyalty/programs';
import { createTestDatabase, TestDatabase } from '@loyalty/testing';
import { LedgerReadModels } from '../ledger.read-models';
import { LEDGER_MIGRATIONS } from '../ledger.migrations';
import { startLedgerTestApp } from '../ledger.test-app';
import { LiabilityService } from '../liability/liability.service';
import { MembersService } from '../members/members.service';
import { AdjustPointsService } from '../adjust/adjust-points.service';
import { EraseMemberService } from '../erase/erase-member.service';
import { ReadMembersService } from '../read-members/read-members.service';
import { ChangeMemberStateService } from '../member-state/change-member-state.service';
import { orderEvolver } from '@loyalty/domain-order';
import { OrdersService } from './orders.service';

/**
 * Order processing against real PostgreSQL: the ledger module with its projections, driven
 * directly (OrdersService) and over the in-process bus (`ledger.event.process`).
 */
const base = (over: Partial<Rule> = {}): Partial<Rule> => ({ id: 'base', name: 'Base 1 %', type: 'base', earn_rate_pct: 1, timing: 'paid', ...over });

describe('order processing (PostgreSQL)', () => {
  let db: TestDatabase;
  let app: INestMicroservice;
  let bus: InProcessBus;
  let orders: OrdersService;
  let members: MembersService;
  let adjusting: AdjustPointsService;
  let erasing: EraseMemberService;
  let reading: ReadMembersService;
  let states: ChangeMemberStateService;
  let programs: ProgramStore;
  let readModels: LedgerReadModels;
  let handler: CommandHandler;
  let store: PostgresEventStore;
  let liability: LiabilityService;

  beforeAll(async () => {
    db = await createTestDatabase('orders', {
      migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS, ...PROGRAM_MIGRATIONS, ...LEDGER_MIGRATIONS], poolMax: 40,
    });
    ({ app, store, bus, orders, members, adjusting, erasing, reading, states, programs, readModels, handler, liability } = await startLedgerTestApp(db));
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const program = (input: { rules?: Partial<Rule>[]; tiers?: Partial<Tier>[]; settings?: Partial<Program['settings']> } = {}) =>
    programs.create({ program_name: 'Orders', currency_name: 'points', rules: input.rules ?? [base()], tiers: input.tiers, settings: input.settings });

  const send = (tenant: string, event: Record<string, unknown>, eventId: string = newId('EV')): Promise<ProcessEventReply> =>
    orders.process({ tenant, event_id: eventId, received_at: new Date().toISOString(), event: event as unknown as InboundEvent });

  const viaBus = (tenant: string, event: Record<string, unknown>, eventId: string): Promise<ProcessEventReply> =>
    bus.request<ProcessEventReply>(PATTERNS.ledger.processEvent, { tenant, event_id: eventId, received_at: new Date().toISOString(), event });

  const view = (tenant: string, id: string): Promise<MemberView> => members.get(tenant, id);
  const ledger = async (tenant: string, id: string): Promise<LedgerEntryView[]> => (await reading.entries(tenant, id, { limit: 200 })).data;
  const memberOf = async (tenant: string, email: string): Promise<string> => (await reading.list(tenant, { email })).data[0].id;

  /** The ledger explains the balances: available = Σ posted + reversed, pending = Σ pending + under_review; the read model agrees. */
  const expectConsistent = async (tenant: string, id: string): Promise<MemberView> => {
    const m = await view(tenant, id);
    const entries = await ledger(tenant, id);
    const sum = (statuses: string[]) => entries.filter((e) => statuses.includes(e.status)).reduce((a, e) => a + e.amount_cents, 0);
    expect(sum(['posted', 'reversed'])).toBe(m.balances.available_cents);
    expect(sum(['pending', 'under_review'])).toBe(m.balances.pending_cents);
    // the members read model catches up before it is read (writes do not wait for it)
    await readModels.catchUp();
    const { rows } = await db.pool.query('select available_cents, pending_cents from ledger.members where tenant = $1 and member_id = $2', [tenant, id]);
    expect({ a: Number(rows[0].available_cents), p: Number(rows[0].pending_cents) }).toEqual({ a: m.balances.available_cents, p: m.balances.pending_cents });
    return m;
  };

  it('earns on order.paid for an unknown customer (a prospect), with an explainable entry', async () => {
    const p = await program({ rules: [base({ expiry_months: 12 }), { id: 'shoes', name: 'Shoes +2 %', type: 'category_boost', earn_rate_pct: 2, timing: 'paid', tags: ['shoes'] }] });
    const r = await send(p.id, {
      type: 'order.paid', order_ref: 'A-1', gross_cents: 12_345, email: 'Ana@Example.com',
      lines: [{ amount_cents: 10_000, quantity: 1, gift_card: false, tags: ['shoes'] }, { amount_cents: 2_345, quantity: 1, gift_card: true }],
    });
    expect(r.status).toBe('completed');
    expect(r.error).toBeNull();
    const id = await memberOf(p.id, 'ana@example.com');
    const m = await expectConsistent(p.id, id);
    expect(m.state).toBe('prospect');
    // eligible = min(12 345, 10 000 non-gift-card) = 10 000: base 100, boost 200
    expect(m.balances).toMatchObject({ available_cents: 300, pending_cents: 0, lifetime_earned_cents: 300 });
    const entries = await ledger(p.id, id);
    expect(entries.map((e) => e.id)).toEqual(r.ledger_entry_ids);
    expect(entries[0]).toMatchObject({ type: 'earn', status: 'posted', amount_cents: 100, rule: 'base', reason_code: 'base', order_ref: 'A-1', parent_entry_id: null, currency: 'points' });
    expect(entries[0].id).toMatch(/^LE-[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(Date.parse(entries[0].expires_at!)).toBeGreaterThan(Date.now() + 360 * 86_400_000);
    expect(entries[1]).toMatchObject({ amount_cents: 200, rule: 'shoes', reason_code: 'category_boost' });
  });

  it.each([1, 2, 10])('credits exactly once when the same event is processed %i times, one after another', async (n) => {
    const p = await program();
    const eventId = newId('EV');
    const event = { type: 'order.paid', order_ref: 'B-1', gross_cents: 50_000, customer_ref: 'cust-1' };
    const replies: ProcessEventReply[] = [];
    for (let i = 0; i < n; i++) replies.push(await send(p.id, event, eventId));
    expect(new Set(replies.map((r) => JSON.stringify(r))).size).toBe(1);
    expect(replies[0]).toMatchObject({ status: 'completed', ledger_entry_ids: [expect.any(String)] });
    const id = await members.resolveId(p.id, 'ref:cust-1');
    expect((await expectConsistent(p.id, id)).balances.available_cents).toBe(500);
    expect(await ledger(p.id, id)).toHaveLength(1);
  });

  it.each([2, 10])('credits exactly once when the same event arrives %i times at once (directly and over the bus)', async (n) => {
    const p = await program();
    const eventId = newId('EV');
    const event = { type: 'order.paid', order_ref: 'C-1', gross_cents: 20_000, email: `c${n}@example.com` };
    const replies = await Promise.all(Array.from({ length: n }, (_, i) => (i % 2 ? viaBus(p.id, event, eventId) : send(p.id, event, eventId))));
    expect(new Set(replies.map((r) => JSON.stringify(r))).size).toBe(1);
    const id = await memberOf(p.id, `c${n}@example.com`);
    expect((await expectConsistent(p.id, id)).balances.available_cents).toBe(200);
    expect(await ledger(p.id, id)).toHaveLength(1);
    // another event id for the same order and type (a caller's own Idempotency-Key) earns nothing more
    const other = await send(p.id, event);
    expect(other).toEqual({ status: 'completed', error: null, ledger_entry_ids: [] });
    expect(await ledger(p.id, id)).toHaveLength(1);
  });

  it('loses no update when many orders of one member are processed concurrently', async () => {
    const p = await program();
    const replies = await Promise.all(Array.from({ length: 25 }, (_, i) => send(p.id, { type: 'order.paid', order_ref: `D-${i}`, gross_cents: 1_000 * (i + 1), phone: '+14155550123' })));
    expect(replies.every((r) => r.status === 'completed' && r.ledger_entry_ids.length === 1)).toBe(true);
    const id = await members.resolveId(p.id, 'phone:+14155550123');
    const m = await expectConsistent(p.id, id);
    expect(m.balances.available_cents).toBe(Array.from({ length: 25 }, (_, i) => 10 * (i + 1)).reduce((a, b) => a + b, 0));
    expect(await ledger(p.id, id)).toHaveLength(25);
  });

  it('names the customer by customer_ref, email, phone or customer{}; later events may omit it; an unseen order naming nobody fails', async () => {
    const p = await program({ rules: [base({ timing: 'fulfilled' })] });
    await send(p.id, { type: 'order.placed', order_ref: 'E-1', gross_cents: 10_000, customer: { email: 'eve@example.com', phone: '+442079460000' } });
    const id = await memberOf(p.id, 'eve@example.com');
    expect((await view(p.id, id)).phone).toBe('+442079460000');
    expect((await send(p.id, { type: 'order.paid', order_ref: 'E-1', gross_cents: 10_000 })).status).toBe('completed');
    expect((await view(p.id, id)).balances).toMatchObject({ pending_cents: 100, available_cents: 0 });
    expect((await send(p.id, { type: 'order.fulfilled', order_ref: 'E-1', gross_cents: 10_000 })).ledger_entry_ids).toEqual([]);
    expect((await expectConsistent(p.id, id)).balances).toMatchObject({ pending_cents: 0, available_cents: 100 });
    // the same phone on another order finds the same member
    await send(p.id, { type: 'order.paid', order_ref: 'E-2', gross_cents: 1_000, phone: '+44 20 7946 0000' });
    expect(await ledger(p.id, id)).toHaveLength(2);
    const unmatched = await send(p.id, { type: 'order.paid', order_ref: 'E-3', gross_cents: 1_000 });
    expect(unmatched.status).toBe('failed');
    expect(unmatched.error).toMatch(/unmatched/);
    expect(unmatched.ledger_entry_ids).toEqual([]);
  });

  it('customer.created / customer.updated find or create the member by email and enrich phone and external_ref', async () => {
    const p = await program();
    expect(await send(p.id, { type: 'customer.created', email: 'Cus@Example.com', phone: '+14155550999' })).toEqual({ status: 'completed', error: null, ledger_entry_ids: [] });
    const id = await memberOf(p.id, 'cus@example.com');
    expect(await view(p.id, id)).toMatchObject({ state: 'prospect', phone: '+14155550999', external_ref: null });
    await send(p.id, { type: 'customer.updated', email: 'cus@example.com', external_ref: 'shop-77' });
    expect(await view(p.id, id)).toMatchObject({ external_ref: 'shop-77' });
    await send(p.id, { type: 'order.paid', order_ref: 'F-1', gross_cents: 3_000, customer_ref: 'shop-77' });
    expect((await view(p.id, id)).balances.available_cents).toBe(30);
    // a phone of another member is refused with a readable error
    await send(p.id, { type: 'customer.created', email: 'other@example.com', phone: '+14155550888' });
    const clash = await send(p.id, { type: 'customer.updated', email: 'cus@example.com', phone: '+14155550888' });
    expect(clash.status).toBe('failed');
    expect(clash.error).toMatch(/different members/);
    // a prospect known only by ref gains its email, which then finds it
    await send(p.id, { type: 'order.paid', order_ref: 'F-2', gross_cents: 1_000, customer_ref: 'ref-only' });
    const refOnly = await members.resolveId(p.id, 'ref:ref-only');
    await send(p.id, { type: 'customer.updated', email: 'late@example.com', external_ref: 'ref-only' });
    expect(await memberOf(p.id, 'late@example.com')).toBe(refOnly);
  });

  it('an older aggregate_version never overwrites a newer one, in any arrival order', async () => {
    const p = await program({ rules: [base({ timing: 'delivered' })] });
    let run = 0;
    await fc.assert(fc.asyncProperty(fc.shuffledSubarray([1, 2, 3, 4], { minLength: 4, maxLength: 4 }), async (versions) => {
      const ref = `G-${run++}`;
      const types = { 1: 'order.placed', 2: 'order.paid', 3: 'order.fulfilled', 4: 'order.delivered' } as Record<number, string>;
      let highest = 0;
      for (const v of versions) {
        const r = await send(p.id, { type: types[v], order_ref: ref, gross_cents: 10_000 * v, aggregate_version: v, email: 'g@example.com' });
        if (v < highest) {
          expect(r.status).toBe('failed');
          expect(r.error).toContain(`aggregate_version ${v} is older than version ${highest}`);
        } else {
          expect(r.status).toBe('completed');
          highest = v;
        }
      }
      const { state } = await handler.load(orderStreamId(p.id, ref), orderEvolver);
      expect(state.version).toBe(4);
      // the rejected events wrote nothing: the order saw only the accepted ones
      expect(state.processed.size).toBe(versions.filter((v, i) => v >= Math.max(0, ...versions.slice(0, i))).length);
    }), { numRuns: 12 });
    await expectConsistent(p.id, await memberOf(p.id, 'g@example.com'));
  });

  it('refunds take back cumulatively (property: random partial refund sequences through the real service)', async () => {
    const p = await program({ rules: [base({ earn_rate_pct: 3 }), { id: 'later', name: 'On delivery', type: 'base', earn_rate_pct: 2, timing: 'delivered' }] });
    let run = 0;
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 1, max: 2_000_000 }),
      fc.array(fc.integer({ min: 1, max: 900_000 }), { minLength: 1, maxLength: 5 }),
      async (gross, refunds) => {
        const ref = `H-${run++}`;
        const email = `h${run}@example.com`;
        await send(p.id, { type: 'order.paid', order_ref: ref, gross_cents: gross, email });
        const id = await memberOf(p.id, email);
        const earned = Math.floor((gross * 3) / 100) + Math.floor((gross * 2) / 100);
        let cum = 0;
        for (const [i, amount] of refunds.entries()) {
          cum += amount;
          const r = await send(p.id, { type: 'order.refunded', order_ref: ref, refund_ref: `R${i}`, refunded_cents: amount });
          expect(r.status).toBe('completed');
          const taken = cum >= gross ? earned : Math.floor((earned * cum) / gross);
          const m = await expectConsistent(p.id, id);
          expect(earned - m.balances.available_cents - m.balances.pending_cents).toBe(taken);
          for (const eid of r.ledger_entry_ids) {
            const e = (await ledger(p.id, id)).find((x) => x.id === eid)!;
            expect(e).toMatchObject({ type: 'reverse', reason_code: 'refund', parent_entry_id: expect.stringMatching(/^LE-/) });
            expect(e.amount_cents).toBeLessThan(0);
          }
        }
      },
    ), { numRuns: 15 });
  });

  it('refunds and a cancellation a year later are exact after the member state let the settled earns go (issue 13: the order stream keeps their facts)', async () => {
    const p = await program({ rules: [base({ earn_rate_pct: 10 }), { id: 'boost', name: 'Boost', type: 'base', earn_rate_pct: 5, timing: 'paid' }] });
    const tenant = `${p.id}_test`; // the sandbox: its clock can be moved
    await send(tenant, { type: 'order.paid', order_ref: 'Y-1', gross_cents: 10_001, email: 'yara@example.com' });
    await send(tenant, { type: 'order.paid', order_ref: 'Y-2', gross_cents: 3_333, email: 'yara@example.com' });
    const id = await memberOf(tenant, 'yara@example.com');
    const earnIds = (await ledger(tenant, id)).filter((e) => e.type === 'earn').map((e) => e.id);
    expect(earnIds).toHaveLength(4);
    // a year of other activity: the member's clock moves on and compaction runs (every 32 events)
    for (let i = 0; i < 40; i++) {
      await programs.advanceTestClock(p.id, 10 * 86_400);
      await send(tenant, { type: 'order.paid', order_ref: `Y-x${i}`, gross_cents: 100, email: 'yara@example.com' });
    }
    const { state } = await handler.load(memberStream(tenant, id), memberEvolver);
    for (const e of earnIds) expect(state.entries.has(e)).toBe(false); // let go
    const before = (await view(tenant, id)).balances;
    // Y-1 earned 1 000 + 500: a refund of a third takes back floor(1 500 × 3 334 / 10 001) = 500, then the rest
    const r1 = await send(tenant, { type: 'order.refunded', order_ref: 'Y-1', refund_ref: 'R1', refunded_cents: 3_334 });
    expect(r1.status).toBe('completed');
    expect((await view(tenant, id)).balances.available_cents).toBe(before.available_cents - 500);
    const r2 = await send(tenant, { type: 'order.refunded', order_ref: 'Y-1', refund_ref: 'R2', refunded_cents: 6_667 });
    expect((await view(tenant, id)).balances.available_cents).toBe(before.available_cents - 1_500);
    // the same refund again is the same refund
    expect(await send(tenant, { type: 'order.refunded', order_ref: 'Y-1', refund_ref: 'R2', refunded_cents: 6_667 })).toEqual(r2);
    // Y-2 earned 333 + 166; cancelled: all of it
    const c = await send(tenant, { type: 'order.cancelled', order_ref: 'Y-2' });
    expect(c.ledger_entry_ids).toHaveLength(2);
    const after = await expectConsistent(tenant, id);
    expect(after.balances.available_cents).toBe(before.available_cents - 1_500 - 499);
    expect(after.balances.lifetime_earned_cents).toBe(before.lifetime_earned_cents - 1_999);
    // the read model shows every earn of both orders fully taken back, and the take-backs name them
    const rows = await ledger(tenant, id);
    for (const e of earnIds) expect(rows.find((x) => x.id === e)?.status).toBe('reversed');
    const takeBacks = rows.filter((x) => x.type === 'reverse');
    expect(takeBacks.reduce((a, x) => a + x.amount_cents, 0)).toBe(-1_999);
    expect(new Set(takeBacks.map((x) => x.parent_entry_id))).toEqual(new Set(earnIds));
  });

  it('a refund takes from pending earns first; the balance may go negative when points were spent', async () => {
    const p = await program({ rules: [base({ earn_rate_pct: 10 }), { id: 'rw', name: 'Return window', type: 'base', earn_rate_pct: 10, timing: 'return_window' }] });
    await send(p.id, { type: 'order.paid', order_ref: 'I-1', gross_cents: 10_000, email: 'ivy@example.com' });
    const id = await memberOf(p.id, 'ivy@example.com');
    expect((await view(p.id, id)).balances).toMatchObject({ available_cents: 1_000, pending_cents: 1_000 });
    const half = await send(p.id, { type: 'order.refunded', order_ref: 'I-1', refund_ref: 'R1', refunded_cents: 5_000 });
    const entries = await ledger(p.id, id);
    const [rev] = entries.filter((e) => half.ledger_entry_ids.includes(e.id));
    // the whole pending earn was taken back: the pair cancels out (both `reversed`), the posted earn is untouched
    const rw = entries.find((e) => e.rule === 'rw' && e.type === 'earn')!;
    expect(rev).toMatchObject({ amount_cents: -1_000, status: 'reversed', parent_entry_id: rw.id });
    expect(rw.status).toBe('reversed');
    expect(entries.find((e) => e.rule === 'base' && e.type === 'earn')!.status).toBe('posted');
    expect((await expectConsistent(p.id, id)).balances).toMatchObject({ available_cents: 1_000, pending_cents: 0 });
    await adjusting.adjust(p.id, id, { amount_cents: -1_000, reason_code: 'spent' }, new Date().toISOString());
    const rest = await send(p.id, { type: 'order.refunded', order_ref: 'I-1', refund_ref: 'R2', refunded_cents: 9_000 });
    expect(rest.ledger_entry_ids).toHaveLength(1);
    expect((await expectConsistent(p.id, id)).balances).toMatchObject({ available_cents: -1_000, pending_cents: 0 });
    // the same refund_ref under a new event id is the same refund
    const again = await send(p.id, { type: 'order.refunded', order_ref: 'I-1', refund_ref: 'R2', refunded_cents: 9_000 });
    expect(again).toEqual(rest);
    expect((await view(p.id, id)).balances.available_cents).toBe(-1_000);
  });

  it('cancellation reverses every earn of the order; later events of it fail', async () => {
    const p = await program({ rules: [base(), { id: 'f', name: 'On fulfilment', type: 'base', earn_rate_pct: 1, timing: 'fulfilled' }, { id: 'm', name: 'Manual', type: 'base', earn_rate_pct: 1, timing: 'manual' }] });
    await send(p.id, { type: 'order.paid', order_ref: 'J-1', gross_cents: 100_000, email: 'jo@example.com' });
    await send(p.id, { type: 'order.refunded', order_ref: 'J-1', refund_ref: 'R1', refunded_cents: 10_000 });
    const id = await memberOf(p.id, 'jo@example.com');
    expect((await view(p.id, id)).balances).toMatchObject({ available_cents: 1_000, pending_cents: 1_700 });
    const c = await send(p.id, { type: 'order.cancelled', order_ref: 'J-1' });
    expect(c.status).toBe('completed');
    expect(c.ledger_entry_ids.length).toBeGreaterThanOrEqual(3);
    const m = await expectConsistent(p.id, id);
    expect(m.balances).toMatchObject({ available_cents: 0, pending_cents: 0 });
    for (const e of (await ledger(p.id, id)).filter((x) => x.type === 'earn')) expect(e.status).toBe('reversed');
    expect(await send(p.id, { type: 'order.cancelled', order_ref: 'J-1' })).toEqual(c);
    const late = await send(p.id, { type: 'order.fulfilled', order_ref: 'J-1', gross_cents: 100_000 });
    expect(late).toMatchObject({ status: 'failed', error: expect.stringMatching(/cancelled/) });
    // tier activity: the cancelled order no longer counts
    const s = await members.load(p.id, id);
    expect(s.activity.reduce((a, x) => a + x.orders, 0)).toBe(0);
    expect(s.activity.reduce((a, x) => a + x.spend, 0)).toBe(0);
  });

  it('paused, suspended and deleted members: order events fail with the reason and write nothing', async () => {
    const p = await program();
    const at = new Date().toISOString();
    const { member } = await members.enrol(p.id, { email: 'pat@example.com' }, at);
    await states.changeState(p.id, member.id, 'pause', at);
    const paused = await send(p.id, { type: 'order.paid', order_ref: 'K-1', gross_cents: 10_000, email: 'pat@example.com' });
    expect(paused).toMatchObject({ status: 'failed', ledger_entry_ids: [] });
    expect(paused.error).toMatch(/paused/);
    await states.changeState(p.id, member.id, 'resume', at);
    await states.changeState(p.id, member.id, 'suspend', at);
    expect((await send(p.id, { type: 'order.paid', order_ref: 'K-2', gross_cents: 10_000, email: 'pat@example.com' })).error).toMatch(/suspended/);
    expect(await ledger(p.id, member.id)).toEqual([]);
    await states.changeState(p.id, member.id, 'reinstate', at);
    expect((await send(p.id, { type: 'order.paid', order_ref: 'K-1', gross_cents: 10_000, email: 'pat@example.com' })).status).toBe('completed');
    await erasing.erase(p.id, member.id, at);
    const gone = await send(p.id, { type: 'order.refunded', order_ref: 'K-1', refund_ref: 'R', refunded_cents: 100 });
    expect(gone).toMatchObject({ status: 'failed', error: expect.stringMatching(/deleted/) });
  });

  it('timings: fulfilled, delivered, return window (release_at at fulfilment), manual (approve / reject)', async () => {
    const p = await program({
      settings: { return_window_days: 14 },
      rules: [
        { id: 'f', name: 'F', type: 'base', earn_rate_pct: 1, timing: 'fulfilled' },
        { id: 'd', name: 'D', type: 'base', earn_rate_pct: 2, timing: 'delivered' },
        { id: 'rw', name: 'RW', type: 'base', earn_rate_pct: 3, timing: 'return_window' },
        { id: 'm', name: 'M', type: 'base', earn_rate_pct: 4, timing: 'manual' },
        { id: 'm2', name: 'M2', type: 'base', earn_rate_pct: 5, timing: 'manual' },
      ],
    });
    const paid = await send(p.id, { type: 'order.paid', order_ref: 'L-1', gross_cents: 10_000, email: 'lu@example.com' });
    const id = await memberOf(p.id, 'lu@example.com');
    const byRule = async (): Promise<Record<string, LedgerEntryView>> => Object.fromEntries((await ledger(p.id, id)).filter((x) => x.type === 'earn').map((x) => [x.rule, x]));
    let e = await byRule();
    expect(Object.fromEntries(Object.entries(e).map(([k, v]) => [k, v.status]))).toEqual({ f: 'pending', d: 'pending', rw: 'pending', m: 'under_review', m2: 'under_review' });
    expect(e.rw.release_at).toBeNull();
    expect((await expectConsistent(p.id, id)).balances).toMatchObject({ available_cents: 0, pending_cents: 1_500 });
    const occurred = new Date(Date.now() - 3_600_000).toISOString();
    await send(p.id, { type: 'order.fulfilled', order_ref: 'L-1', gross_cents: 10_000, occurred_at: occurred });
    e = await byRule();
    expect(e.f.status).toBe('posted');
    expect(e.d.status).toBe('pending');
    expect(e.rw.release_at).toBe(new Date(Date.parse(occurred) + 14 * 86_400_000).toISOString());
    await send(p.id, { type: 'order.delivered', order_ref: 'L-1', gross_cents: 10_000 });
    expect((await byRule()).d.status).toBe('posted');
    expect((await expectConsistent(p.id, id)).balances).toMatchObject({ available_cents: 300, pending_cents: 1_200 });
    // admin review, by entry id alone (the admin plane's tenant '*')
    const approved = await bus.request<LedgerEntryView & { member_id: string }>(PATTERNS.ledger.approveEntry, { tenant: '*', id: e.m.id });
    expect(approved).toMatchObject({ id: e.m.id, status: 'posted', member_id: id });
    expect(await bus.request(PATTERNS.ledger.approveEntry, { tenant: '*', id: e.m.id })).toMatchObject({ status: 'posted' });
    const rejected = await bus.request<LedgerEntryView>(PATTERNS.ledger.rejectEntry, { tenant: '*', id: e.m2.id });
    expect(rejected.status).toBe('rejected');
    const conflict = await bus.request(PATTERNS.ledger.approveEntry, { tenant: '*', id: e.m2.id }).catch((x: unknown) => x);
    expect(conflict).toBeInstanceOf(ProblemError);
    expect((conflict as ProblemError).problem.slug).toBe('invalid-state');
    const posted = await bus.request(PATTERNS.ledger.rejectEntry, { tenant: '*', id: e.f.id }).catch((x: unknown) => x);
    expect((posted as ProblemError).problem.slug).toBe('invalid-state');
    const unknown = await bus.request(PATTERNS.ledger.approveEntry, { tenant: '*', id: 'LE-01ARZ3NDEKTSV4RRFFQ69G5FAV' }).catch((x: unknown) => x);
    expect((unknown as ProblemError).problem.slug).toBe('not-found');
    const otherTenant = await bus.request(PATTERNS.ledger.approveEntry, { tenant: 'P-someone-else', id: e.m2.id }).catch((x: unknown) => x);
    expect((otherTenant as ProblemError).problem.slug).toBe('not-found');
    expect((await expectConsistent(p.id, id)).balances).toMatchObject({ available_cents: 700, pending_cents: 300 });
    expect(paid.ledger_entry_ids).toHaveLength(5);
  });

  it('earn_on order.placed and order.fulfilled move the earning event', async () => {
    const placed = await program({ settings: { earn_on: 'order.placed' } });
    expect((await send(placed.id, { type: 'order.placed', order_ref: 'M-1', gross_cents: 10_000, email: 'm@example.com' })).ledger_entry_ids).toHaveLength(1);
    expect((await send(placed.id, { type: 'order.paid', order_ref: 'M-1', gross_cents: 10_000 })).ledger_entry_ids).toEqual([]);
    const fulfilled = await program({ settings: { earn_on: 'order.fulfilled' } });
    expect((await send(fulfilled.id, { type: 'order.paid', order_ref: 'M-1', gross_cents: 10_000, email: 'm@example.com' })).ledger_entry_ids).toEqual([]);
    expect((await send(fulfilled.id, { type: 'order.fulfilled', order_ref: 'M-1', gross_cents: 8_000 })).ledger_entry_ids).toHaveLength(1);
    expect((await view(fulfilled.id, await memberOf(fulfilled.id, 'm@example.com'))).balances.available_cents).toBe(80);
  });

  it('campaign budgets are never overspent, even by concurrent orders of different members', async () => {
    const p = await program({ rules: [{ id: 'camp', name: 'Campaign', type: 'campaign', earn_rate_pct: 10, timing: 'paid', budget_cents: 1_050 }] });
    const replies = await Promise.all(Array.from({ length: 15 }, (_, i) => send(p.id, { type: 'order.paid', order_ref: `N-${i}`, gross_cents: 1_000, email: `n${i}@example.com` })));
    expect(replies.every((r) => r.status === 'completed')).toBe(true);
    const { rows } = await db.pool.query(`select coalesce(sum(amount_cents), 0)::int as total from ledger.campaign_budget_claims where tenant = $1`, [p.id]);
    expect(rows[0].total).toBe(1_050);
    let issued = 0;
    for (let i = 0; i < 15; i++) issued += (await view(p.id, await memberOf(p.id, `n${i}@example.com`))).balances.available_cents;
    expect(issued).toBe(1_050);
    expect(replies.filter((r) => r.ledger_entry_ids.length === 1)).toHaveLength(11);
  });

  it('earns at the tier multiplier; the order that crosses the threshold earns at the old rate', async () => {
    const p = await program({ tiers: [{ name: 'Gold', level: 1, threshold_type: 'spend', threshold_value: 10_000, earn_multiplier: 2 }] });
    await send(p.id, { type: 'order.paid', order_ref: 'O-1', gross_cents: 10_000, email: 'tia@example.com' });
    const id = await memberOf(p.id, 'tia@example.com');
    expect(await view(p.id, id)).toMatchObject({ tier: { name: 'Gold', earn_multiplier: 2 }, balances: { available_cents: 100 } });
    await send(p.id, { type: 'order.paid', order_ref: 'O-2', gross_cents: 10_000 , email: 'tia@example.com' });
    expect((await view(p.id, id)).balances.available_cents).toBe(300);
    // a refund below the threshold drops the tier
    await send(p.id, { type: 'order.refunded', order_ref: 'O-1', refund_ref: 'R', refunded_cents: 10_000 });
    await send(p.id, { type: 'order.refunded', order_ref: 'O-2', refund_ref: 'R', refunded_cents: 5_000 });
    expect((await view(p.id, id)).tier).toBeNull();
  });

  it('an order carrying reservation_id confirms that open reservation', async () => {
    const p = await program();
    const at = new Date().toISOString();
    const { member } = await members.enrol(p.id, { email: 'rosa@example.com' }, at);
    await adjusting.adjust(p.id, member.id, { amount_cents: 5_000, reason_code: 'goodwill' }, at);
    const reservationId = newId('RS');
    await members.decide(p.id, member.id, (s) => ({
      events: decideOpenReservation(s, spendingRules({}), { reservation_id: reservationId, amount_cents: 1_200, cart_ref: 'cart-1', eligible_total_cents: null, payment_method: null, expires_at: new Date(Date.now() + 600_000).toISOString(), cause: null, at }),
      result: null,
    }));
    expect((await view(p.id, member.id)).balances).toMatchObject({ reserved_cents: 1_200, spendable_cents: 3_800 });
    const r = await send(p.id, { type: 'order.paid', order_ref: 'Q-1', gross_cents: 10_000, email: 'rosa@example.com', reservation_id: reservationId });
    expect(r.ledger_entry_ids).toHaveLength(2);
    const m = await expectConsistent(p.id, member.id);
    expect(m.balances).toMatchObject({ reserved_cents: 0, available_cents: 5_000 - 1_200 + 100, lifetime_redeemed_cents: 1_200 });
    const redeem = (await ledger(p.id, member.id)).find((e) => e.type === 'redeem')!;
    expect(redeem).toMatchObject({ amount_cents: -1_200, status: 'posted', order_ref: 'Q-1' });
    expect((await members.load(p.id, member.id)).reservations.get(reservationId)!.status).toBe('confirmed');
    // an unknown reservation does not stop the order from earning
    const other = await send(p.id, { type: 'order.paid', order_ref: 'Q-2', gross_cents: 10_000, email: 'rosa@example.com', reservation_id: 'RS-01ARZ3NDEKTSV4RRFFQ69G5FAV' });
    expect(other).toMatchObject({ status: 'completed', ledger_entry_ids: [expect.any(String)] });
  });

  it('pays the signup bonus once per member ever, on enrolment (new member or enrolled prospect)', async () => {
    const p = await program({ rules: [base(), { id: 'welcome', name: 'Welcome', type: 'signup_bonus', amount_cents: 500, timing: 'immediate' }] });
    const at = new Date().toISOString();
    const first = await members.enrol(p.id, { email: 'sam@example.com' }, at);
    expect(first.member.balances.available_cents).toBe(500);
    await members.enrol(p.id, { email: 'sam@example.com' }, at);
    expect((await ledger(p.id, first.member.id)).filter((e) => e.rule === 'welcome')).toHaveLength(1);
    await send(p.id, { type: 'order.paid', order_ref: 'S-1', gross_cents: 10_000, email: 'pro@example.com' });
    const prospect = await memberOf(p.id, 'pro@example.com');
    expect((await view(p.id, prospect)).balances.available_cents).toBe(100);
    const enrolled = await members.enrol(p.id, { email: 'pro@example.com' }, at);
    expect(enrolled).toMatchObject({ created: true, member: { id: prospect, balances: { available_cents: 600 } } });
    await members.patch(p.id, prospect, { accepted_terms_version: 'v2' }, at);
    expect((await ledger(p.id, prospect)).filter((e) => e.rule === 'welcome')).toHaveLength(1);
    await expectConsistent(p.id, prospect);
    // a migration import enrols without the bonus (the members joined the old programme)
    const migrated = await members.enrol(p.id, { email: 'old@example.com' }, at, { signupBonus: false });
    expect(migrated.member.balances.available_cents).toBe(0);
    expect(await ledger(p.id, migrated.member.id)).toEqual([]);
  });

  it('liability equals the sum over members', async () => {
    const p = await program({ rules: [base({ earn_rate_pct: 5 }), { id: 'rw', name: 'RW', type: 'base', earn_rate_pct: 1, timing: 'return_window' }] });
    await Promise.all(Array.from({ length: 6 }, (_, i) => send(p.id, { type: 'order.paid', order_ref: `T-${i}`, gross_cents: 3_333 * (i + 1), email: `t${i % 3}@example.com` })));
    await send(p.id, { type: 'order.refunded', order_ref: 'T-5', refund_ref: 'x', refunded_cents: 7_000 });
    await send(p.id, { type: 'order.cancelled', order_ref: 'T-4' });
    liability.clear(p.id);
    const l = await liability.get(p.id);
    let available = 0;
    let pending = 0;
    for (let i = 0; i < 3; i++) {
      const m = await expectConsistent(p.id, await memberOf(p.id, `t${i}@example.com`));
      available += m.balances.available_cents;
      pending += m.balances.pending_cents;
    }
    expect(l).toMatchObject({ available_cents: available, pending_cents: pending, outstanding_cents: available + pending, members: 3 });
  });

  it('writes member events with ids derived from their cause, so a re-append of the same decision is a no-op', async () => {
    const p = await program();
    const eventId = newId('EV');
    await send(p.id, { type: 'order.paid', order_ref: 'U-1', gross_cents: 10_000, email: 'u@example.com' }, eventId);
    const id = await memberOf(p.id, 'u@example.com');
    const recorded = await store.readStream(memberStream(p.id, id));
    const earn = recorded.find((e) => e.type === 'EntryRecorded')!;
    // the order stream forgot the event (as if the worker crashed before recording it): the member stream's causes keep it once
    await db.pool.query(`delete from es.events where stream_id = $1`, [orderStreamId(p.id, 'U-1')]);
    await db.pool.query(`delete from es.streams where stream_id = $1`, [orderStreamId(p.id, 'U-1')]);
    handler.forget();
    const again = await send(p.id, { type: 'order.paid', order_ref: 'U-1', gross_cents: 10_000, email: 'u@example.com' }, eventId);
    expect(again.ledger_entry_ids).toEqual([(earn.data as { id: string }).id]);
    const after = await store.readStream(memberStream(p.id, id));
    expect(after.filter((e) => e.type === 'EntryRecorded')).toHaveLength(1);
    const state = (await handler.load(memberStream(p.id, id), memberEvolver)).state;
    expect(state.available).toBe(100);
  });

  describe('many events at once (ledger.events.process, the batch path of issue 7)', () => {
    const TIERS: Partial<Tier>[] = [{ name: 'Gold', level: 1, threshold_type: 'spend', threshold_value: 30_000, earn_multiplier: 2 }];
    const RULES: Partial<Rule>[] = [base({ timing: 'fulfilled' }), { id: 'now', name: 'Now 1 %', type: 'base', earn_rate_pct: 1, timing: 'paid' }];
    const request = (tenant: string, event: Record<string, unknown>, eventId: string) =>
      ({ tenant, event_id: eventId, received_at: new Date().toISOString(), event: event as unknown as InboundEvent });
    /** What a member's ledger says, without ids and times (they differ between programmes). */
    const shape = async (tenant: string, email: string) => {
      await readModels.catchUp();
      const id = await memberOf(tenant, email);
      const m = await expectConsistent(tenant, id);
      const entries = await ledger(tenant, id);
      return {
        balances: { available: m.balances.available_cents, pending: m.balances.pending_cents, lifetime: m.balances.lifetime_earned_cents },
        tier: m.tier?.name ?? null,
        entries: entries.map((e) => `${e.type}:${e.status}:${e.amount_cents}:${e.rule}:${e.order_ref}`).sort(),
      };
    };

    it('decides exactly what the one-event path decides, event by event, for any sequence cut into any batches', async () => {
      const kinds = ['order.placed', 'order.paid', 'order.fulfilled', 'order.refunded', 'order.cancelled'] as const;
      const eventArb = fc.record({
        kind: fc.constantFrom(...kinds), order: fc.integer({ min: 0, max: 5 }), customer: fc.integer({ min: 0, max: 2 }),
        gross: fc.integer({ min: 1, max: 40 }), version: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
      });
      let run = 0;
      await fc.assert(fc.asyncProperty(fc.array(eventArb, { minLength: 1, maxLength: 16 }), fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 16, maxLength: 16 }), async (script, cuts) => {
        run += 1;
        const [one, many] = [await program({ rules: RULES, tiers: TIERS }), await program({ rules: RULES, tiers: TIERS })];
        let refund = 0;
        const events = script.map((x) => {
          const e: Record<string, unknown> = { type: x.kind, order_ref: `P${run}-${x.order}`, email: `b${x.customer}@example.com`, aggregate_version: x.version };
          if (x.kind === 'order.refunded') Object.assign(e, { refund_ref: `R-${refund++}`, refunded_cents: x.gross * 100 });
          else if (x.kind !== 'order.cancelled') e.gross_cents = x.gross * 1_000;
          return e;
        });
        const ids = events.map(() => newId('EV'));
        const sequential: ProcessEventReply[] = [];
        for (let i = 0; i < events.length; i++) sequential.push(await orders.process(request(one.id, events[i], ids[i])));
        const batched: { status: string; error: string | null; entries: number }[] = [];
        for (let i = 0, c = 0; i < events.length; c++) {
          const n = cuts[c % cuts.length];
          const replies = await orders.processBatch(events.slice(i, i + n).map((e, k) => request(many.id, e, ids[i + k])));
          batched.push(...replies.map((r) => ({ status: r.status, error: r.error, entries: r.ledger_entry_ids.length })));
          i += n;
        }
        const strip = (error: string | null) => error?.replace(new RegExp(`P${run}-`, 'g'), '') ?? null;
        expect(batched.map((r) => [r.status, strip(r.error), r.entries])).toEqual(sequential.map((r) => [r.status, strip(r.error), r.ledger_entry_ids.length]));
        await readModels.catchUp();
        for (const email of new Set(events.map((e) => e.email as string))) {
          // an order names its member once; a later event naming another customer still goes to it
          const known = (await reading.list(one.id, { email })).data.length > 0;
          expect((await reading.list(many.id, { email })).data.length > 0).toBe(known);
          if (known) expect(await shape(many.id, email)).toEqual(await shape(one.id, email));
        }
      }), { numRuns: 20 });
    }, 240_000);

    it('a batch sent again (a redelivery after a crash) credits nothing twice and answers the same', async () => {
      const p = await program({ tiers: TIERS });
      const reqs = Array.from({ length: 12 }, (_, i) => request(p.id, { type: 'order.paid', order_ref: `RB-${i}`, gross_cents: 10_000, email: `rb${i % 3}@example.com` }, newId('EV')));
      const first = await orders.processBatch(reqs);
      expect(first.every((r) => r.status === 'completed' && r.ledger_entry_ids.length === 1)).toBe(true);
      const before = await Promise.all([0, 1, 2].map((n) => shape(p.id, `rb${n}@example.com`)));
      // the second and later orders of each member earned at Gold (2×) once the first three lifted it over 30,000
      expect(before[0].tier).toBe('Gold');
      const again = await orders.processBatch(reqs);
      expect(again).toEqual(first);
      const viaTheBus = await bus.request<{ results: ProcessEventReply[] }>(PATTERNS.ledger.processEvents, { events: reqs });
      expect(viaTheBus).toEqual({ results: first });
      expect(await Promise.all([0, 1, 2].map((n) => shape(p.id, `rb${n}@example.com`)))).toEqual(before);
    });

    it('one event failing (a paused member, an unmatched customer, an older version) leaves the others of the batch completed', async () => {
      const p = await program();
      const paused = (await members.enrol(p.id, { email: 'paused@example.com' }, new Date().toISOString())).member;
      await states.changeState(p.id, paused.id, 'pause', new Date().toISOString());
      await send(p.id, { type: 'order.paid', order_ref: 'FB-old', gross_cents: 1_000, email: 'ok@example.com', aggregate_version: 5 });
      const replies = await orders.processBatch([
        request(p.id, { type: 'order.paid', order_ref: 'FB-1', gross_cents: 10_000, email: 'ok@example.com' }, newId('EV')),
        request(p.id, { type: 'order.paid', order_ref: 'FB-2', gross_cents: 10_000, email: 'paused@example.com' }, newId('EV')),
        request(p.id, { type: 'order.paid', order_ref: 'FB-3', gross_cents: 10_000 }, newId('EV')),
        request(p.id, { type: 'order.fulfilled', order_ref: 'FB-old', gross_cents: 1_000, aggregate_version: 4 }, newId('EV')),
        request(p.id, { type: 'order.paid', order_ref: 'FB-4', gross_cents: 20_000, email: 'ok@example.com' }, newId('EV')),
      ]);
      expect(replies.map((r) => r.status)).toEqual(['completed', 'failed', 'failed', 'failed', 'completed']);
      expect(replies[1].error).toMatch(/paused/);
      expect(replies[2].error).toMatch(/unmatched/);
      expect(replies[3].error).toMatch(/aggregate_version 4 is older than version 5/);
      const okId = await memberOf(p.id, 'ok@example.com');
      expect((await expectConsistent(p.id, okId)).balances.available_cents).toBe(10 + 100 + 200);
      expect((await view(p.id, paused.id)).balances.available_cents).toBe(0);
    });
  });
});
