import { Logger } from '@nestjs/common';
import { decideExpireRedemption, decideExpireReservation } from '@loyalty/domain-member';
import { newId } from '@loyalty/platform';
import { Pool } from 'pg';
import { ProgramStore } from '@loyalty/programs';
import { MemberSpending } from '../member-spending';
import type { RedemptionRows } from '../projections/redemption-rows';

/** Advisory lock class of the sweep; the second key is the tenant's hash. */
const SWEEP_LOCK = 7412101;
const BATCH = 500;
const PARALLEL = 8;

export interface SweepResult { tenant: string; vouchers_expired: number; reservations_expired: number; skipped: boolean }

/**
 * Expires vouchers and reservations past their TTL: a sweep of due rows against the programme's
 * clock (never a timer per item). Idempotent: an item already used, voided, released or expired
 * decides nothing. Safe with several replicas: one sweep per tenant at a time (advisory lock), and
 * the member stream's expected revision settles any race with confirm, void or release.
 */
export class ExpirySweeper {
  private readonly log = new Logger('ExpirySweeper');
  constructor(
    private readonly spending: MemberSpending,
    private readonly programs: ProgramStore,
    private readonly pool: Pool,
    private readonly rows: Pick<RedemptionRows, 'catchUp'>,
    /** due rows read per page (tests use small pages) */
    private readonly pageSize = BATCH,
  ) {}

  /**
   * Sweeps one tenant. `wait`: block until another replica's sweep of the tenant ends (a test clock
   * moved and the caller needs the effects now) instead of leaving the work to it.
   */
  async sweep(tenant: string, wait = true): Promise<SweepResult> {
    const lock = await this.pool.connect();
    let locked = false;
    try {
      if (wait) {
        await lock.query('select pg_advisory_lock($1, hashtext($2))', [SWEEP_LOCK, tenant]);
        locked = true;
      } else {
        const { rows } = await lock.query<{ ok: boolean }>('select pg_try_advisory_lock($1, hashtext($2)) as ok', [SWEEP_LOCK, tenant]);
        locked = rows[0].ok;
        if (!locked) return { tenant, vouchers_expired: 0, reservations_expired: 0, skipped: true };
      }
      return { tenant, ...(await this.sweepLocked(tenant)), skipped: false };
    } finally {
      if (locked) await lock.query('select pg_advisory_unlock($1, hashtext($2))', [SWEEP_LOCK, tenant]).catch(() => undefined);
      lock.release();
    }
  }

  /** Every tenant with open vouchers or reservations (the periodic sweep). */
  async sweepAll(): Promise<SweepResult[]> {
    const { rows } = await this.pool.query<{ tenant: string }>(
      `select distinct tenant from redemption.redemptions where status = 'created' and expires_at is not null
       union select distinct tenant from redemption.reservations where status = 'open'`);
    const out: SweepResult[] = [];
    for (const r of rows) out.push(await this.sweep(r.tenant, false));
    return out;
  }

  private async sweepLocked(tenant: string): Promise<{ vouchers_expired: number; reservations_expired: number }> {
    const now = await this.programs.now(tenant);
    const at = now.toISOString();
    let vouchers = 0;
    let reservations = 0;
    const seen = new Set<string>();
    for (;;) {
      // the rows are the runner's to write: before each page it has every voucher and reservation
      // made so far, and has moved the ones the pages before expired (else a page of 500 already
      // decided on would come back, all seen, and end the sweep early)
      await this.rows.catchUp();
      const { rows } = await this.pool.query<{ kind: 'voucher' | 'reservation'; id: string; member_id: string }>(
        `(select 'voucher' as kind, id, member_id, expires_at from redemption.redemptions
            where tenant = $1 and status = 'created' and expires_at is not null and expires_at <= $2 order by expires_at limit $3)
         union all
         (select 'reservation' as kind, id, member_id, expires_at from redemption.reservations
            where tenant = $1 and status = 'open' and expires_at <= $2 order by expires_at limit $3)`,
        [tenant, now, this.pageSize]);
      // rows this sweep already decided on but the read model still shows open are not retried
      const due = rows.filter((r) => !seen.has(r.id));
      if (!due.length) break;
      for (let i = 0; i < due.length; i += PARALLEL) {
        await Promise.all(due.slice(i, i + PARALLEL).map(async (row) => {
          seen.add(row.id);
          // one item's failure must not stop the others; the next sweep tries it again
          const expired = await this.expire(tenant, row, at).catch((e: unknown) => {
            this.log.warn(`could not expire ${row.kind} ${row.id} of ${tenant}: ${(e as Error).message}`);
            return false;
          });
          if (expired && row.kind === 'voucher') vouchers++;
          else if (expired) reservations++;
        }));
      }
    }
    return { vouchers_expired: vouchers, reservations_expired: reservations };
  }

  /** Expires one item on its member stream; false when it was no longer open or not yet due. */
  private expire(tenant: string, row: { kind: 'voucher' | 'reservation'; id: string; member_id: string }, at: string): Promise<boolean> {
    const reverseEntryId = newId('LE');
    return this.spending.decide(tenant, row.member_id, (s) => {
      const events = row.kind === 'voucher'
        ? decideExpireRedemption(s, { redemption_id: row.id, reverse_entry_id: reverseEntryId, at })
        : decideExpireReservation(s, { reservation_id: row.id, at });
      return { events, result: events.length > 0 };
    }, (_s, expired) => expired);
  }
}
