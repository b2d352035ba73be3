import { Pool, PoolClient } from 'pg';
import { STREAM_PREFIX, parseMemberStreamId } from '@loyalty/contracts';
import { EventStore, Projection, RecordedEvent } from '@loyalty/event-store';
import type { MemberEvent } from '@loyalty/domain-member';

const HANDLED = ['VoucherIssued', 'VoucherUsed', 'VoucherRestored', 'ReservationOpened', 'ReservationConfirmed', 'ReservationReleased'] as const;

/**
 * redemption.redemptions and redemption.reservations: which member holds a redemption or a
 * reservation (by id and by voucher code), its status and expiry, for lookups and the expiry sweep.
 * Balances and the API's view come from the member aggregate; these rows only route and schedule.
 * Every write is conditional on the status it moves from, so replaying an event changes nothing.
 */
export class RedemptionsProjection implements Projection {
  readonly name = 'redemption.redemptions';
  readonly filter = { streamPrefixes: [STREAM_PREFIX.member], eventTypes: [...HANDLED] as string[] };
  readonly tables = ['redemption.redemptions', 'redemption.reservations'];

  /** New rows of the batch not written yet: inserted in one statement each, before any update reads them. */
  private issued: unknown[][] = [];
  private opened: unknown[][] = [];

  async beforeBatch(): Promise<void> {
    this.issued = [];
    this.opened = [];
  }

  async afterBatch(tx: PoolClient): Promise<void> {
    await this.flush(tx);
  }

  private async flush(tx: PoolClient): Promise<void> {
    const issued = this.issued;
    const opened = this.opened;
    this.issued = [];
    this.opened = [];
    const col = (rows: unknown[][], i: number) => rows.map((r) => r[i]);
    if (issued.length) {
      await tx.query(
        `insert into redemption.redemptions (tenant, id, member_id, code, mode, status, amount_cents, order_ref, ledger_entry_id, expires_at, created_at)
         select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::timestamptz[], $11::timestamptz[])
         on conflict (tenant, id) do nothing`,
        Array.from({ length: 11 }, (_, i) => col(issued, i)));
    }
    if (opened.length) {
      await tx.query(
        `insert into redemption.reservations (tenant, id, member_id, status, amount_cents, cart_ref, expires_at, created_at)
         select t.tenant, t.id, t.member_id, 'open', t.amount_cents, t.cart_ref, t.expires_at, t.created_at
         from unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::timestamptz[], $7::timestamptz[])
           as t(tenant, id, member_id, amount_cents, cart_ref, expires_at, created_at)
         on conflict (tenant, id) do nothing`,
        Array.from({ length: 7 }, (_, i) => col(opened, i)));
    }
  }

  async apply(tx: PoolClient, event: RecordedEvent): Promise<void> {
    const ids = parseMemberStreamId(event.streamId);
    if (!ids) return;
    const { tenant, memberId } = ids;
    const e = { type: event.type, data: event.data } as MemberEvent;
    switch (e.type) {
      case 'VoucherIssued': {
        const d = e.data;
        this.issued.push([tenant, d.redemption_id, memberId, d.code, d.mode, d.mode === 'direct' ? 'used' : 'created', d.amount_cents, d.order_ref, d.entry_id, d.expires_at, d.at]);
        return;
      }
      case 'ReservationOpened': {
        const d = e.data;
        this.opened.push([tenant, d.reservation_id, memberId, d.amount_cents, d.cart_ref, d.expires_at, d.at]);
        return;
      }
      default:
        break;
    }
    // an update moves a row out of the status it names: the rows it may touch are written first
    await this.flush(tx);
    switch (e.type) {
      case 'VoucherUsed':
        return moveFrom(tx, 'redemptions', 'created', tenant, e.data.redemption_id, { status: 'used', order_ref: e.data.order_ref });
      case 'VoucherRestored':
        return moveFrom(tx, 'redemptions', 'created', tenant, e.data.redemption_id, { status: e.data.reason === 'expired' ? 'expired' : 'restored' });
      case 'ReservationConfirmed':
        return moveFrom(tx, 'reservations', 'open', tenant, e.data.reservation_id, { status: 'confirmed', order_ref: e.data.order_ref, ledger_entry_id: e.data.entry_id });
      case 'ReservationReleased':
        return moveFrom(tx, 'reservations', 'open', tenant, e.data.reservation_id, { status: e.data.reason === 'expired' ? 'expired' : 'released' });
      default:
        return; // the filter lets only the events above through
    }
  }
}

/**
 * Moves a row out of the status `from`, and only out of it (a replay, or the runner applying what
 * a command applied already, changes nothing): sets `set` (column → value; the columns are ours).
 */
const moveFrom = async (
  tx: Pick<PoolClient, 'query'>, table: 'redemptions' | 'reservations', from: 'created' | 'open', tenant: string, id: string, set: Record<string, unknown>,
): Promise<void> => {
  const columns = Object.keys(set).map((c, i) => `${c} = $${i + 3}`).join(', ');
  await tx.query(`update redemption.${table} set ${columns}, updated_at = now() where tenant = $1 and id = $2 and status = '${from}'`, [tenant, id, ...Object.values(set)]);
};

/** Every read model of the redemption service (the rebuild tool's convention: `<SERVICE>_PROJECTIONS(deps)`). */
export const REDEMPTION_PROJECTIONS = (_deps: { pool: Pool; store: EventStore }): Projection[] => [new RedemptionsProjection()];
