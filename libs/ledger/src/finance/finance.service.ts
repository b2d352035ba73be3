import { Pool } from 'pg';
import { ProgramStore } from '@loyalty/programs';
import type { LedgerEntryType } from '@loyalty/contracts';
import { FieldError, decodeCursorAs, encodeCursor, validation } from '@loyalty/platform';
import { LedgerReadModels } from '../ledger.read-models';
import { Liability, LiabilityService } from '../liability/liability.service';
import { Breakage, Movements, Position4, breakageOf } from './finance.figures';
import { SUM_COLUMNS, SumColumn } from './finance.migrations';

export type LiabilityAsOf = Liability;

export interface RollForward {
  from: string; to: string; opening: Position4; closing: Position4;
  movements: { earned_cents: number; adjusted_cents: number; redeemed_cents: number; restored_cents: number; expired_cents: number; reversed_cents: number; rejected_cents: number };
  breakage: Breakage;
}

export interface FinanceEntryView {
  id: string; member_id: string; type: string; status: string; amount_cents: number; currency: string; reason_code: string | null; rule: string | null;
  parent_entry_id: string | null; order_ref: string | null; release_at: string | null; expires_at: string | null; created_at: string;
}

export const ENTRY_TYPES: readonly LedgerEntryType[] = ['earn', 'redeem', 'expire', 'reverse', 'adjust'];
export const ENTRIES_MAX_LIMIT = 1000;

type Sums = Record<SumColumn, number>;

/** RFC 3339 date-time with a zone (what the API prints); a date alone is ambiguous for a cut-off and refused. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$/i;

/** Whether the fields name a real calendar instant (no 30 February, no 24:00, offsets within ±23:59). */
const realInstant = (m: RegExpExecArray): boolean => {
  const [y, mo, d, h, mi, s] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i]));
  const daysInMonth = mo >= 1 && mo <= 12 ? new Date(Date.UTC(y, mo, 0)).getUTCDate() : 0;
  const offsetOk = m[9] === undefined || (Number(m[9]) <= 23 && Number(m[10]) <= 59);
  return d >= 1 && d <= daysInMonth && h <= 23 && mi <= 59 && s <= 59 && offsetOk;
};

/** The instant a query parameter names, or a field error at `/<name>`. */
export const parseInstantParam = (name: string, raw: unknown, errors: FieldError[]): Date | null => {
  const m = typeof raw === 'string' ? RFC3339.exec(raw) : null;
  if (!m || !realInstant(m)) {
    errors.push({ path: `/${name}`, message: `${name} must be an RFC 3339 date-time with a time zone, e.g. 2026-01-31T23:59:59Z` });
    return null;
  }
  const d = new Date(raw as string);
  if (Number.isNaN(d.getTime())) {
    errors.push({ path: `/${name}`, message: `${name} is not a valid date-time` });
    return null;
  }
  return d;
};

/**
 * Closing the books (decisions §9a): point-in-time liability, roll-forward with breakage, and the
 * period's journal of entries, all in programme time, from the FinanceProjection's rows: a figure
 * at T is the daily sums before T's UTC day plus the movements of that day up to T.
 */
export class FinanceService {
  constructor(
    private readonly pool: Pool,
    private readonly programs: ProgramStore,
    private readonly readModels: LedgerReadModels,
    private readonly liability: LiabilityService,
  ) {}

  /** GET /v1/tenant/liability[?as_of=T] */
  async liabilityAt(tenant: string, asOf: unknown): Promise<LiabilityAsOf> {
    if (asOf === undefined) return this.liability.get(tenant);
    const errors: FieldError[] = [];
    const t = parseInstantParam('as_of', asOf, errors);
    if (t && t.getTime() > (await this.now(tenant, t)).getTime()) {
      errors.push({ path: '/as_of', message: 'as_of is after the programme\'s current time' });
    }
    if (errors.length || !t) throw validation(errors);
    await this.catchUp();
    const s = await this.sumsAt(tenant, t);
    return { ...liabilityOf(s), as_of: t.toISOString() };
  }

