import { Pool, PoolClient } from 'pg';
import { STREAM_PREFIX, parseMemberStreamId } from '@loyalty/contracts';
import { EventStore, Projection, RecordedEvent } from '@loyalty/event-store';
import type { MemberEvent } from '@loyalty/domain-member';
import { prepared } from '@loyalty/platform';

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

  /**
   * New rows of the batch not written yet, by `tenant:id`: inserted in one statement each, before any
   * update reads them. A row created and moved in the same batch (a reservation confirmed moments
   * after it was opened, a voucher used at once) is moved here and inserted as the move leaves it:
   * one write instead of an insert and an update (the update changed the status, so it was never a
   * HOT update, and the open row entered the expiry index only to leave it).
   */
  private issued = new Map<string, unknown[]>();
  private opened = new Map<string, unknown[]>();
  /** Status moves of the batch not written yet, by kind: one set-based statement each, after the inserts. */
  private moves = emptyMoves();
  /** The rows a staged move touches: a second move of the same row in one batch writes the first before it. */
  private moved = new Set<string>();

  async beforeBatch(): Promise<void> {
    this.reset();
  }

  private reset(): void {
    this.issued = new Map();
    this.opened = new Map();
    this.moves = emptyMoves();
    this.moved.clear();
  }

  async afterBatch(tx: PoolClient): Promise<void> {
    await this.flush(tx);
  }

  private async flush(tx: PoolClient): Promise<void> {
    const { issued, opened, moves } = this;
    this.reset();
    if (issued.size) {
      await tx.query(INSERT_REDEMPTIONS_SQL(columnsOf([...issued.values()], 11)));
    }
    if (opened.size) {
      await tx.query(INSERT_RESERVATIONS_SQL(columnsOf([...opened.values()], 10)));
    }
    // each update moves a row out of the status it names, so replaying an event changes nothing
    for (const kind of MOVE_KINDS) if (moves[kind].length) await moveMany(tx, MOVES[kind], moves[kind]);
  }

  /**
   * Stages a status move; a row already moved in this batch has its earlier move written first (the
   * order of events per row holds). A row inserted by this batch (not written yet) is moved where it
   * is staged, as the update would have moved it: only out of the kind's `from` status, else not at all.
   */
  private async move(tx: PoolClient, kind: keyof Moves, row: unknown[]): Promise<void> {
    const { table } = MOVES[kind];
    const id = `${String(row[0])}:${String(row[1])}`;
    const fresh = (table === 'redemptions' ? this.issued : this.opened).get(id);
    if (fresh) {
      const at = STAGED_COLUMNS[table];
      if (fresh[at.status] !== MOVES[kind].from) return;
      fresh[at.status] = row[2];
      if (row[3] != null) fresh[at.order_ref] = row[3];
      if (row[4] != null && at.entry_id !== null) fresh[at.entry_id] = row[4];
      return;
    }
    const key = `${table}:${id}`;
    if (this.moved.has(key)) await this.flush(tx);
    this.moved.add(key);
    this.moves[kind].push(row);
  }

  async apply(tx: PoolClient, event: RecordedEvent): Promise<void> {
    const ids = parseMemberStreamId(event.streamId);
    if (!ids) return;
    const { tenant, memberId } = ids;
    const e = { type: event.type, data: event.data } as MemberEvent;
    switch (e.type) {
      case 'VoucherIssued': {
        const d = e.data;
        this.issued.set(`${tenant}:${d.redemption_id}`,
          [tenant, d.redemption_id, memberId, d.code, d.mode, d.mode === 'direct' ? 'used' : 'created', d.amount_cents, d.order_ref, d.entry_id, d.expires_at, d.at]);
        return;
      }
      case 'ReservationOpened': {
        const d = e.data;
        this.opened.set(`${tenant}:${d.reservation_id}`, [tenant, d.reservation_id, memberId, d.amount_cents, d.cart_ref, d.expires_at, d.at, 'open', null, null]);
        return;
      }
      case 'VoucherUsed':
        return this.move(tx, 'used', [tenant, e.data.redemption_id, 'used', e.data.order_ref]);
      case 'VoucherRestored':
        return this.move(tx, 'restored', [tenant, e.data.redemption_id, e.data.reason === 'expired' ? 'expired' : 'restored']);
      case 'ReservationConfirmed':
        return this.move(tx, 'confirmed', [tenant, e.data.reservation_id, 'confirmed', e.data.order_ref, e.data.entry_id]);
      case 'ReservationReleased':
        return this.move(tx, 'released', [tenant, e.data.reservation_id, e.data.reason === 'expired' ? 'expired' : 'released']);
      default:
        return; // the filter lets only the events above through
    }
  }
}


