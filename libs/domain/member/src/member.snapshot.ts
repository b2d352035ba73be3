import type { Entry, MemberAggregate } from './member.state';

/**
 * How a member state is stored in a snapshot (issue 13): as it is, except its entries, which are
 * packed column by column (one array per field) instead of one object per entry. V8's serializer
 * writes every property name of every object, so a state of a few thousand earns was mostly field
 * names; columns store each name once, and decoding a handful of arrays is far cheaper than
 * decoding thousands of objects. V8 does not share repeated strings either: types, statuses, rules and
 * reasons are stored once per value (a dictionary), and canonical ISO instants as epoch ms. Optional
 * fields keep their presence (a sparse list per field).
 */
const COLUMNS = ['id', 'type', 'status', 'amount_cents', 'reason_code', 'rule', 'parent_entry_id', 'release_at', 'expires_at', 'created_at',
  'order_ref', 'cause', 'bucket', 'reversed_cents'] as const;
const OPTIONAL = ['actor', 'note', 'release_on', 'batch_id', 'reversal_ids', 'spent_from'] as const;

type Column = (typeof COLUMNS)[number];
type Optional = (typeof OPTIONAL)[number];

/** Few distinct values (types, statuses, rules, reasons): stored once each, entries hold small indexes. */
const DICTIONARY: readonly Column[] = ['type', 'status', 'reason_code', 'rule', 'parent_entry_id', 'release_at', 'bucket'];
/** Instants: stored as epoch ms when the string is the canonical ISO form it would be printed back as. */
const INSTANTS: readonly Column[] = ['expires_at', 'created_at'];

export interface PackedEntries {
  packed: 'entries-2';
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
  return { packed: 'entries-2', n: list.length, cols, dict, opt };
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

const isPacked = (x: unknown): x is PackedEntries => !!x && typeof x === 'object' && (x as PackedEntries).packed === 'entries-2';

/** What a snapshot stores of a member state (a shallow copy: the state itself is not touched). */
export const encodeMemberSnapshot = (s: MemberAggregate): unknown => ({ ...s, entries: pack(s.entries) });

/** The member state a snapshot stored; anything not packed this way is returned as it is (the shape check decides). */
export const decodeMemberSnapshot = (stored: unknown): unknown => {
  if (!stored || typeof stored !== 'object' || !isPacked((stored as { entries?: unknown }).entries)) return stored;
  return { ...(stored as object), entries: unpack((stored as { entries: PackedEntries }).entries) };
};