  /** GET /v1/tenant/liability/roll-forward?from=F&to=T (F < T ≤ now) */
  async rollForward(tenant: string, q: { from?: unknown; to?: unknown }): Promise<RollForward> {
    const errors: FieldError[] = [];
    const from = q.from === undefined ? (errors.push({ path: '/from', message: 'from is required' }), null) : parseInstantParam('from', q.from, errors);
    const to = q.to === undefined ? (errors.push({ path: '/to', message: 'to is required' }), null) : parseInstantParam('to', q.to, errors);
    if (to && to.getTime() > (await this.now(tenant, to)).getTime()) errors.push({ path: '/to', message: 'to is after the programme\'s current time' });
    if (from && to && from.getTime() >= to.getTime()) errors.push({ path: '/from', message: 'from must be before to' });
    if (errors.length || !from || !to) throw validation(errors);
    await this.catchUp();
    const [opening, closing] = await Promise.all([this.sumsAt(tenant, from), this.sumsAt(tenant, to)]);
    return rollForwardOf(from.toISOString(), to.toISOString(), opening, closing);
  }

  /** GET /v1/ledger-entries: entries created in (from, to], oldest first (created_at, id), keyset-paginated. */
  async entries(tenant: string, q: { from?: unknown; to?: unknown; type?: unknown; limit?: unknown; cursor?: unknown }): Promise<{ data: FinanceEntryView[]; pagination: { cursor: string | null } }> {
    const errors: FieldError[] = [];
    const from = q.from === undefined ? null : parseInstantParam('from', q.from, errors);
    const to = q.to === undefined ? null : parseInstantParam('to', q.to, errors);
    const now = await this.now(tenant, to);
    if (to && to.getTime() > now.getTime()) errors.push({ path: '/to', message: 'to is after the programme\'s current time' });
    if (from && from.getTime() >= (to ?? now).getTime()) errors.push({ path: '/from', message: 'from must be before to' });
    if (q.type !== undefined && !ENTRY_TYPES.includes(q.type as LedgerEntryType)) {
      errors.push({ path: '/type', message: `type must be one of ${ENTRY_TYPES.join(', ')}` });
    }
    const limit = q.limit === undefined ? 100 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > ENTRIES_MAX_LIMIT) errors.push({ path: '/limit', message: `limit must be an integer from 1 to ${ENTRIES_MAX_LIMIT}` });
    let after: [string, string] | null = null;
    if (q.cursor !== undefined) {
      const c = typeof q.cursor === 'string' ? decodeEntriesCursor(q.cursor) : null;
      if (c) after = c;
      else errors.push({ path: '/cursor', message: 'cursor is not valid' });
    }
    if (errors.length) throw validation(errors);
    await this.catchUp();
    const params: unknown[] = [tenant, from?.toISOString() ?? null, (to ?? now).toISOString(), limit + 1];
    let where = 'tenant = $1 and ($2::timestamptz is null or created_at > $2) and created_at <= $3';
    if (q.type !== undefined) { params.push(q.type); where += ` and type = $${params.length}`; }
    if (after) { params.push(after[0], after[1]); where += ` and (created_at, id) > ($${params.length - 1}::timestamptz, $${params.length})`; }
    const { rows } = await this.pool.query<EntryRow>(
      `select id, member_id, type, status, amount_cents, reason_code, rule, parent_entry_id, order_ref, release_at, expires_at, created_at
       from ledger.finance_entries where ${where} order by created_at, id limit $4`, params);
    const more = rows.length > limit;
    const page = more ? rows.slice(0, limit) : rows;
    const { currency_name } = await this.programs.forTenant(tenant);
    const data = page.map((r) => entryView(r, currency_name));
    const last = data[data.length - 1];
    return { data, pagination: { cursor: more && last ? encodeCursor([last.created_at, last.id]) : null } };
  }

  /** Every figure summed up to and including T: days before T's UTC day, then that day's movements up to T. */
  async sumsAt(tenant: string, t: Date): Promise<Sums> {
    const cols = SUM_COLUMNS;
    const { rows } = await this.pool.query<Record<SumColumn, string>>(
      `with cut as (select $2::timestamptz as t, (($2::timestamptz at time zone 'UTC')::date) as day),
       d as (select ${cols.map((c) => `coalesce(sum(${c}), 0) as ${c}`).join(', ')}
             from ledger.finance_daily, cut where tenant = $1 and finance_daily.day < cut.day),
       m as (select ${cols.map((c) => `coalesce(sum(${c}), 0) as ${c}`).join(', ')}
             from ledger.finance_movements, cut where tenant = $1 and at >= (cut.day::timestamp at time zone 'UTC') and at <= cut.t)
       select ${cols.map((c) => `(d.${c} + m.${c})::text as ${c}`).join(', ')} from d, m`, [tenant, t.toISOString()]);
    const out = {} as Sums;
    for (const c of cols) out[c] = Number(rows[0][c]);
    return out;
  }

  /**
   * The programme clock. ProgramStore caches a sandbox's test-clock offset until a notification of
   * its change arrives; an instant just set by `test-clock/advance` may be ahead of a cache that has
   * not heard yet, so before refusing an instant as in the future the offset is read afresh.
   */
  private async now(tenant: string, instant: Date | null): Promise<Date> {
    const cached = await this.programs.now(tenant);
    if (!instant || instant.getTime() <= cached.getTime() || !tenant.endsWith('_test')) return cached;
    return this.programs.nowUncached(tenant);
  }

  /** Everything already committed to the event store is in the projection (bounded: a slow runner never blocks a read). */
  private catchUp(): Promise<void> {
    return this.readModels.catchUp(10_000);
  }
}

