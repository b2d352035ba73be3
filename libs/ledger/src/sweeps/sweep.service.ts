import { MemberEvent, decideSweep, memberEvolver } from '@loyalty/domain-member';
import { newId } from '@loyalty/platform';
import { Pool } from 'pg';
import { memberStreamId as memberStream } from '@loyalty/contracts';
import { CommandHandler, Position, comparePositions } from '@loyalty/event-store';
import { ProgramStore } from '@loyalty/programs';
import { LedgerReadModels } from '../ledger.read-models';

export interface SweepReport {
  tenant: string;
  now: string;
  members: number;
  released: number;
  expired: number;
  tier_changes: number;
  failures: number;
}

/** Advisory-lock keys: one lock per tenant, so replicas never sweep the same programme together. */
const LOCK_SPACE = 7412101;

/** Days of the inactivity policy when it is in force and well formed, else null. */
const inactivityDays = (expiry: { policy: string; days?: number | null } | undefined): number | null =>
  expiry?.policy === 'inactivity' && typeof expiry.days === 'number' && Number.isSafeInteger(expiry.days) && expiry.days >= 0 ? expiry.days : null;

/** How long a test-clock sweep waits for the read models to show its effects before it answers. */
const SETTLE_MS = 120_000;

/** Members of one page of the sweep decided at once. */
const SWEEP_CONCURRENCY = 128;

/** Runs `fn` over the items, at most `limit` at a time (fn handles its own failures). */
const eachConcurrently = async <T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> => {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
};

/**
 * Time-based behaviour (architecture "Time"): a sweep of the due rows of `ledger.due_items`
 * against the programme clock (real time, or the sandbox's test clock). Idempotent: every effect
 * is decided on the member's current state (a released entry is no longer pending, an expired lot
 * is named by its cause), appended with the expected revision.
 */
export class SweepService {
  constructor(
    private readonly pool: Pool,
    private readonly handler: CommandHandler,
    private readonly programs: ProgramStore,
    private readonly readModels: LedgerReadModels,
  ) {}

