import type { Activity, Entry, Lot, MemberAggregate } from './member.state';

/**
 * How a member state is stored in a snapshot (issue 13): as it is, except its entries, which are
 * packed column by column (one array per field) instead of one object per entry. V8's serializer
 * writes every property name of every object, so a state of a few thousand earns was mostly field
 * names; columns store each name once, and decoding a handful of arrays is far cheaper than
 * decoding thousands of objects. V8 does not share repeated strings either: types, statuses, rules and
 * reasons are stored once per value (a dictionary), and canonical ISO instants as epoch ms. Optional
 * fields keep their presence (a sparse list per field). Lots are packed the same way (issue 13: a
 * member who earns more than it spends keeps tens of thousands of live lots); the lot index and the
 * dated-lot heap are rebuilt from them on decoding, the heap in the very order it was stored. Tier
 * activity (two years of it, an item per instant) is packed by column too.
 */
const COLUMNS = ['id', 'type', 'status', 'amount_cents', 'reason_code', 'rule', 'parent_entry_id', 'release_at', 'expires_at', 'created_at',
  'order_ref', 'cause', 'bucket', 'reversed_cents'] as const;
const OPTIONAL = ['actor', 'note', 'release_on', 'batch_id', 'reversal_ids', 'spent_from', 'order_facts', 'settled_at'] as const;

type Column = (typeof COLUMNS)[number];
type Optional = (typeof OPTIONAL)[number];

/** Few distinct values (types, statuses, rules, reasons): stored once each, entries hold small indexes. */
const DICTIONARY: readonly Column[] = ['type', 'status', 'reason_code', 'rule', 'parent_entry_id', 'release_at', 'bucket'];
/** Instants: stored as epoch ms when the string is the canonical ISO form it would be printed back as. */
const INSTANTS: readonly Column[] = ['expires_at', 'created_at'];

export interface PackedEntries {
  packed: 'entries-3';
  n: number;
  cols: Partial<Record<Column, unknown[]>>;
  dict: Partial<Record<Column, { values: unknown[]; index: number[] }>>;
  /** per optional field: [entry index, value] for the entries that have it */
  opt: Record<Optional, [number, unknown][]>;
}

const instantIn = (v: unknown): unknown => {
  if (typeof v !== 'string') return v;
  const ms = Date.parse(v);
  return Number.isFinite(ms) && new Date(ms).toISOString() === v ? ms : v;
};
const instantOut = (v: unknown): unknown => (typeof v === 'number' ? new Date(v).toISOString() : v);

const pack = (entries: Map<string, Entry>): PackedEntries => {
  const list = [...entries.values()];
  const cols: Partial<Record<Column, unknown[]>> = {};
  const dict: Partial<Record<Column, { values: unknown[]; index: number[] }>> = {};
  for (const c of COLUMNS) {
    if (DICTIONARY.includes(c)) {
      const at = new Map<unknown, number>();
      const values: unknown[] = [];
      const index = list.map((e) => {
        let i = at.get(e[c]);
        if (i === undefined) { i = values.length; values.push(e[c]); at.set(e[c], i); }
        return i;
      });
      dict[c] = { values, index };
    } else if (INSTANTS.includes(c)) cols[c] = list.map((e) => instantIn(e[c]));
    else cols[c] = list.map((e) => e[c]);
  }
  const opt = Object.fromEntries(OPTIONAL.map((c) => [c, [] as [number, unknown][]])) as Record<Optional, [number, unknown][]>;
  list.forEach((e, i) => { for (const c of OPTIONAL) if (c in e) opt[c].push([i, e[c]]); });
  return { packed: 'entries-3', n: list.length, cols, dict, opt };
};

const unpack = (p: PackedEntries): Map<string, Entry> => {
  const list: Record<string, unknown>[] = new Array(p.n);
  for (let i = 0; i < p.n; i++) {
    const e: Record<string, unknown> = {};
    for (const c of COLUMNS) {
      const d = p.dict[c];
      e[c] = d ? d.values[d.index[i]] : INSTANTS.includes(c) ? instantOut(p.cols[c]![i]) : p.cols[c]![i];
    }
    list[i] = e;
  }
  for (const c of OPTIONAL) for (const [i, v] of p.opt[c]) list[i][c] = v;
  return new Map(list.map((e) => [e.id as string, e as unknown as Entry]));
};

