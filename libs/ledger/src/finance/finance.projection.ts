import { PoolClient } from 'pg';
import { pgArray } from '@loyalty/platform';
import { STREAM_PREFIX, parseMemberStreamId } from '@loyalty/contracts';
import { EventStore, Projection, RecordedEvent } from '@loyalty/event-store';
import type { Entry, MemberAggregate, MemberEvent } from '@loyalty/domain-member';
import { MemberFold } from '../projections/member-fold';
import { BalanceFigures, Movements, balanceFiguresOf, bookMovement, movementKindOf, programmeTimeOf, ZERO_MOVEMENTS } from './finance.figures';
import { SUM_COLUMNS } from './finance.migrations';

interface MovementRow { tenant: string; at: string; member_id: string; event_id: string; sums: number[] }
interface EntryRow {
  tenant: string; id: string; member_id: string; type: string; status: string; amount_cents: number; reason_code: string | null;
  rule: string | null; parent_entry_id: string | null; order_ref: string | null; release_at: string | null; expires_at: string | null; created_at: string;
  /** the member stream revision of the event that recorded the entry (the member's ledger order); -1 when this event did not record it */
  member_rev: number;
}

/** The sums of one movement row, in SUM_COLUMNS order. */
const sumsOf = (d: BalanceFigures, m: Movements): number[] =>
  [d.available, d.pending, d.negative, d.members, d.issued, d.lifetime_redeemed, m.earned, m.adjusted, m.redeemed, m.restored, m.expired, m.reversed, m.rejected];

/**
 * ledger.finance_*: what closing the books reads (decisions §9a). For each member event it books the
 * change of the member's liability figures at the event's programme time (the entry's created_at,
 * else the event's `at`), measured on the same fold as the aggregate, so a figure at T is a sum of
 * movements up to T and the identity opening + movements = closing is exact. Rows are buffered
 * during a batch and written in three statements at its end (in the runner's transaction).
 */
export class FinanceProjection implements Projection {
  readonly name = 'ledger.finance';
  readonly filter = { streamPrefixes: [STREAM_PREFIX.member] };
  readonly tables = ['ledger.finance_movements', 'ledger.finance_daily', 'ledger.finance_entries'];
  private readonly fold: MemberFold;
  private movements: MovementRow[] = [];
  private entries = new Map<string, EntryRow>();

  constructor(store: EventStore, fold?: MemberFold) {
    this.fold = fold ?? new MemberFold(store);
  }

  async beforeBatch(_tx: PoolClient, events: readonly RecordedEvent[]): Promise<void> {
    this.movements = [];
    this.entries.clear();
    await this.fold.warm(events);
  }

  async apply(_tx: PoolClient, event: RecordedEvent): Promise<void> {
    const ids = parseMemberStreamId(event.streamId);
    if (!ids) return;
    const { state, before } = await this.fold.advance(event);
    if (!state.exists) return;
    const ev = { type: event.type, data: event.data } as MemberEvent;
    const at = programmeTimeOf(ev);
    const after = balanceFiguresOf(state);
    const d: BalanceFigures = {
      available: after.available - before.available, pending: after.pending - before.pending, negative: after.negative - before.negative,
      members: after.members - before.members, issued: after.issued - before.issued, lifetime_redeemed: after.lifetime_redeemed - before.lifetime_redeemed,
    };
    const outstanding = d.available + d.pending;
    let m: Movements = ZERO_MOVEMENTS;
    if (outstanding !== 0) {
      const parentId = ev.type === 'EntryRecorded' ? ev.data.parent_entry_id : null;
      const parentType = parentId ? state.entries.get(parentId)?.type ?? null : null;
      // an event outside the known kinds that moved outstanding (none does today) is booked as an adjustment
      m = bookMovement(movementKindOf(ev, parentType) ?? 'adjusted', outstanding);
    }
    const sums = sumsOf(d, m);
    if (at && sums.some((x) => x !== 0)) this.movements.push({ tenant: ids.tenant, at, member_id: ids.memberId, event_id: event.id, sums });
    const recorded = ev.type === 'EntryRecorded' ? ev.data.id : null;
    for (const e of touchedEntries(state, ev)) {
      const key = `${ids.tenant}/${e.id}`;
      // an entry recorded earlier in this batch keeps its revision when a later event touches it
      const rev = e.id === recorded ? Number(event.revision) : this.entries.get(key)?.member_rev ?? -1;
      this.entries.set(key, entryRow(ids.tenant, ids.memberId, e, rev));
    }
  }

