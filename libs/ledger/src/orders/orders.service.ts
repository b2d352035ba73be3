import type {
  CustomerEvent, OrderEvent as InboundOrderEvent, Program, ProcessEventOutcome, ProcessEventReply, ProcessEventRequest,
} from '@loyalty/contracts';
import { memberStreamId as memberStream, orderStreamId as orderStream } from '@loyalty/contracts';
import { EarnLine, computeEarnings } from '@loyalty/domain-earning';
import {
  MemberAggregate, MemberEvent, MemberOrderStep, MemberRuleError, OrderEarn, decideConfirmReservation, decideMemberOrderSteps, decideOrderStep, decideTier,
  earningRefusal, memberEvolver, orderCauses, orderEarnRecorded,
} from '@loyalty/domain-member';
import { CommandHandler, KeyedMutex, WrongExpectedRevisionError } from '@loyalty/event-store';
import { ProgramStore } from '@loyalty/programs';
import { ProblemError, deterministicUuid, entryIdFor, problem } from '@loyalty/platform';
import { crashPoint } from '@loyalty/runtime';
import { normaliseEmail, normalisePhone } from '../members/identity';
import { MembersService } from '../members/members.service';
import { CampaignBudgets } from './campaign-budgets';
import { OrderAggregate, OrderPlan, checkOrderEvent, isOrderEvent, orderEvolver, orderStepEvent, planOrderStep } from '@loyalty/domain-order';

/** A commerce event the ledger refuses: it ends `failed` with this message and writes nothing. */
export class OrderEventFailure extends Error {}

/** The order stream moved between deciding and recording: decide again. */
class StaleOrder extends Error {}

const completed = (ids: string[]): ProcessEventReply => ({ status: 'completed', error: null, ledger_entry_ids: ids });
const failed = (error: string): ProcessEventReply => ({ status: 'failed', error, ledger_entry_ids: [] });

/** Domain refusals become a `failed` event with a readable error; infrastructure faults stay errors (the caller retries). */
const failureOf = (e: unknown): string | null => {
  if (e instanceof OrderEventFailure) return e.message;
  if (e instanceof MemberRuleError) return e.message;
  if (e instanceof RangeError) return e.message;
  if (ProblemError.is(e) && e.status >= 400 && e.status < 500) {
    const fields = e.problem.errors?.map((f) => `${f.path || '/'}: ${f.message}`).join('; ');
    return [e.problem.detail ?? e.message, fields].filter(Boolean).join(': ');
  }
  return null;
};

/** An infrastructure fault of one event of a batch: a domain refusal still fails it, anything else is sent again later. */
const outcomeOfFault = (e: unknown): ProcessEventOutcome => {
  const error = failureOf(e);
  return error !== null ? failed(error) : retry(e);
};
const retry = (e: unknown): ProcessEventOutcome => ({ status: 'retry', error: e instanceof Error ? e.message : String(e), ledger_entry_ids: [] });

/** Runs `fn` holding every key's lock, taken one after another in the order given (callers sort them). */
const lockAll = <T>(mutex: KeyedMutex, keys: string[], fn: () => Promise<T>, from = 0): Promise<T> =>
  from >= keys.length ? fn() : mutex.run(keys[from], () => lockAll(mutex, keys, fn, from + 1));

/** Deterministic event-store ids for member events, derived from what each one is about. */
const memberEventKey = (e: MemberEvent): string | null => {
  switch (e.type) {
    case 'EntryRecorded': return `entry:${e.data.id}`;
    case 'EntryReleased': return `released:${e.data.entry_id}`;
    case 'EntryReleaseScheduled': return `release-scheduled:${e.data.entry_id}`;
    case 'OrderActivityRecorded': return e.data.cause ? `activity:${e.data.cause}` : null;
    case 'ReservationConfirmed': return `reservation-confirmed:${e.data.reservation_id}`;
    default: return null;
  }
};

/**
 * Order processing (issue 3): each commerce event becomes exactly-once, explainable ledger entries.
 *
 * One event = (1) check against the order stream (replay, older aggregate_version, cancelled),
 * (2) the member's effects decided on the member stream through MembersService.decide (expected
 * revision + retry; every effect keyed by a cause, so a retry writes nothing twice), (3) the order
 * stream records what the event did under a deterministic event id. Events of one order are
 * serialised in-process (and by the Kafka partition key, the order_ref, across processes).
 */
export class OrdersService {
  private readonly orderLock = new KeyedMutex();

  constructor(
    private readonly handler: CommandHandler,
    private readonly programs: ProgramStore,
    private readonly members: MembersService,
    private readonly budgets: CampaignBudgets,
  ) {}