interface EntryRow {
  id: string; member_id: string; type: string; status: string; amount_cents: string; reason_code: string | null; rule: string | null;
  parent_entry_id: string | null; order_ref: string | null; release_at: Date | null; expires_at: Date | null; created_at: Date;
}

/** The journal's cursor: the last row's (created_at as an ISO instant, entry id); null when forged or corrupted. */
const decodeEntriesCursor = (c: string): [string, string] | null => {
  try {
    return decodeCursorAs<[string, string]>(c, (v) => v.length === 2 && typeof v[0] === 'string' && ISO_INSTANT.test(v[0])
      && !Number.isNaN(Date.parse(v[0])) && typeof v[1] === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(v[1]));
  } catch {
    return null;
  }
};
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

const entryView = (r: EntryRow, currency: string): FinanceEntryView => ({
  id: r.id, member_id: r.member_id, type: r.type, status: r.status, amount_cents: Number(r.amount_cents), currency, reason_code: r.reason_code,
  rule: r.rule, parent_entry_id: r.parent_entry_id, order_ref: r.order_ref, release_at: r.release_at?.toISOString() ?? null,
  expires_at: r.expires_at?.toISOString() ?? null, created_at: r.created_at.toISOString(),
});

export const liabilityOf = (s: Sums): Omit<LiabilityAsOf, 'as_of'> => ({
  outstanding_cents: s.d_available + s.d_pending, available_cents: s.d_available, pending_cents: s.d_pending,
  lifetime_issued_cents: s.d_issued, lifetime_redeemed_cents: s.d_lifetime_redeemed, members: s.d_members, negative_balance_cents: s.d_negative,
});

const position4 = (s: Sums): Position4 => ({ outstanding_cents: s.d_available + s.d_pending, available_cents: s.d_available, pending_cents: s.d_pending, members: s.d_members });

export const rollForwardOf = (from: string, to: string, opening: Sums, closing: Sums): RollForward => {
  const mv = (k: keyof Movements) => closing[k] - opening[k];
  return {
    from, to, opening: position4(opening), closing: position4(closing),
    movements: {
      earned_cents: mv('earned'), adjusted_cents: mv('adjusted'), redeemed_cents: mv('redeemed'), restored_cents: mv('restored'),
      expired_cents: mv('expired'), reversed_cents: mv('reversed'), rejected_cents: mv('rejected'),
    },
    breakage: breakageOf(closing, closing.d_available + closing.d_pending),
  };
};
