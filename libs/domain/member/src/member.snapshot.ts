import type { Activity, ActivitySums, Entry, Lot, MemberAggregate } from './member.state';

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
 * activity (two years of it, an item per instant) is packed by column too. Since member-5 the
 * numbers of lots and activity are typed arrays (V8 writes and reads their bytes as one copy, where
 * a list of numbers is a value at a time), and tier activity's prefix sums are stored with it.
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

/** Numbers by column: 4 bytes each when every one is a 32-bit integer (points and counts), else 8 (any number, exactly). */
type Numbers = Int32Array | Float64Array;
const numbers = (list: ArrayLike<number>): Numbers => {
  for (let i = 0; i < list.length; i++) if ((list[i] | 0) !== list[i] || Object.is(list[i], -0)) return Float64Array.from(list);
  return Int32Array.from(list);
};

/**
 * Lots column by column (member-5): numbers in typed arrays (V8 copies their bytes), expiry instants
 * as a dictionary (lots share few of them) with their epoch ms beside each value. The entry ids stay
 * a list of strings: joined into one string they would decode as slices of it, and one live slice
 * keeps the whole string alive, which a state's size estimate does not see. `expired`, `dated` and `changed` are indexes into the lots (the heap keeps its order).
 */
export interface PackedLots {
  packed: 'lots-2';
  n: number;
  entry_ids: string[];
  remaining_cents: Numbers;
  /** distinct `expires_at` values (and their `expires_ms`); `expires` indexes them per lot */
  expires_values: (string | null)[];
  expires_ms_values: (number | null)[];
  expires: Int32Array;
  /** indexes of the lots an expiry has named */
  expired: Int32Array;
  dated: Int32Array;
  changed: Int32Array;
}

const packLots = (s: MemberAggregate): PackedLots => {
  const n = s.lots.length;
  const at = new Map<Lot, number>();
  const remaining: number[] = new Array(n);
  const expires = new Int32Array(n);
  const values: (string | null)[] = [];
  const msValues: (number | null)[] = [];
  const byValue = new Map<string | null, number[]>(); // one value may (in theory) carry different ms: keep the pair
  const expired: number[] = [];
  s.lots.forEach((l, i) => {
    at.set(l, i);
    remaining[i] = l.remaining_cents;
    let candidates = byValue.get(l.expires_at);
    if (!candidates) byValue.set(l.expires_at, (candidates = []));
    let k = candidates.find((c) => Object.is(msValues[c], l.expires_ms));
    if (k === undefined) {
      k = values.length;
      values.push(l.expires_at);
      msValues.push(l.expires_ms);
      candidates.push(k);
    }
    expires[i] = k;
    if (l.expired) expired.push(i);
  });
  const indexes = (list: Lot[]) => Int32Array.from(list.map((l) => at.get(l) ?? -1).filter((i) => i >= 0));
  return {
    packed: 'lots-2', n, entry_ids: s.lots.map((l) => l.entry_id), remaining_cents: numbers(remaining),
    expires_values: values, expires_ms_values: msValues, expires,
    expired: Int32Array.from(expired), dated: indexes(s.dated_lots), changed: indexes(s.lots_changed),
  };
};

const unpackLots = (p: PackedLots): Pick<MemberAggregate, 'lots' | 'lot_by_id' | 'dated_lots' | 'lots_changed'> => {
  const ids = p.entry_ids;
  if (ids.length !== p.n || p.remaining_cents.length !== p.n || p.expires.length !== p.n) throw new Error('a packed lot column of the wrong length');
  const lots: Lot[] = new Array(p.n);
  const lotById = new Map<string, Lot>();
  const { remaining_cents: remaining, expires, expires_values: values, expires_ms_values: msValues } = p;
  for (let i = 0; i < p.n; i++) {
    const k = expires[i];
    const lot: Lot = { entry_id: ids[i], remaining_cents: remaining[i], expires_at: values[k], expires_ms: msValues[k], expired: false };
    lots[i] = lot;
    lotById.set(lot.entry_id, lot);
  }
  for (const i of p.expired) lots[i].expired = true;
  const pick = (list: Int32Array): Lot[] => {
    const out: Lot[] = new Array(list.length);
    for (let j = 0; j < list.length; j++) out[j] = lots[list[j]];
    return out;
  };
  return { lots, lot_by_id: lotById, dated_lots: pick(p.dated), lots_changed: pick(p.changed) };
};