  async process(req: ProcessEventRequest): Promise<ProcessEventReply> {
    try {
      if (isOrderEvent(req.event)) return await this.processOrder(req, req.event);
      return await this.processCustomer(req.tenant, req.event);
    } catch (e) {
      const error = failureOf(e);
      if (error !== null) return failed(error);
      throw e;
    }
  }

  /**
   * Many queued events at once (`ledger.events.process`, issue 7): one outcome per event, in order.
   * Order events are checked against their order streams, then every member's events are decided
   * together on that member's state (decideMemberOrderSteps: one member append per member, the tier
   * review included), then every order stream records its step (one append each, all in one group
   * commit). The guarantees are those of `process`: every effect is keyed by a cause, so a batch
   * redelivered after a crash between the two appends writes nothing twice; an order stream that
   * moved meanwhile sends that event through `process` again. Customer events, and programmes with
   * budgeted campaigns (their claims are transactional per order), take the one-event path.
   * An infrastructure fault of one event is that event's `retry`, not the batch's.
   */
  async processBatch(reqs: ProcessEventRequest[]): Promise<ProcessEventOutcome[]> {
    const out: ProcessEventOutcome[] = new Array(reqs.length);
    // rounds of at most one event per order (the queue never sends two, a redelivery might), in request order
    let pending = reqs.map((_, i) => i);
    while (pending.length > 0) {
      const seen = new Set<string>();
      const round: number[] = [];
      const later: number[] = [];
      for (const i of pending) {
        const e = reqs[i].event;
        const key = isOrderEvent(e) ? orderStream(reqs[i].tenant, e.order_ref) : `customer:${reqs[i].tenant}:${e.email}`;
        (seen.has(key) ? later : round).push(i);
        seen.add(key);
      }
      await this.processRound(reqs, round, out);
      pending = later;
    }
    return out;
  }

  private async processRound(reqs: ProcessEventRequest[], round: number[], out: ProcessEventOutcome[]): Promise<void> {
    const alone: number[] = [];
    const batched: number[] = [];
    const programs = new Map<string, Program>();
    for (const tenant of new Set(round.map((i) => reqs[i].tenant))) programs.set(tenant, await this.programs.forTenant(tenant));
    for (const i of round) {
      const program = programs.get(reqs[i].tenant)!;
      const budgeted = program.rules.some((r) => r.type === 'campaign' && r.budget_cents != null);
      (isOrderEvent(reqs[i].event) && !budgeted ? batched : alone).push(i);
    }
    const again: number[] = [];
    const streams = [...new Set(batched.map((i) => orderStream(reqs[i].tenant, (reqs[i].event as InboundOrderEvent).order_ref)))].sort();
    // every order of the round stays locked until its step is recorded; locks are taken in one global order (no deadlock between batches)
    await lockAll(this.orderLock, streams, () => this.decideRound(reqs, batched, programs, out, again));
    await Promise.all([...alone, ...again].map(async (i) => { out[i] = await this.processOne(reqs[i]); }));
  }

  private async processOne(req: ProcessEventRequest): Promise<ProcessEventOutcome> {
    try {
      return await this.process(req);
    } catch (e) {
      return retry(e);
    }
  }