  /**
   * Sweeps one tenant under its advisory lock. `wait`: block until a concurrent sweep of the
   * tenant ends, then sweep (the test clock needs its effects now); otherwise skip a locked tenant.
   */
  async sweepTenant(tenant: string, wait: boolean): Promise<SweepReport | null> {
    const client = await this.pool.connect();
    try {
      if (wait) {
        await client.query('select pg_advisory_lock($1, hashtext($2))', [LOCK_SPACE, tenant]);
      } else {
        const { rows } = await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1, hashtext($2)) as ok', [LOCK_SPACE, tenant]);
        if (!rows[0].ok) return null;
      }
      try {
        return await this.run(tenant, wait);
      } finally {
        await client.query('select pg_advisory_unlock($1, hashtext($2))', [LOCK_SPACE, tenant]).catch(() => undefined);
      }
    } finally {
      client.release();
    }
  }

  private async run(tenant: string, settle: boolean): Promise<SweepReport> {
    const program = await this.programs.forTenant(tenant);
    const now = (await this.programs.now(tenant)).toISOString();
    const days = inactivityDays(program.settings.expiry);
    const grace = typeof program.settings.erasure_grace_days === 'number' && program.settings.erasure_grace_days > 0 ? Math.floor(program.settings.erasure_grace_days) : 0;
    const report: SweepReport = { tenant, now, members: 0, released: 0, expired: 0, tier_changes: 0, failures: 0 };
    // the test clock's sweep must see every write made before it (writes do not wait for due_items)
    if (settle) await this.readModels.catchUp(10_000);
    let after = '';
    let last: Position | null = null;
    for (;;) {
      // every member is looked at once per sweep (keyset by member id); what it decides is final for this `now`
      const { rows } = await this.pool.query<{ member_id: string }>(
        `select member_id from ledger.due_items
         where tenant = $1 and member_id > $4
           and ((kind not in ('inactive', 'anonymise') and due_at <= $2::timestamptz)
             or (kind = 'inactive' and $3::int is not null and due_at <= $2::timestamptz - make_interval(days => $3::int))
             or (kind = 'anonymise' and due_at <= $2::timestamptz - make_interval(days => $5::int)))
         group by member_id order by member_id limit 500`,
        [tenant, now, days, after, grace]);
      if (!rows.length) break;
      after = rows[rows.length - 1].member_id;
      // the page's members not in the state cache are read together, not one by one
      await this.handler.warm(rows.map((r) => memberStream(tenant, r.member_id)), memberEvolver).catch(() => undefined);
      // members are independent streams: decided side by side, their appends share group commits
      await eachConcurrently(rows, SWEEP_CONCURRENCY, async ({ member_id }) => {
        try {
          const out = await this.handler.handle(memberStream(tenant, member_id), memberEvolver, (s) => {
            const events = decideSweep(s, { tiers: program.tiers, expiry: program.settings.expiry, erasureGraceDays: grace }, now, () => newId('LE'));
            return { events, result: events };
          });
          if (out.append && (!last || comparePositions(out.append.position, last) > 0)) last = out.append.position;
          this.count(report, out.result);
          report.members++;
        } catch {
          // one member's failure must not stop the programme's sweep; the next sweep tries again
          report.failures++;
        }
      });
    }
    // read-your-writes for the caller (the test clock): reads after this reply see the sweep
    // (a sweep of many members leaves the read models a large batch to apply: give them time)
    if (settle) await this.readModels.settle(last, SETTLE_MS);
    return report;
  }

  private count(report: SweepReport, events: MemberEvent[]): void {
    for (const e of events) {
      if (e.type === 'EntryReleased') report.released++;
      else if (e.type === 'EntryRecorded' && e.data.type === 'expire') report.expired++;
      else if (e.type === 'TierChanged') report.tier_changes++;
    }
  }

  /**
   * Tenants with something due now by their own clock, for the periodic sweeper: dated rows due in
   * real time (any tenant: a test clock only moves forward), sandboxes whose test clock has moved,
   * and members inactive for the days of programmes with the inactivity policy. Index-driven
   * (`due_items (due_at)` and `(tenant, due_at)`), never a scan of every row.
   */
  async dueTenants(): Promise<string[]> {
    // due_items is a read model: include every write committed so far
    await this.readModels.catchUp();
    // the programmes' clocks and day counts come from their owner, the programme store
    const days = (v: unknown): number | null => (/^[0-9]{1,6}$/.test(String(v ?? '')) ? Number(v) : null);
    const programmes = (await this.programs.clocks()).flatMap(({ program_id, settings, test_offset_ms }) => {
      const inactivityDays = settings.expiry?.policy === 'inactivity' ? days((settings.expiry as { days?: unknown }).days) : null;
      const graceDays = days(settings.erasure_grace_days) ?? 0;
      return [
        { tenant: program_id, offset: 0, inactivityDays, graceDays },
        { tenant: `${program_id}_test`, offset: test_offset_ms, inactivityDays, graceDays },
      ];
    });
    const { rows } = await this.pool.query<{ tenant: string }>(
      `with t as (select * from unnest($1::text[], $2::bigint[], $3::int[], $4::int[]) as t(tenant, offset_ms, inactivity_days, grace_days))
       select distinct tenant from ledger.due_items where due_at <= now() and kind not in ('inactive', 'anonymise')
       union
       select t.tenant from t
        where t.offset_ms <> 0 and exists (select 1 from ledger.due_items d where d.tenant = t.tenant and d.kind not in ('inactive', 'anonymise')
                                             and d.due_at <= now() + t.offset_ms * interval '1 millisecond')
       union
       select t.tenant from t
        where t.inactivity_days is not null
          and exists (select 1 from ledger.due_items d where d.tenant = t.tenant and d.kind = 'inactive'
                        and d.due_at <= now() + t.offset_ms * interval '1 millisecond' - t.inactivity_days * interval '1 day')
       union
       select t.tenant from t
        where exists (select 1 from ledger.due_items d where d.tenant = t.tenant and d.kind = 'anonymise'
                        and d.due_at <= now() + t.offset_ms * interval '1 millisecond' - t.grace_days * interval '1 day')`,
      [programmes.map((p) => p.tenant), programmes.map((p) => p.offset), programmes.map((p) => p.inactivityDays), programmes.map((p) => p.graceDays)]);
    return rows.map((r) => r.tenant);
  }
}