/** Tier activity column by column (member-5): numbers in typed arrays, the instants a list of strings, the prefix sums beside them. */
export interface PackedActivity {
  packed: 'activity-2';
  n: number;
  at: string[];
  ms: Float64Array; spend: Numbers; points: Numbers; orders: Numbers;
  sums: { spend: Numbers; points: Numbers; orders: Numbers };
}

const packActivity = (list: Activity[], sums: ActivitySums): PackedActivity => ({
  packed: 'activity-2', n: list.length, at: list.map((a) => a.at),
  ms: Float64Array.from(list, (a) => a.ms), spend: numbers(list.map((a) => a.spend)),
  points: numbers(list.map((a) => a.points)), orders: numbers(list.map((a) => a.orders)),
  sums: { spend: numbers(sums.spend), points: numbers(sums.points), orders: numbers(sums.orders) },
});

const toArray = (xs: Numbers): number[] => {
  const out: number[] = new Array(xs.length);
  for (let i = 0; i < xs.length; i++) out[i] = xs[i];
  return out;
};

const unpackActivity = (p: PackedActivity): Pick<MemberAggregate, 'activity' | 'activity_sums'> => {
  const { at } = p;
  if (at.length !== p.n || p.ms.length !== p.n || p.sums.spend.length !== p.n + 1) throw new Error('a packed activity column of the wrong length');
  const out: Activity[] = new Array(p.n);
  const { ms, spend, points, orders } = p;
  for (let i = 0; i < p.n; i++) out[i] = { at: at[i], ms: ms[i], spend: spend[i], points: points[i], orders: orders[i] };
  return { activity: out, activity_sums: { spend: toArray(p.sums.spend), points: toArray(p.sums.points), orders: toArray(p.sums.orders) } };
};

/** The format a snapshot's payload names; a payload without it (or another) is never decoded into a state. */
const PAYLOAD = 'member-5';

interface Stored { payload: typeof PAYLOAD; state: Record<string, unknown> & { entries: PackedEntries; lots: PackedLots; activity: PackedActivity } }

const isPacked = (x: unknown): x is Stored => {
  const st = (x as Stored | null)?.state;
  return !!x && typeof x === 'object' && (x as Stored).payload === PAYLOAD && !!st && typeof st === 'object'
    && (st.entries as PackedEntries | undefined)?.packed === 'entries-3' && (st.lots as PackedLots | undefined)?.packed === 'lots-2'
    && (st.activity as PackedActivity | undefined)?.packed === 'activity-2';
};

/** What a snapshot stores of a member state (a shallow copy: the state itself is not touched). */
export const encodeMemberSnapshot = (s: MemberAggregate): unknown => {
  const { lot_by_id: _byId, dated_lots: _dated, lots_changed: _changed, activity_sums: _sums, ...rest } = s;
  return { payload: PAYLOAD, state: { ...rest, entries: pack(s.entries), lots: packLots(s), activity: packActivity(s.activity, s.activity_sums) } };
};

/** The member state a snapshot stored, or null when it is not this format's payload (an older snapshot is never misread). */
export const decodeMemberSnapshot = (stored: unknown): unknown => {
  if (!isPacked(stored)) return null;
  const { state } = stored;
  try {
    return { ...state, entries: unpack(state.entries), ...unpackLots(state.lots), ...unpackActivity(state.activity) };
  } catch {
    return null; // columns that do not line up: never a state
  }
};