  private async decideRound(reqs: ProcessEventRequest[], idx: number[], programs: Map<string, Program>, out: ProcessEventOutcome[], again: number[]): Promise<void> {
    const now = new Map<string, string>();
    for (const tenant of programs.keys()) now.set(tenant, (await this.programs.now(tenant)).toISOString());
    // 1. each order: replay / refusal / plan, and its member
    interface Planned { i: number; e: InboundOrderEvent; order: OrderAggregate; revision: bigint | 'no_stream'; memberId: string; plan: OrderPlan; at: string }
    const planned: Planned[] = [];
    await Promise.all(idx.map(async (i) => {
      const req = reqs[i];
      const e = req.event as InboundOrderEvent;
      try {
        const { state: order, revision } = await this.handler.load(orderStream(req.tenant, e.order_ref), orderEvolver);
        const check = checkOrderEvent(order, e.order_ref, req.event_id, e);
        if (check.kind === 'replay') return void (out[i] = completed(check.entry_ids));
        if (check.kind === 'reject') return void (out[i] = failed(check.error));
        const at = now.get(req.tenant)!;
        const memberId = order.member_id ?? (await this.matchCustomer(req.tenant, e, at));
        planned.push({ i, e, order, revision, memberId, plan: planOrderStep(order, e, programs.get(req.tenant)!.settings, at), at });
      } catch (err) {
        out[i] = outcomeOfFault(err);
      }
    }));
    // 2. each member: its steps in request order, decided together, one append
    const byMember = new Map<string, Planned[]>();
    for (const p of planned.sort((a, b) => a.i - b.i)) {
      const key = memberStream(reqs[p.i].tenant, p.memberId);
      const steps = byMember.get(key);
      if (steps) steps.push(p);
      else byMember.set(key, [p]);
    }
    const decided: { p: Planned; entry_ids: string[]; earn_entry_ids: string[]; earns: OrderEarn[] }[] = [];
    await Promise.all([...byMember.entries()].map(async ([stream, steps]) => {
      const tenant = reqs[steps[0].i].tenant;
      const program = programs.get(tenant)!;
      try {
        const { result } = await this.handler.handleFolding(stream, memberEvolver, (s) => {
          const decision = decideMemberOrderSteps(s, steps.map((p) => this.memberStep(reqs[p.i], p, program)), { tiers: program.tiers, at: steps[0].at, evolve: memberEvolver.evolve });
          return {
            events: decision.events.map((ev) => {
              const key = memberEventKey(ev);
              return key ? { ...ev, id: deterministicUuid(`${stream}|${key}`) } : ev;
            }),
            result: decision.outcomes,
          };
        });
        result.forEach((o, n) => {
          if (o.ok) decided.push({ p: steps[n], entry_ids: o.entry_ids, earn_entry_ids: o.earn_entry_ids, earns: o.earns });
          else out[steps[n].i] = failed(o.error);
        });
      } catch (err) {
        for (const p of steps) out[p.i] = outcomeOfFault(err);
      }
    }));
    if (decided.length > 0) crashPoint('ledger.event.process:after-member-append'); // test-only hook, inert unless LOYALTY_CRASH_POINT names it
    // 3. each order stream records its step (one group commit)
    await Promise.all(decided.map(async ({ p, entry_ids, earn_entry_ids, earns }) => {
      const req = reqs[p.i];
      const stream = orderStream(req.tenant, p.e.order_ref);
      const recorded = orderStepEvent(p.e, { event_id: req.event_id, member_id: p.memberId, at: p.at, plan: p.plan, entry_ids, earn_entry_ids, earns });
      try {
        await this.handler.handle(stream, orderEvolver, (_s, current) => {
          if (current !== p.revision) throw new StaleOrder();
          return { events: [{ ...recorded, id: deterministicUuid(`${stream}|step|${req.event_id}`) }], result: null };
        });
        out[p.i] = completed(entry_ids);
      } catch (err) {
        // the order moved under us (another process): this event goes through the one-event path, which sees it as it is now
        if (err instanceof StaleOrder || err instanceof WrongExpectedRevisionError) again.push(p.i);
        else out[p.i] = outcomeOfFault(err);
      }
    }));
    if (decided.length > 0) crashPoint('ledger.event.process:after-order-append'); // test-only hook, inert unless LOYALTY_CRASH_POINT names it
  }

  /** One order event as a step of its member's batch: the same command `applyToMember` builds, with the rule lines computed for the state the step meets. */
  private memberStep(req: ProcessEventRequest, p: { e: InboundOrderEvent; order: OrderAggregate; plan: OrderPlan; at: string }, program: Program): MemberOrderStep {
    const entryId = (cause: string) => entryIdFor(req.tenant, cause, req.received_at);
    const earn = p.plan.earn;
    const reservationId = 'reservation_id' in p.e ? p.e.reservation_id : undefined;
    return {
      command: {
        order: { order_ref: p.e.order_ref, earn_entry_ids: p.order.earn_entry_ids, earns: p.order.earns, fulfilled_at: p.plan.fulfilled_at, delivered: p.plan.delivered },
        at: p.at, expiry: program.settings.expiry, return_window_days: program.settings.return_window_days, entryId,
        refund: p.plan.refund, cancel: p.plan.cancel, activity: p.plan.activity,
      },
      earnLines: earn
        ? (s) => computeEarnings({ grossCents: earn.gross_cents, lines: earn.lines, rules: program.rules, tierMultiplier: s.tier?.earn_multiplier ?? 1, at: p.at, campaignIssuedCents: {} })
        : null,
      reservation: reservationId ? { reservation_id: reservationId, entry_id: entryId(`reservation:${reservationId}`) } : null,
    };
  }

  /** customer.created / customer.updated: find or create (a prospect) by email, enrich phone and external_ref. */
  private async processCustomer(tenant: string, e: CustomerEvent): Promise<ProcessEventReply> {
    const at = (await this.programs.now(tenant)).toISOString();
    const externalRef = e.external_ref ?? (e as { customer_ref?: string }).customer_ref;
    await this.members.resolve(tenant, { email: e.email, phone: e.phone, external_ref: externalRef }, at);
    return completed([]);
  }