  async afterBatch(tx: PoolClient): Promise<void> {
    if (this.movements.length) {
      const rows = this.movements;
      const cols = SUM_COLUMNS;
      // array literals made once for both statements (pgArray)
      const params: unknown[] = [pgArray(rows.map((r) => r.tenant)), pgArray(rows.map((r) => r.at)), pgArray(rows.map((r) => r.member_id)), pgArray(rows.map((r) => r.event_id))];
      for (let i = 0; i < cols.length; i++) params.push(pgArray(rows.map((r) => r.sums[i])));
      const unnest = `unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], ${cols.map((_, i) => `$${i + 5}::bigint[]`).join(', ')})
                      as t(tenant, at, member_id, event_id, ${cols.join(', ')})`;
      await tx.query(`insert into ledger.finance_movements (tenant, at, member_id, event_id, ${cols.join(', ')})
                      select tenant, at, member_id, event_id, ${cols.join(', ')} from ${unnest}`, params);
      await tx.query(
        `insert into ledger.finance_daily (tenant, day, ${cols.join(', ')})
         select tenant, (at at time zone 'UTC')::date, ${cols.map((c) => `sum(${c})`).join(', ')} from ${unnest}
         group by 1, 2 order by 1, 2
         on conflict (tenant, day) do update set ${cols.map((c) => `${c} = ledger.finance_daily.${c} + excluded.${c}`).join(', ')}`, params);
    }
    if (this.entries.size) {
      const rows = [...this.entries.values()];
      const k = <K extends keyof EntryRow>(key: K) => pgArray(rows.map((r) => r[key]));
      await tx.query(
        `insert into ledger.finance_entries (tenant, id, member_id, type, status, amount_cents, reason_code, rule, parent_entry_id, order_ref, release_at, expires_at, created_at, member_rev)
         select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[],
                              $11::timestamptz[], $12::timestamptz[], $13::timestamptz[], $14::bigint[])
         on conflict (tenant, id) do update set status = excluded.status, release_at = excluded.release_at, expires_at = excluded.expires_at,
           member_rev = greatest(ledger.finance_entries.member_rev, excluded.member_rev)`,
        [k('tenant'), k('id'), k('member_id'), k('type'), k('status'), k('amount_cents'), k('reason_code'), k('rule'), k('parent_entry_id'),
          k('order_ref'), k('release_at'), k('expires_at'), k('created_at'), k('member_rev')]);
    }
    this.movements = [];
    this.entries.clear();
  }

  reset(): void { this.fold.reset(); }
}

/** The entries whose row an event may change: the new entry, its parent and the parent's pending take-backs; or the released/rejected entry and its take-backs. */
const touchedEntries = (s: MemberAggregate, ev: MemberEvent): Entry[] => {
  const out: Entry[] = [];
  const add = (id: string | null | undefined, withReversals: boolean) => {
    const e = id ? s.entries.get(id) : undefined;
    if (!e) return;
    out.push(e);
    if (withReversals) for (const r of e.reversal_ids ?? []) { const c = s.entries.get(r); if (c) out.push(c); }
  };
  switch (ev.type) {
    case 'EntryRecorded':
      add(ev.data.id, false);
      add(ev.data.parent_entry_id, true);
      break;
    case 'EntryReleased':
    case 'EntryRejected':
    case 'EntryReleaseScheduled':
      add(ev.data.entry_id, true);
      break;
    default:
      break;
  }
  return out;
};

const entryRow = (tenant: string, memberId: string, e: Entry, memberRev: number): EntryRow => ({
  tenant, id: e.id, member_id: memberId, type: e.type, status: e.status, amount_cents: e.amount_cents, reason_code: e.reason_code, rule: e.rule,
  parent_entry_id: e.parent_entry_id, order_ref: e.order_ref, release_at: e.release_at, expires_at: e.expires_at, created_at: e.created_at,
  member_rev: memberRev,
});