/** Lots column by column; `dated` and `changed` are indexes into the lots (the heap keeps its order). */
export interface PackedLots {
  packed: 'lots-1';
  entry_id: string[];
  remaining_cents: number[];
  expires_at: (string | null)[];
  expires_ms: (number | null)[];
  /** indexes of the lots an expiry has named */
  expired: number[];
  dated: number[];
  changed: number[];
}

const packLots = (s: MemberAggregate): PackedLots => {
  const at = new Map<Lot, number>();
  s.lots.forEach((l, i) => at.set(l, i));
  const indexes = (list: Lot[]) => list.map((l) => at.get(l) ?? -1).filter((i) => i >= 0);
  const expired: number[] = [];
  s.lots.forEach((l, i) => { if (l.expired) expired.push(i); });
  return {
    packed: 'lots-1',
    entry_id: s.lots.map((l) => l.entry_id),
    remaining_cents: s.lots.map((l) => l.remaining_cents),
    // instants stay strings here: V8 copies a string back faster than a Date prints one
    expires_at: s.lots.map((l) => l.expires_at),
    expires_ms: s.lots.map((l) => l.expires_ms),
    expired, dated: indexes(s.dated_lots), changed: indexes(s.lots_changed),
  };
};

const unpackLots = (p: PackedLots): Pick<MemberAggregate, 'lots' | 'lot_by_id' | 'dated_lots' | 'lots_changed'> => {
  const lots: Lot[] = new Array(p.entry_id.length);
  const lotById = new Map<string, Lot>();
  for (let i = 0; i < lots.length; i++) {
    const lot: Lot = {
      entry_id: p.entry_id[i], remaining_cents: p.remaining_cents[i], expires_at: p.expires_at[i], expires_ms: p.expires_ms[i], expired: false,
    };
    lots[i] = lot;
    lotById.set(lot.entry_id, lot);
  }
  for (const i of p.expired) lots[i].expired = true;
  return { lots, lot_by_id: lotById, dated_lots: p.dated.map((i) => lots[i]), lots_changed: p.changed.map((i) => lots[i]) };
};

/** Tier activity column by column. */
export interface PackedActivity { packed: 'activity-1'; at: string[]; ms: number[]; spend: number[]; points: number[]; orders: number[] }

const packActivity = (list: Activity[]): PackedActivity => ({
  packed: 'activity-1', at: list.map((a) => a.at), ms: list.map((a) => a.ms), spend: list.map((a) => a.spend), points: list.map((a) => a.points), orders: list.map((a) => a.orders),
});

const unpackActivity = (p: PackedActivity): Activity[] => {
  const out: Activity[] = new Array(p.ms.length);
  for (let i = 0; i < out.length; i++) out[i] = { at: p.at[i], ms: p.ms[i], spend: p.spend[i], points: p.points[i], orders: p.orders[i] };
  return out;
};

/** The format a snapshot's payload names; a payload without it (or another) is never decoded into a state. */
const PAYLOAD = 'member-4';

interface Stored { payload: typeof PAYLOAD; state: Record<string, unknown> & { entries: PackedEntries; lots: PackedLots; activity: PackedActivity } }

const isPacked = (x: unknown): x is Stored => {
  const st = (x as Stored | null)?.state;
  return !!x && typeof x === 'object' && (x as Stored).payload === PAYLOAD && !!st && typeof st === 'object'
    && (st.entries as PackedEntries | undefined)?.packed === 'entries-3' && (st.lots as PackedLots | undefined)?.packed === 'lots-1'
    && (st.activity as PackedActivity | undefined)?.packed === 'activity-1';
};

/** What a snapshot stores of a member state (a shallow copy: the state itself is not touched). */
export const encodeMemberSnapshot = (s: MemberAggregate): unknown => {
  const { lot_by_id: _byId, dated_lots: _dated, lots_changed: _changed, ...rest } = s;
  return { payload: PAYLOAD, state: { ...rest, entries: pack(s.entries), lots: packLots(s), activity: packActivity(s.activity) } };
};

/** The member state a snapshot stored, or null when it is not this format's payload (an older snapshot is never misread). */
export const decodeMemberSnapshot = (stored: unknown): unknown => {
  if (!isPacked(stored)) return null;
  const { state } = stored;
  return { ...state, entries: unpack(state.entries), ...unpackLots(state.lots), activity: unpackActivity(state.activity) };
};