  private async processOrder(req: ProcessEventRequest, e: InboundOrderEvent): Promise<ProcessEventReply> {
    const { tenant } = req;
    const stream = orderStream(tenant, e.order_ref);
    return this.orderLock.run(stream, async () => {
      for (let attempt = 0; attempt < 10; attempt++) {
        const { state: order, revision } = await this.handler.load(stream, orderEvolver);
        const check = checkOrderEvent(order, e.order_ref, req.event_id, e);
        if (check.kind === 'replay') return completed(check.entry_ids);
        if (check.kind === 'reject') return failed(check.error);

        const at = (await this.programs.now(tenant)).toISOString();
        const program = await this.programs.forTenant(tenant);
        const memberId = order.member_id ?? (await this.matchCustomer(tenant, e, at));
        const plan = planOrderStep(order, e, program.settings, at);
        const effects = await this.applyToMember(req, e, { memberId, order, plan, program, at });
        crashPoint('ledger.event.process:after-member-append'); // test-only hook, inert unless LOYALTY_CRASH_POINT names it

        const recorded = orderStepEvent(e, { event_id: req.event_id, member_id: memberId, at, plan, entry_ids: effects.entry_ids, earn_entry_ids: effects.earn_entry_ids, earns: effects.earns });
        try {
          await this.handler.handle(stream, orderEvolver, (_s, current) => {
            if (current !== revision) throw new StaleOrder();
            return { events: [{ ...recorded, id: deterministicUuid(`${stream}|step|${req.event_id}`) }], result: null };
          });
        } catch (err) {
          if (err instanceof StaleOrder || err instanceof WrongExpectedRevisionError) continue;
          throw err;
        }
        crashPoint('ledger.event.process:after-order-append'); // test-only hook, inert unless LOYALTY_CRASH_POINT names it
        // tier metrics moved: upgrades apply at once (this order earned at the old rate); refunds may downgrade
        if (effects.changed) {
          await this.members.decide(tenant, memberId, (s) => ({ events: decideTier(s, program.tiers, at), result: null }));
        }
        return completed(effects.entry_ids);
      }
      throw problem('unavailable', `order ${e.order_ref} kept changing while this event was processed; retry`);
    });
  }

  /** The customer an order names (customer_ref = external_ref, email or phone); an unknown one becomes a prospect. */
  private async matchCustomer(tenant: string, e: InboundOrderEvent, at: string): Promise<string> {
    const email = e.email ?? e.customer?.email;
    const phone = e.phone ?? e.customer?.phone;
    const ref = e.customer_ref ?? e.customer?.external_ref;
    const ids: { email?: string; phone?: string; external_ref?: string } = {};
    if (email) ids.email = normaliseEmail(email);
    if (ref) ids.external_ref = ref;
    if (phone) {
      const p = normalisePhone(phone);
      if (p.ok) ids.phone = p.value;
      else if (!ids.email && !ids.external_ref) throw new OrderEventFailure(`customer unmatched: phone ${phone} is not a valid international number`);
    }
    if (!ids.email && !ids.external_ref && !ids.phone) {
      throw new OrderEventFailure(`customer unmatched: order ${e.order_ref} has not been seen before and the event names no customer (customer_ref, email or phone)`);
    }
    return (await this.members.findOrCreateProspect(tenant, ids, at)).memberId;
  }

