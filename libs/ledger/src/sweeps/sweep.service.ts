import { Position, comparePositions } from '@loyalty/event-store';
import { MemberEvent, decideSweep, memberEvolver } from '@loyalty/domain-member';
import { newId } from '@loyalty/platform';
import { LedgerContext, memberStream } from '../ledger.context';

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

/**
 * Time-based behaviour (architecture "Time"): a sweep of the due rows of `ledger.due_items`
 * against the programme clock (real time, or the sandbox's test clock). Idempotent: every effect
 * is decided on the member's current state (a released entry is no longer pending, an expired lot
 * is named by its cause), appended with the expected revision.
 */
export class SweepService {
  constructor(private readonly ctx: LedgerContext) {}

  /**
   * Sweeps one tenant under its advisory lock. `wait`: block until a concurrent sweep of the
   * tenant ends, then sweep (the test clock needs its effects now); otherwise skip a locked tenant.
   */
  async sweepTenant(tenant: string, wait: boolean): Promise<SweepReport | null> {
    const client = await this.ctx.pool.connect();
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
    const program = await this.ctx.programs.forTenant(tenant);
    const now = (await this.ctx.programs.now(tenant)).toISOString();
    const days = inactivityDays(program.settings.expiry);
    const report: SweepReport = { tenant, now, members: 0, released: 0, expired: 0, tier_changes: 0, failures: 0 };
    const done: string[] = [];
    let last: Position | null = null;
    for (;;) {
      // every member is looked at once per sweep; what it decides is final for this `now`
      const { rows } = await this.ctx.pool.query<{ member_id: string }>(
        `select distinct member_id from ledger.due_items
         where tenant = $1 and not (member_id = any($4::text[]))
           and ((kind <> 'inactive' and due_at <= $2::timestamptz)
             or (kind = 'inactive' and $3::int is not null and due_at <= $2::timestamptz - make_interval(days => $3::int)))
         limit 200`,
        [tenant, now, days, done]);
      if (!rows.length) break;
      for (const { member_id } of rows) {
        done.push(member_id);
        try {
          const out = await this.ctx.handler.handle(memberStream(tenant, member_id), memberEvolver, (s) => {
            const events = decideSweep(s, { tiers: program.tiers, expiry: program.settings.expiry }, now, () => newId('LE'));
            return { events, result: events };
          });
          if (out.append && (!last || comparePositions(out.append.position, last) > 0)) last = out.append.position;
          this.count(report, out.result);
          report.members++;
        } catch {
          // one member's failure must not stop the programme's sweep; the next sweep tries again
          report.failures++;
        }
      }
    }
    // read-your-writes for the caller (the test clock): reads after this reply see the sweep
    if (settle) await this.ctx.settle(last);
    return report;
  }

  private count(report: SweepReport, events: MemberEvent[]): void {
    for (const e of events) {
      if (e.type === 'EntryReleased') report.released++;
      else if (e.type === 'EntryRecorded' && e.data.type === 'expire') report.expired++;
      else if (e.type === 'TierChanged') report.tier_changes++;
    }
  }

  /** Tenants with something due now by their own clock (test clocks included), for the periodic sweeper. */
  async dueTenants(): Promise<string[]> {
    const { rows } = await this.ctx.pool.query<{ tenant: string }>(
      `with due as (
         select d.tenant, d.kind, d.due_at, p.settings->'expiry' as expiry,
                now() + coalesce(c.offset_ms, 0) * interval '1 millisecond' as clock
         from ledger.due_items d
         join program.programs p on p.id = regexp_replace(d.tenant, '_test$', '')
         left join program.test_clocks c on c.program_id = p.id and d.tenant like '%\\_test'
       )
       select distinct tenant from due
       where (kind <> 'inactive' and due_at <= clock)
          or (kind = 'inactive' and expiry->>'policy' = 'inactivity'
              and case when (expiry->>'days') ~ '^[0-9]{1,6}$' then due_at + (expiry->>'days')::int * interval '1 day' <= clock else false end)`);
    return rows.map((r) => r.tenant);
  }
}
