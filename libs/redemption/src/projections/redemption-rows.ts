import { LRUCache } from 'lru-cache';
import { Pool } from 'pg';
import { EventStore, ProjectionRunner, WireHead, catchUpReadModels, wipeTenantRows } from '@loyalty/event-store';
import type { Reservation } from '@loyalty/domain-member';
import { notFound } from '@loyalty/platform';
import { REDEMPTION_TENANT_TABLES } from '../redemption.migrations';
import { RedemptionsProjection } from './redemptions.projection';

/** A row of redemption.reservations. */
export interface ReservationRow {
  id: string; member_id: string; status: Reservation['status']; amount_cents: string; cart_ref: string | null; order_ref: string | null;
  ledger_entry_id: string | null; expires_at: Date; created_at: Date;
}

/** Owners of redemptions and reservations remembered per process (about 100 bytes each). */
const OWNERS_CACHED = 100_000;

/**
 * The redemption service's own rows (redemption.redemptions and .reservations), written by their
 * runner alone, and who holds a redemption or reservation. No reply needs a row: replies come from
 * the member state, and the process that made a redemption or reservation remembers its owner. The
 * rows route and schedule (look-ups by id and by code, the expiry sweep), and each of those readers
 * catches the runner up before it trusts a miss (read-your-writes). Writing a command's rows before
 * its reply cost every redemption a second commit in its path (issue 7, seventeenth round).
 */
export class RedemptionRows {
  readonly projection = new RedemptionsProjection();
  /** the read model's runner, once the module has started it */
  runner: ProjectionRunner | null = null;

  constructor(private readonly pool: Pool, private readonly store: EventStore) {}

  /**
   * Which member holds a redemption or reservation never changes: the owners this process has
   * created or looked up are remembered (at most OWNERS_CACHED), so confirming what it just
   * reserved reads nothing.
   */
  private readonly owners = new LRUCache<string, string>({ max: OWNERS_CACHED });

  rememberOwner(tenant: string, id: string, memberId: string): void {
    this.owners.set(`${tenant}|${id}`, memberId);
  }

  /**
   * The member holding a redemption (RD-…) or reservation (RS-…) of this tenant; null when there is
   * none. The rows are the runner's alone: an id this process does not remember and whose row is not
   * there yet (another replica's, one made just before a restart, one whose runner is behind) is
   * looked up again once the runner has caught up with the store.
   */
  async ownerOf(tenant: string, table: 'redemptions' | 'reservations', id: string): Promise<string | null> {
    const known = this.owners.get(`${tenant}|${id}`);
    if (known) return known;
    const find = async () => (await this.pool.query<{ member_id: string }>(
      `select member_id from redemption.${table} where tenant = $1 and id = $2`, [tenant, id])).rows[0]?.member_id ?? null;
    const owner = await this.findCaughtUp(find);
    if (owner) this.rememberOwner(tenant, id, owner);
    return owner;
  }

  /**
   * The redemption holding a voucher code (the first issued, as codes are checked free before
   * use) and its member; null when none. Caught up on a miss, as `ownerOf`: a code issued a moment
   * ago, by any process, is found.
   */
  async byCode(tenant: string, code: string): Promise<{ id: string; member_id: string } | null> {
    const find = async () => (await this.pool.query<{ id: string; member_id: string }>(
      'select id, member_id from redemption.redemptions where tenant = $1 and code = $2 order by created_at limit 1', [tenant, code])).rows[0] ?? null;
    const found = await this.findCaughtUp(find);
    if (found) this.rememberOwner(tenant, found.id, found.member_id);
    return found;
  }

  /** `find`, and once more after the runner has caught up when it finds nothing (the rows are the runner's alone). */
  private async findCaughtUp<T>(find: () => Promise<T | null>): Promise<T | null> {
    const found = await find();
    if (found !== null || !this.runner) return found;
    await this.catchUp();
    return find();
  }

  /**
   * Before a read of the rows (they are the runner's alone): the house's read-your-writes
   * catch-up (every event committed so far, by any process); after `timeoutMs` the read proceeds on
   * what is there.
   */
  catchUp(timeoutMs = 10_000): Promise<void> {
    return catchUpReadModels(this.store, this.runner ? [this.runner] : [], timeoutMs);
  }

  /** A reservation's row (what is left of it once the member state no longer holds it); 404 when there is none. */
  async reservation(tenant: string, id: string): Promise<ReservationRow> {
    const { rows } = await this.pool.query<ReservationRow>(
      `select id, member_id, status, amount_cents, cart_ref, order_ref, ledger_entry_id, expires_at, created_at
         from redemption.reservations where tenant = $1 and id = $2`, [tenant, id]);
    if (!rows.length) throw notFound('reservation');
    return rows[0];
  }

  /** Starts the runner that applies every writer's events to these rows. */
  async start(): Promise<void> {
    this.runner = new ProjectionRunner(this.store, this.pool, this.projection);
    await this.runner.start();
  }

  async stop(): Promise<void> {
    await this.runner?.stop();
  }

  /**
   * This service's part of a sandbox wipe (the ledger deleted the streams first): the sandbox's
   * redemption rows go, once the runner is past `head`.
   */
  async wipe(tenant: string, head?: WireHead | null): Promise<{ rows: number }> {
    return { rows: await wipeTenantRows(this.store, this.pool, this.runner ? [this.runner] : [], REDEMPTION_TENANT_TABLES, tenant, head) };
  }
}