/** The rows a batch issues and opens, prepared (inserts whose only read is their conflict index). */
const INSERT_REDEMPTIONS_SQL = prepared('redemptions_insert',
  `insert into redemption.redemptions as r (tenant, id, member_id, code, mode, status, amount_cents, order_ref, ledger_entry_id, expires_at, created_at)
   select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::timestamptz[], $11::timestamptz[])
   on conflict (tenant, id) do update set status = excluded.status, order_ref = coalesce(excluded.order_ref, r.order_ref), updated_at = now()
    where r.status = 'created' and excluded.status <> 'created'`);
/**
 * The rows a batch opens, as the batch leaves them (a reservation confirmed or released in the batch
 * that opened it is inserted so). A row already there (never, unless written outside the runner) is
 * moved as the separate update would have moved it: out of `open` only.
 */
const INSERT_RESERVATIONS_SQL = prepared('reservations_insert',
  `insert into redemption.reservations as r (tenant, id, member_id, status, amount_cents, cart_ref, expires_at, created_at, order_ref, ledger_entry_id)
   select t.tenant, t.id, t.member_id, t.status, t.amount_cents, t.cart_ref, t.expires_at, t.created_at, t.order_ref, t.ledger_entry_id
   from unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::timestamptz[], $7::timestamptz[], $8::text[], $9::text[], $10::text[])
     as t(tenant, id, member_id, amount_cents, cart_ref, expires_at, created_at, status, order_ref, ledger_entry_id)
   on conflict (tenant, id) do update set status = excluded.status, order_ref = coalesce(excluded.order_ref, r.order_ref),
     ledger_entry_id = coalesce(excluded.ledger_entry_id, r.ledger_entry_id), updated_at = now()
    where r.status = 'open' and excluded.status <> 'open'`);

/** Where a new row not written yet (issued, opened) holds what a move sets. */
const STAGED_COLUMNS = {
  redemptions: { status: 5, order_ref: 7, entry_id: null },
  reservations: { status: 7, order_ref: 8, entry_id: 9 },
} as const;

/**
 * A kind of status move: the table and the status it moves rows out of. A staged move is the row
 * (tenant, id, new status), then the order_ref and (reservations) the ledger_entry_id it sets,
 * absent when the kind sets none.
 */
interface MoveKind { table: 'redemptions' | 'reservations'; from: 'created' | 'open' }
const MOVES = {
  used: { table: 'redemptions', from: 'created' },
  restored: { table: 'redemptions', from: 'created' },
  confirmed: { table: 'reservations', from: 'open' },
  released: { table: 'reservations', from: 'open' },
} satisfies Record<string, MoveKind>;
type Moves = Record<keyof typeof MOVES, unknown[][]>;
const MOVE_KINDS = Object.keys(MOVES) as (keyof typeof MOVES)[];
const emptyMoves = (): Moves => ({ used: [], restored: [], confirmed: [], released: [] });

/** Rows as `n` column arrays, the parameters of an `unnest(...)`. */
const columnsOf = (rows: unknown[][], n: number): unknown[][] => Array.from({ length: n }, (_, i) => rows.map((r) => r[i]));

/** The status moves, prepared: a function per table probing the primary key per row (RedemptionMoves002). */
const MOVE_SQL = {
  redemptions: prepared('redemptions_move', 'select redemption.move_redemptions($1, $2::text[], $3::text[], $4::text[], $5::text[])'),
  reservations: prepared('reservations_move', 'select redemption.move_reservations($1, $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])'),
};

/**
 * Moves rows (tenant, id, new status, order_ref, ledger_entry_id) out of the kind's `from` status,
 * and only out of it, in one statement; a column a row leaves out stays as it is.
 */
const moveMany = async (tx: Pick<PoolClient, 'query'>, kind: MoveKind, rows: unknown[][]): Promise<void> => {
  await tx.query(kind.table === 'redemptions'
    ? MOVE_SQL.redemptions([kind.from, ...columnsOf(rows, 4)])
    : MOVE_SQL.reservations([kind.from, ...columnsOf(rows, 5)]));
};

/** Every read model of the redemption service (the rebuild tool's convention: `<SERVICE>_PROJECTIONS(deps)`). */
export const REDEMPTION_PROJECTIONS = (_deps: { pool: Pool; store: EventStore }): Projection[] => [new RedemptionsProjection()];
