import { LRUCache } from 'lru-cache';
import { Pool, PoolClient } from 'pg';
import { memberStreamId } from '@loyalty/contracts';
import { EventStore, GroupCommitter, ProjectionRunner, RecordedEvent, WireHead, catchUpReadModels, wipeTenantRows } from '@loyalty/event-store';
import { MemberEvent, Reservation } from '@loyalty/domain-member';
import { notFound } from '@loyalty/platform';
import { REDEMPTION_TENANT_TABLES } from '../redemption.migrations';
import { RedemptionsProjection, appliedKey } from './redemptions.projection';

/** A row of redemption.reservations. */
export interface ReservationRow {
  id: string; member_id: string; status: Reservation['status']; amount_cents: string; cart_ref: string | null; order_ref: string | null;
  ledger_entry_id: string | null; expires_at: Date; created_at: Date;
}

/**
 * The events whose rows a command writes before its reply: vouchers' (a voucher's code must be
 * seen taken at once, and a voucher is found by its code). A reservation is only ever found by its
 * id, which the process that opened it remembers, so its rows are left to the runner, which writes
 * a batch's reservations in one statement per kind instead of one transaction per command (a reserve
 * and a confirm each waited for one more commit). Readers that need the rows current catch up first.
 */
const INLINE = new Set<string>(['VoucherIssued', 'VoucherUsed', 'VoucherRestored']);

/** Owners of redemptions and reservations remembered per process (about 100 bytes each). */
const OWNERS_CACHED = 100_000;

/**
 * The redemption service's own rows (redemption.redemptions and .reservations): the runner that
 * applies every writer's events to them, the commands' own events applied before their replies
 * (read-your-writes), and who holds a redemption or reservation.
 */
export class RedemptionRows {
  /**
   * Events whose rows this process wrote before replying (read-your-writes): the runner, meeting
   * them moments later, skips them instead of writing the same rows again (an insert that
   * conflicts, a move that finds nothing to move). Each is taken once; after a restart, past the
   * bound, or when the runner meets an event before the reply's write is done, the runner simply
   * applies it again, which changes nothing. A rebuild forgets them all.
   */
  private readonly appliedInline = new LRUCache<string, true>({ max: OWNERS_CACHED });

  readonly projection = new RedemptionsProjection({
    inline: { taken: (key) => this.appliedInline.delete(key), clear: () => this.appliedInline.clear() },
  });
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
   * none. A reservation's row is written by the runner alone (see `project`): one this process did
   * not open and whose row is not there yet (another replica's, or opened just before a restart) is
   * looked up again once the runner has caught up with the store.
   */
  async ownerOf(tenant: string, table: 'redemptions' | 'reservations', id: string): Promise<string | null> {
    const known = this.owners.get(`${tenant}|${id}`);
    if (known) return known;
    const find = async () => (await this.pool.query<{ member_id: string }>(
      `select member_id from redemption.${table} where tenant = $1 and id = $2`, [tenant, id])).rows[0]?.member_id ?? null;
    const owner = (await find()) ?? (table === 'reservations' && this.runner ? (await this.catchUp(), await find()) : null);
    if (owner) this.rememberOwner(tenant, id, owner);
    return owner;
  }

  /**
   * Before a read of the rows the runner alone writes (reservations): the house's read-your-writes
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

  /**
   * Applies a command's own voucher events (INLINE) to the read model now, through the projection's
   * own `apply`. Waiting for the projection runner instead would wait for the event store's global
   * watermark, which any long transaction elsewhere holds back (hundreds of ms under load). `apply` is
   * idempotent and only moves a row out of the status it names, so the runner applying the same
   * events later (or a rebuild) changes nothing; the runner alone covers events of other writers
   * (erasure, order events confirming a reservation).
   */
  async project(streamId: string, events: MemberEvent[]): Promise<void> {
    const mine = events.filter((e) => INLINE.has(e.type));
    if (!mine.length) return;
    await this.projecting.submit({ streamId, events: mine });
  }

  /**
   * Commands' own events that arrive together are applied together (many redemptions at once):
   * new rows in one statement per table, then each status change.
   */
  private readonly projecting = new GroupCommitter<{ streamId: string; events: MemberEvent[] }, void>(async (items) => {
    // a projection instance of its own: the runner's stages rows of its batch in the shared one
    const projection = new RedemptionsProjection();
    const apply = async (tx: PoolClient) => {
      await projection.beforeBatch();
      for (const it of items) {
        for (const e of it.events) await projection.apply(tx, { streamId: it.streamId, type: e.type, data: e.data } as RecordedEvent);
      }
      await projection.afterBatch(tx);
    };
    // no transaction: every write is idempotent and conditional on the status it moves from, a
    // member's rows are written in the order of its events, and the runner applies them all again
    const client = await this.pool.connect();
    try {
      await apply(client);
    } finally {
      client.release();
    }
    // written: the runner need not write them again
    for (const it of items) for (const e of it.events) this.appliedInline.set(appliedKey(it.streamId, e.type, e.data), true);
    return items.map(() => undefined);
  });

  /**
   * A retried command that found its effect already in the stream (its first run crashed after
   * the append): applies the recorded events of that redemption or reservation to the read model
   * now, so the reply's id is found at once, as after a first run.
   */
  async projectRecorded(tenant: string, memberId: string, id: string): Promise<void> {
    const streamId = memberStreamId(tenant, memberId);
    const recorded = (await this.store.readStream(streamId)).filter((e) => {
      const d = e.data as { redemption_id?: string; reservation_id?: string };
      return d.redemption_id === id || d.reservation_id === id;
    });
    await this.project(streamId, recorded.map((e) => ({ type: e.type, data: e.data }) as MemberEvent));
  }
}