  private async applyToMember(
    req: ProcessEventRequest, e: InboundOrderEvent,
    p: { memberId: string; order: OrderAggregate; plan: OrderPlan; program: Program; at: string },
  ): Promise<{ entry_ids: string[]; earn_entry_ids: string[]; earns: OrderEarn[]; changed: boolean }> {
    const { tenant } = req;
    const ref = e.order_ref;
    const entryId = (cause: string) => entryIdFor(tenant, cause, req.received_at);
    const stream = memberStream(tenant, p.memberId);
    const reservationId = 'reservation_id' in e ? e.reservation_id : undefined;
    const budgeted = p.program.rules.some((r) => r.type === 'campaign' && r.budget_cents != null);
    for (let attempt = 0; attempt < 10; attempt++) {
      // Campaign budgets are claimed before the decision (a claim writes; the decision stays pure),
      // from the member state the decision is expected to see. A claim is keyed by its earn cause,
      // so claiming again (a redelivery, a retry below) gets back what was granted the first time.
      let claimed: { multiplier: number; lines: EarnLine[] } | null = null;
      if (p.plan.earn && budgeted) {
        const before = await this.members.load(tenant, p.memberId);
        if (!earningRefusal(before) && !orderEarnRecorded(before, ref)) {
          claimed = { multiplier: tierMultiplier(before), lines: await this.claimEarnLines(tenant, before, ref, p.plan.earn, p.program, p.at) };
        }
      }
      const { result } = await this.members.decide(tenant, p.memberId, (s) => {
        const refusal = earningRefusal(s);
        if (refusal) throw new OrderEventFailure(refusal);
        let lines: EarnLine[] = [];
        if (p.plan.earn && !orderEarnRecorded(s, ref)) {
          if (!budgeted) lines = earnLinesOf(s, p.plan.earn, p.program, p.at, {});
          else if (claimed && claimed.multiplier === tierMultiplier(s)) lines = claimed.lines;
          // the member changed since the claims (a tier moved): claim again from this state
          else return { events: [], result: null };
        }
        const decision = decideOrderStep(s, {
          order: { order_ref: ref, earn_entry_ids: p.order.earn_entry_ids, earns: p.order.earns, fulfilled_at: p.plan.fulfilled_at, delivered: p.plan.delivered },
          at: p.at, expiry: p.program.settings.expiry, return_window_days: p.program.settings.return_window_days, entryId,
          earn: p.plan.earn ? { lines } : null, refund: p.plan.refund, cancel: p.plan.cancel, activity: p.plan.activity,
        });
        const events = [...decision.events];
        const ids = [...decision.entry_ids];
        if (reservationId) ids.push(...this.confirmReservation(s, events, { reservation_id: reservationId, order_ref: ref, entry_id: entryId(`reservation:${reservationId}`), at: p.at }));
        return {
          events: events.map((ev) => {
            const key = memberEventKey(ev);
            return key ? { ...ev, id: deterministicUuid(`${stream}|${key}`) } : ev;
          }),
          result: { entry_ids: ids, earn_entry_ids: decision.earn_entry_ids, earns: decision.earns, changed: events.length > 0 },
        };
      });
      if (result) return result;
    }
    throw problem('unavailable', `member ${p.memberId} kept changing while order ${ref} was processed; retry`);
  }

  /**
   * An order carrying `reservation_id` confirms that open reservation when it lands. A reservation
   * that is not this member's, already resolved, expired or not spendable is left alone: the
   * order still earns.
   */
  private confirmReservation(s: MemberAggregate, events: MemberEvent[], cmd: { reservation_id: string; order_ref: string; entry_id: string; at: string }): string[] {
    if (!s.reservations.has(cmd.reservation_id)) return [];
    try {
      const confirmed = decideConfirmReservation(s, cmd);
      events.push(...confirmed);
      return confirmed.some((x) => x.type === 'EntryRecorded') ? [cmd.entry_id] : [];
    } catch (e) {
      if (e instanceof MemberRuleError) return [];
      throw e;
    }
  }

  /**
   * The rule lines of an order: the rules in force now, the member's tier multiplier, and campaign
   * budgets claimed transactionally (a claim can only lower a line; a line granted 0 is dropped).
   */
  private async claimEarnLines(tenant: string, s: MemberAggregate, ref: string, earn: NonNullable<OrderPlan['earn']>, program: Program, at: string): Promise<EarnLine[]> {
    const budgeted = program.rules.filter((r) => r.type === 'campaign' && r.budget_cents != null);
    const issued = await this.budgets.issued(tenant, budgeted.map((r) => r.id), budgeted.map((r) => orderCauses.earn(ref, r.id)));
    const out: EarnLine[] = [];
    for (const line of earnLinesOf(s, earn, program, at, issued)) {
      const rule = budgeted.find((r) => r.id === line.rule_id);
      if (!rule) {
        out.push(line);
        continue;
      }
      const granted = await this.budgets.claim(tenant, rule.id, orderCauses.earn(ref, rule.id), line.amount_cents, rule.budget_cents!);
      if (granted > 0) out.push({ ...line, amount_cents: granted });
    }
    return out;
  }
}

const tierMultiplier = (s: MemberAggregate): number => s.tier?.earn_multiplier ?? 1;

/** The rule lines of an order for this member state (pure): the rules in force at `at`, the tier multiplier, what budgeted campaigns issued. */
const earnLinesOf = (s: MemberAggregate, earn: NonNullable<OrderPlan['earn']>, program: Program, at: string, issued: Record<string, number>): EarnLine[] =>
  computeEarnings({ grossCents: earn.gross_cents, lines: earn.lines, rules: program.rules, tierMultiplier: tierMultiplier(s), at, campaignIssuedCents: issued });
