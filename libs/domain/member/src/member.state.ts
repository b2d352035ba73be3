import { STREAM_PREFIX } from '@loyalty/contracts';
import type { Balances, LedgerEntryStatus, MemberState, MemberTier } from '@loyalty/contracts';
import { parseInstant } from '@loyalty/domain-earning';
import type { Bucket, EarnCopy, EntryData, MemberEvent, SealedPii } from './member.events';
import { decodeMemberSnapshot, encodeMemberSnapshot } from './member.snapshot';

export interface Entry extends EntryData {
  /** which balance the entry currently sits in (internal; status is what the API shows) */
  bucket: Bucket;
  /** earns: amount already taken back by reverse entries */
  reversed_cents: number;
  /** reverse entries that took from this entry while it was pending: their status follows its fate */
  reversal_ids?: string[];
  /** redeems: the lots the spend came from, oldest first (a restore expires like the newest of them) */
  spent_from?: { entry_id: string; amount: number; expires_at: string | null }[];
  /** earns: when a pending earn was released or rejected (retention counts from it; absent = created settled) */
  settled_at?: string;
}

/**
 * A credit lot for FIFO spending and expiry. `expires_ms` is `expires_at` as epoch ms (parsed once);
 * `expired` once an expire entry has named the lot (cause `lot:<entry id>`).
 */
export interface Lot { entry_id: string; remaining_cents: number; expires_at: string | null; expires_ms: number | null; expired: boolean }

export interface Reservation {
  id: string; amount_cents: number; cart_ref: string | null; status: 'open' | 'confirmed' | 'released' | 'expired'; order_ref: string | null; entry_id: string | null; expires_at: string; created_at: string;
  /** the opening request's fingerprint (method, path, body hashed), when its Idempotency-Key was claimed with it: a retry must match it */
  fingerprint?: string;
}
export interface Voucher {
  id: string; code: string; mode: 'voucher' | 'direct'; amount_cents: number; entry_id: string; status: 'created' | 'used' | 'restored' | 'expired'; order_ref: string | null; expires_at: string | null; created_at: string;
  /** the creating request's fingerprint, when its Idempotency-Key was claimed with it: a retry must match it */
  fingerprint?: string;
}

export interface ActivitySums { spend: number[]; points: number[]; orders: number[] }

/** Tier activity; `ms` is `at` as epoch ms. The aggregate keeps its list sorted by `ms`. */
export interface Activity { at: string; ms: number; spend: number; points: number; orders: number }

export interface MemberAggregate {
  exists: boolean;
  id: string;
  state: MemberState;
  /** state before a pause, for resume */
  paused_from: MemberState | null;
  /** state before a suspension (may be `paused`), for reinstate */
  suspended_from: MemberState | null;
  referral_code: string;
  pii: SealedPii | null;
  marketing_consent: boolean;
  accepted_terms_version: string | null;
  enrolled_at: string | null;
  created_at: string;
  last_activity_at: string | null;
  tier: MemberTier | null;
  /** when the current tier must be re-evaluated because its window moves (null = never) */
  tier_review_at: string | null;
  /** posted debits no lot could cover (a negative balance); later credits pay it before forming lots */
  debt: number;
  available: number;
  pending: number;
  reserved: number;
  lifetime_earned: number;
  lifetime_redeemed: number;
  /**
   * The entries decisions may still reach (issue 13): pending and under-review earns, rejected earns
   * of an order, earns recorded before issue 13 (their order streams keep no facts), migration
   * adjusts not yet fully taken back, pending take-backs, redeems of vouchers the state still holds,
   * and any entry recorded (or settled) within the retention (`MEMBER_RETENTION`). A settled earn of
   * an order is answered by its order stream (`OrderEarn`); the rest is left to the read models
   * (ledger.finance_entries). Insertion order is recording order (a restored earn goes last).
   */
  entries: Map<string, Entry>;
  /** only live lots are kept (spent ones are dropped at compaction); `lot_head` skips those spent since */
  lots: Lot[];
  /** Indexes kept by evolve so that no step walks the member's whole history (per-event cost stays flat). */
  /** lot by its entry id */
  lot_by_id: Map<string, Lot>;
  /** lots before this index have nothing left (spending and expiry empty them oldest first) */
  lot_head: number;
  /** the lots the last evolved event created or changed (what a read model of lots must rewrite) */
  lots_changed: Lot[];
  /** earn entries in the pending bucket (pending or under review), in recording order */
  pending_earns: Set<string>;
  /** cause → entry ids it produced (idempotency of effects), kept for the retention (signup: forever) */
  causes: Map<string, string[]>;
  /** when each cause was recorded (the member's clock then), in recording order: what retention prunes by */
  cause_at: Map<string, number>;
  /** causes by their first two segments (`earn:<order>:`), for prefix lookups */
  cause_groups: Map<string, string[]>;
  /** tier activity within the horizon (older items are folded into the base of `activity_sums`) */
  activity: Activity[];
  /**
   * prefix sums of `activity`: index i = the base (every folded item) plus the first i items, so a
   * window's metrics are two binary searches, and a lifetime window is the last sum
   */
  activity_sums: ActivitySums;
  /** dated lots as a min-heap on `expires_ms` (lazily pruned of lots that are spent or expired) */
  dated_lots: Lot[];
  reservations: Map<string, Reservation>;
  vouchers: Map<string, Voucher>;
  /** when the member was erased (DELETE); the retention job anonymises it after the programme's grace */
  erased_at?: string | null;
  /** the member's clock: the latest instant any of its events carried (epoch ms); retention counts back from it */
  clock_ms: number;
  /** events evolved since the last compaction */
  since_compaction: number;
}

export const initialMemberState = (): MemberAggregate => ({
  exists: false, id: '', state: 'prospect', paused_from: null, suspended_from: null, referral_code: '', pii: null, marketing_consent: false,
  accepted_terms_version: null, enrolled_at: null, created_at: '', last_activity_at: null, tier: null, tier_review_at: null, debt: 0,
  available: 0, pending: 0, reserved: 0, lifetime_earned: 0, lifetime_redeemed: 0,
  entries: new Map(), lots: [], lot_by_id: new Map(), lot_head: 0, lots_changed: [], pending_earns: new Set(),
  causes: new Map(), cause_at: new Map(), cause_groups: new Map(), activity: [],
  activity_sums: { spend: [0], points: [0], orders: [0] }, dated_lots: [],
  reservations: new Map(), vouchers: new Map(), clock_ms: 0, since_compaction: 0,
});

export const balancesOf = (s: Pick<MemberAggregate, 'pending' | 'available' | 'reserved' | 'lifetime_earned' | 'lifetime_redeemed'>): Balances => ({
  pending_cents: s.pending,
  available_cents: s.available,
  reserved_cents: s.reserved,
  spendable_cents: s.available - s.reserved,
  lifetime_earned_cents: s.lifetime_earned,
  lifetime_redeemed_cents: s.lifetime_redeemed,
});

export const spendableOf = (s: MemberAggregate): number => s.available - s.reserved;

const bucketOf = (status: LedgerEntryStatus, type: Entry['type']): Bucket => {
  if (type === 'earn' && (status === 'pending' || status === 'under_review')) return 'pending';
  if (status === 'posted') return 'available';
  return 'none';
};

/** Takes `amount` from lots oldest first; what no lot covers becomes debt. Returns what was taken per lot. */
const consume = (s: MemberAggregate, amount: number): { entry_id: string; amount: number }[] => {
  const lots = s.lots;
  const taken: { entry_id: string; amount: number }[] = [];
  let left = amount;
  for (let i = s.lot_head; i < lots.length && left > 0; i++) {
    const lot = lots[i];
    if (lot.remaining_cents <= 0) continue;
    const t = Math.min(lot.remaining_cents, left);
    lot.remaining_cents -= t;
    left -= t;
    taken.push({ entry_id: lot.entry_id, amount: t });
    s.lots_changed.push(lot);
  }
  advanceLotHead(s);
  if (left > 0) s.debt += left;
  return taken;
};

/** Moves `lot_head` past the lots that have nothing left (they never get points back). */
const advanceLotHead = (s: MemberAggregate): void => {
  while (s.lot_head < s.lots.length && s.lots[s.lot_head].remaining_cents <= 0) s.lot_head++;
};

/** A lot whose points changed in the current event (for read models that mirror lots). */
const touchLot = (s: MemberAggregate, lot: Lot): void => {
  s.lots_changed.push(lot);
  advanceLotHead(s);
};

/** The live lots (something left), oldest first. */
export function* liveLots(s: Pick<MemberAggregate, 'lots' | 'lot_head'>): Generator<Lot> {
  for (let i = s.lot_head; i < s.lots.length; i++) if (s.lots[i].remaining_cents > 0) yield s.lots[i];
}

/** A cause's first two segments (`earn:<order>:`), or null when it has fewer. */
const groupOf = (cause: string): string | null => {
  const a = cause.indexOf(':');
  const b = a < 0 ? -1 : cause.indexOf(':', a + 1);
  return b < 0 ? null : cause.slice(0, b + 1);
};

const addCause = (s: MemberAggregate, cause: string, ids: string[]): void => {
  const known = s.causes.has(cause);
  s.causes.set(cause, ids);
  if (known) return;
  s.cause_at.set(cause, s.clock_ms);
  const g = groupOf(cause) ?? cause;
  const list = s.cause_groups.get(g);
  if (list) list.push(cause);
  else s.cause_groups.set(g, [cause]);
};

/** Causes that start with `prefix`, in recording order; a prefix of two segments or more (`earn:<order>:`) is an index lookup. */
export const causesWithPrefix = (s: Pick<MemberAggregate, 'causes' | 'cause_groups'>, prefix: string): string[] => {
  const g = groupOf(prefix);
  if (g === null) return [...s.causes.keys()].filter((c) => c.startsWith(prefix));
  return (s.cause_groups.get(g) ?? []).filter((c) => c.startsWith(prefix));
};

/** Keeps `activity` sorted by time (it almost always arrives in order: one step from the end). */
const pushActivity = (s: MemberAggregate, at: string, spend: number, points: number, orders: number): void => {
  const a: Activity = { at, ms: parseInstant(at, 'activity at'), spend, points, orders };
  let i = s.activity.length;
  while (i > 0 && s.activity[i - 1].ms > a.ms) i--;
  if (i > 0 && s.activity[i - 1].ms === a.ms) {
    // the same instant (an order's spend and its earn's points): one item, since windows cannot tell them apart
    const same = s.activity[i - 1];
    same.spend += spend;
    same.points += points;
    same.orders += orders;
    i--;
  } else if (i === s.activity.length) s.activity.push(a);
  else s.activity.splice(i, 0, a);
  // prefix sums from the insertion point on (the end, but for take-backs dated at their earn)
  const { spend: S, points: P, orders: O } = s.activity_sums;
  for (let j = i; j < s.activity.length; j++) {
    const x = s.activity[j];
    S[j + 1] = S[j] + x.spend;
    P[j + 1] = P[j] + x.points;
    O[j + 1] = O[j] + x.orders;
  }
};

type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];
/** What an event carries beside its entry, and the optional fields entryOf copies. */
type Carried = 'parent_earn' | 'activity';
type KeptOptional = 'actor' | 'note' | 'release_on' | 'batch_id' | 'order_facts';
/**
 * An entry's data as entryOf takes it; `never` (so every call fails to compile) once EntryData has an
 * optional field entryOf does not copy: the spread it replaced copied any field.
 */
type EntrySource = [Exclude<OptionalKeys<EntryData>, Carried | KeptOptional>] extends [never] ? Omit<EntryData, Carried> : never;

/**
 * An entry as the state keeps it: the fields of the event's data, without what the event only
 * carries (a take-back's copy of its earn, an order's activity), in one fixed order (the order the
 * snapshot's unpacking gives them too), then the optional ones the data has. Built field by field:
 * a spread of the data (`{ ...d }`) took V8's generic path, since event data comes in many shapes
 * (40 % of `evolveMember`'s own time in a redemption, twenty-fifth round).
 */
const entryOf = (d: EntrySource, bucket: Bucket, reversedCents: number): Entry => {
  const e: Entry = {
    id: d.id, type: d.type, status: d.status, amount_cents: d.amount_cents, reason_code: d.reason_code, rule: d.rule,
    parent_entry_id: d.parent_entry_id, release_at: d.release_at, expires_at: d.expires_at, created_at: d.created_at,
    order_ref: d.order_ref, cause: d.cause, bucket, reversed_cents: reversedCents,
  };
  if ('actor' in d) e.actor = d.actor;
  if ('note' in d) e.note = d.note;
  if ('release_on' in d) e.release_on = d.release_on;
  if ('batch_id' in d) e.batch_id = d.batch_id;
  if ('order_facts' in d) e.order_facts = d.order_facts;
  return e;
};

/** An order's tier activity (OrderActivityRecorded, or carried by an entry): the tier window, its cause, the activity clock. */
const recordActivity = (s: MemberAggregate, at: string, a: { spend_cents: number; orders: number; cause?: string }): void => {
  pushActivity(s, at, a.spend_cents, 0, a.orders);
  if (a.cause) addCause(s, a.cause, []);
  s.last_activity_at = at;
};

/** First index of the time-sorted activity whose `ms` is >= `ms` (or > `ms` when `after`). */
export const activityIndex = (list: readonly Activity[], ms: number, after: boolean): number => {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (after ? list[mid].ms <= ms : list[mid].ms < ms) lo = mid + 1;
    else hi = mid;
  }
  return lo;
};

/** Tier metrics of the activity in [fromMs, toMs] (both inclusive) from the prefix sums: O(log n). */
export const activityInWindow = (s: Pick<MemberAggregate, 'activity' | 'activity_sums'>, fromMs: number, toMs: number): { spend: number; points: number; orders: number } => {
  const { spend: S, points: P, orders: O } = s.activity_sums;
  const hi = activityIndex(s.activity, toMs, true);
  // a window with no start takes the folded base too (index 0 of the sums holds it)
  if (fromMs === Number.NEGATIVE_INFINITY) return { spend: S[hi], points: P[hi], orders: O[hi] };
  const lo = activityIndex(s.activity, fromMs, false);
  if (hi <= lo) return { spend: 0, points: 0, orders: 0 };
  return { spend: S[hi] - S[lo], points: P[hi] - P[lo], orders: O[hi] - O[lo] };
};

const heapLess = (a: Lot, b: Lot): boolean => a.expires_ms! < b.expires_ms!;

const heapPush = (h: Lot[], lot: Lot): void => {
  h.push(lot);
  let i = h.length - 1;
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (!heapLess(h[i], h[p])) break;
    [h[i], h[p]] = [h[p], h[i]];
    i = p;
  }
};

const heapPop = (h: Lot[]): void => {
  const last = h.pop()!;
  if (!h.length) return;
  h[0] = last;
  let i = 0;
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let m = i;
    if (l < h.length && heapLess(h[l], h[m])) m = l;
    if (r < h.length && heapLess(h[r], h[m])) m = r;
    if (m === i) return;
    [h[i], h[m]] = [h[m], h[i]];
    i = m;
  }
};

/** The live, unexpired dated lot that expires first (amortised O(log n): spent and expired lots are pruned here). */
export const firstDatedLot = (s: Pick<MemberAggregate, 'dated_lots'>): Lot | null => {
  const h = s.dated_lots;
  while (h.length && (h[0].remaining_cents <= 0 || h[0].expired)) heapPop(h);
  return h.length ? h[0] : null;
};

/** Whether the member holds any points in lots. */
export const holdsLots = (s: Pick<MemberAggregate, 'lots' | 'lot_head'>): boolean => s.lot_head < s.lots.length;

const addLot = (s: MemberAggregate, e: Entry, amount: number): void => {
  // a credit first pays back a negative balance; only the rest can be spent or expire
  const repay = Math.min(s.debt, Math.max(0, amount));
  s.debt -= repay;
  amount -= repay;
  if (amount <= 0) return;
  const lot: Lot = { entry_id: e.id, remaining_cents: amount, expires_at: e.expires_at, expires_ms: e.expires_at ? parseInstant(e.expires_at, 'expires_at') : null, expired: false };
  s.lots.push(lot);
  s.lot_by_id.set(lot.entry_id, lot);
  if (lot.expires_ms !== null) heapPush(s.dated_lots, lot);
  touchLot(s, lot);
};

/** Applies a posted credit or debit to `available` and the lots. */
const applyPosted = (s: MemberAggregate, e: Entry, parent: Entry | undefined): void => {
  s.available += e.amount_cents;
  switch (e.type) {
    case 'earn':
      s.lifetime_earned += e.amount_cents;
      addLot(s, e, e.amount_cents);
      break;
    case 'adjust':
      if (e.amount_cents > 0) {
        s.lifetime_earned += e.amount_cents;
        addLot(s, e, e.amount_cents);
      } else consume(s, -e.amount_cents);
      break;
    case 'redeem': {
      s.lifetime_redeemed += -e.amount_cents;
      const taken = consume(s, -e.amount_cents);
      e.spent_from = taken.map((t) => ({ ...t, expires_at: s.lot_by_id.get(t.entry_id)?.expires_at ?? null }));
      break;
    }
    case 'expire': {
      // an expiry names its lot in `cause` (lot:<entry id>); erasure forfeits whatever is left
      const lotId = e.cause?.startsWith('lot:') ? e.cause.slice(4) : null;
      const lot = lotId ? s.lot_by_id.get(lotId) : undefined;
      if (lot) {
        lot.remaining_cents = Math.max(0, lot.remaining_cents + e.amount_cents);
        lot.expired = true;
        touchLot(s, lot);
      } else consume(s, -e.amount_cents);
      break;
    }
    case 'reverse':
      if (parent?.type === 'redeem') {
        // a restored voucher: points come back as a fresh lot expiring like the newest spent lot
        s.lifetime_redeemed -= e.amount_cents;
        const newest = parent.spent_from?.length ? parent.spent_from[parent.spent_from.length - 1].expires_at : null;
        addLot(s, { ...e, expires_at: e.expires_at ?? newest }, e.amount_cents);
      } else if (parent?.type === 'earn' || (parent?.type === 'adjust' && parent.amount_cents > 0)) {
        s.lifetime_earned += e.amount_cents;
        const lot = s.lot_by_id.get(parent.id);
        const take = lot ? Math.max(0, Math.min(lot.remaining_cents, -e.amount_cents)) : 0;
        if (lot) {
          lot.remaining_cents -= take;
          touchLot(s, lot);
        }
        // points of the lot already spent: the take-back comes from the other lots (then debt)
        if (-e.amount_cents > take) consume(s, -e.amount_cents - take);
      } else if (e.amount_cents > 0) {
        addLot(s, e, e.amount_cents);
      } else {
        consume(s, -e.amount_cents);
      }
      break;
    default: {
      const never: never = e.type;
      throw new Error(`unknown entry type ${String(never)}`);
    }
  }
};

/** The pending take-backs of a pending earn share its outcome (so available = Σ posted + reversed, pending = Σ pending + under_review). */
const setReversalStatus = (s: MemberAggregate, parent: Entry, status: LedgerEntryStatus): void => {
  for (const id of parent.reversal_ids ?? []) {
    const child = s.entries.get(id);
    if (child && child.status === 'pending') child.status = status;
  }
};

/** The instant an event carries (entries: created_at; the rest: at), as epoch ms; NaN when it has none. */
const eventMs = (event: MemberEvent): number => {
  const d = event.data as { at?: string; created_at?: string };
  const iso = event.type === 'EntryRecorded' ? d.created_at : d.at;
  return iso ? Date.parse(iso) : Number.NaN;
};

/**
 * A settled earn of an order that compaction let go, put back from the copy its take-back carries
 * (issue 13): the same entry the full fold holds (settled, so in the available bucket), so the
 * take-back's effects and the read models' rows are the same as with a full history. The next
 * compaction lets it go again.
 */
const restoreEarn = (s: MemberAggregate, copy: EarnCopy): void => {
  s.entries.set(copy.id, entryOf(copy, 'available', copy.reversed_cents));
};

/**
 * The full fold: every event applied, nothing forgotten. `memberEvolver.evolve` adds compaction
 * (`compactMember`) on top; this one alone is the full-history state the property tests compare with.
 */
export const evolveMember = (s: MemberAggregate, event: MemberEvent): MemberAggregate => {
  if (s.lots_changed.length) s.lots_changed = [];
  const t = eventMs(event);
  if (t > s.clock_ms) s.clock_ms = t;
  switch (event.type) {
    case 'MemberCreated': {
      const d = event.data;
      s.exists = true;
      s.id = d.member_id;
      s.state = d.state;
      s.referral_code = d.referral_code;
      s.pii = d.pii;
      s.marketing_consent = d.marketing_consent;
      s.accepted_terms_version = d.accepted_terms_version;
      s.created_at = d.at;
      s.enrolled_at = d.state === 'registered' ? d.at : null;
      return s;
    }
    case 'MemberEnrolled':
      s.state = s.state === 'prospect' ? 'registered' : s.state;
      s.enrolled_at = s.enrolled_at ?? event.data.at;
      s.accepted_terms_version = event.data.accepted_terms_version ?? s.accepted_terms_version;
      s.marketing_consent = event.data.marketing_consent;
      return s;
    case 'ProfileUpdated':
      if (event.data.pii) s.pii = event.data.pii;
      if (event.data.marketing_consent !== undefined) s.marketing_consent = event.data.marketing_consent;
      if (event.data.accepted_terms_version !== undefined) s.accepted_terms_version = event.data.accepted_terms_version;
      return s;
    case 'MemberStateChanged':
      if (event.data.to === 'paused' && event.data.from !== 'suspended') s.paused_from = event.data.from;
      if (event.data.to === 'suspended') s.suspended_from = event.data.from;
      if (event.data.from === 'suspended') s.suspended_from = null;
      if (event.data.from === 'paused' && event.data.to !== 'suspended') s.paused_from = null;
      s.state = event.data.to;
      return s;
    case 'EntryRecorded': {
      const d = event.data;
      const copy = d.parent_earn;
      const activity = d.activity;
      if (copy && d.parent_entry_id === copy.id && !s.entries.has(copy.id)) restoreEarn(s, copy);
      const e = entryOf(d, bucketOf(d.status, d.type), 0);
      s.entries.set(e.id, e);
      if (d.cause) addCause(s, d.cause, [...(s.causes.get(d.cause) ?? []), e.id]);
      if (e.bucket === 'pending' && d.type === 'earn') s.pending_earns.add(e.id);
      const parent = d.parent_entry_id ? s.entries.get(d.parent_entry_id) : undefined;
      if (d.type === 'reverse' && parent) {
        parent.reversed_cents += -d.amount_cents * Math.sign(parent.amount_cents);
        if (parent.bucket === 'pending') {
          // taking back a pending earn lowers pending; it never touched available
          s.pending += d.amount_cents;
          e.bucket = 'none';
          // a pending debit: posted with its parent on release, rejected or reversed with it otherwise
          e.status = 'pending';
          (parent.reversal_ids ??= []).push(e.id);
        } else if (parent.bucket === 'available') {
          applyPosted(s, e, parent);
        }
        if (Math.abs(parent.reversed_cents) >= Math.abs(parent.amount_cents)) {
          parent.status = 'reversed';
          if (parent.bucket === 'pending') setReversalStatus(s, parent, 'reversed');
        }
        // points taken back no longer count as earned (tiers), dated like the earn so windows net them
        if (parent.type === 'earn' && d.amount_cents < 0) pushActivity(s, parent.created_at, 0, d.amount_cents, 0);
      } else if (e.bucket === 'pending') {
        s.pending += d.amount_cents;
        if (d.type === 'earn' && d.amount_cents > 0) pushActivity(s, d.created_at, 0, d.amount_cents, 0);
      } else if (e.bucket === 'available') {
        applyPosted(s, e, parent);
        if (d.type === 'earn' && d.amount_cents > 0) pushActivity(s, d.created_at, 0, d.amount_cents, 0);
      }
      if (d.type === 'earn' && s.state === 'registered' && e.status === 'posted') s.state = 'active';
      // an expiry is not the member's activity (it must not restart the inactivity clock)
      if (d.type !== 'expire') s.last_activity_at = d.created_at;
      // the order's tier activity it carries, as an OrderActivityRecorded at the same instant
      if (activity) recordActivity(s, d.created_at, activity);
      return s;
    }
    case 'EntryReleased': {
      const e = s.entries.get(event.data.entry_id);
      if (!e || e.bucket !== 'pending') return s;
      const remaining = e.amount_cents - e.reversed_cents;
      s.pending -= remaining;
      e.bucket = 'available';
      s.pending_earns.delete(e.id);
      e.settled_at = event.data.at;
      e.status = remaining <= 0 ? 'reversed' : 'posted';
      setReversalStatus(s, e, e.status);
      // what is left after pending take-backs becomes available
      s.available += remaining;
      s.lifetime_earned += remaining;
      addLot(s, e, remaining);
      if (s.state === 'registered') s.state = 'active';
      return s;
    }
    case 'EntryReleaseScheduled': {
      const e = s.entries.get(event.data.entry_id);
      if (e && e.bucket === 'pending') e.release_at = event.data.release_at;
      return s;
    }
    case 'EntryRejected': {
      const e = s.entries.get(event.data.entry_id);
      if (!e || e.bucket !== 'pending') return s;
      s.pending -= e.amount_cents - e.reversed_cents;
      e.bucket = 'none';
      e.status = 'rejected';
      e.settled_at = event.data.at;
      s.pending_earns.delete(e.id);
      setReversalStatus(s, e, 'rejected');
      if (e.type === 'earn' && e.amount_cents - e.reversed_cents > 0) pushActivity(s, e.created_at, 0, -(e.amount_cents - e.reversed_cents), 0);
      return s;
    }
    case 'TierChanged':
      s.tier = event.data.to;
      s.tier_review_at = event.data.review_at ?? null;
      return s;
    case 'TierReviewed':
      s.tier_review_at = event.data.review_at;
      return s;
    case 'OrderActivityRecorded':
      recordActivity(s, event.data.at, event.data);
      return s;
    case 'ReservationOpened': {
      const d = event.data;
      const r: Reservation = { id: d.reservation_id, amount_cents: d.amount_cents, cart_ref: d.cart_ref, status: 'open', order_ref: null, entry_id: null, expires_at: d.expires_at, created_at: d.at };
      if (d.fingerprint) r.fingerprint = d.fingerprint;
      s.reservations.set(d.reservation_id, r);
      s.reserved += d.amount_cents;
      if (d.cause) addCause(s, d.cause, [d.reservation_id]); // a retried reserve finds its reservation
      return s;
    }
    case 'ReservationConfirmed': {
      const r = s.reservations.get(event.data.reservation_id);
      if (!r || r.status !== 'open') return s;
      r.status = 'confirmed';
      r.order_ref = event.data.order_ref;
      r.entry_id = event.data.entry_id;
      s.reserved -= r.amount_cents;
      return s;
    }
    case 'ReservationReleased': {
      const r = s.reservations.get(event.data.reservation_id);
      if (!r || r.status !== 'open') return s;
      r.status = event.data.reason === 'expired' ? 'expired' : 'released';
      s.reserved -= r.amount_cents;
      return s;
    }
    case 'VoucherIssued': {
      const d = event.data;
      const v: Voucher = { id: d.redemption_id, code: d.code, mode: d.mode, amount_cents: d.amount_cents, entry_id: d.entry_id, status: d.mode === 'direct' ? 'used' : 'created', order_ref: d.order_ref, expires_at: d.expires_at, created_at: d.at };
      if (d.fingerprint) v.fingerprint = d.fingerprint;
      s.vouchers.set(d.redemption_id, v);
      return s;
    }
    case 'VoucherUsed': {
      const v = s.vouchers.get(event.data.redemption_id);
      if (v) { v.status = 'used'; v.order_ref = event.data.order_ref; }
      return s;
    }
    case 'VoucherRestored': {
      const v = s.vouchers.get(event.data.redemption_id);
      if (v) v.status = event.data.reason === 'expired' ? 'expired' : 'restored';
      return s;
    }
    case 'MemberErased':
      s.pii = null;
      s.state = 'deleted';
      s.erased_at = event.data.at;
      return s;
    case 'MemberAnonymised':
      s.pii = null;
      s.state = 'anonymised';
      return s;
    default: {
      const never: never = event;
      throw new Error(`unknown member event ${JSON.stringify(never)}`);
    }
  }
};

const DAY_MS = 86_400_000;

/**
 * What the member's decision state keeps of closed items (issue 13). Idempotency causes, resolved
 * vouchers and reservations and closed entries are kept for `closedDays` after the member's clock
 * (the gateway keeps Idempotency-Keys 30 days, so a retry within that finds its effect); tier
 * activity for `activityDays` (the longest tier window: a calendar year, rolling 365 days, custom
 * windows up to two years; older activity is folded into a base that only lifetime windows read).
 * Compaction runs every `every` events, so its cost is spread thin (16 since an order's entry carries
 * its tier activity: an order is one member event, no longer two, and the state keeps as many
 * orders between compactions as before). Fixed, not configurable: every process must fold a stream
 * to the same state (snapshots, projections, the command handler).
 */
export const MEMBER_RETENTION = { closedDays: 35, activityDays: 731, every: 16 } as const;

/** Is this entry still reachable by a decision or evolve (besides being recent)? */
const entryOpen = (e: Entry, heldRedeems: ReadonlySet<string>): boolean => {
  switch (e.type) {
    case 'earn':
      if (e.bucket === 'pending') return true; // pending or under review: released, rejected or taken back later
      if (e.order_ref === null) return false; // no order can reach it (signup, referral): settled, it is closed
      if (e.status === 'rejected') return true; // its order's refund arithmetic must know it earned nothing
      return !e.order_facts; // settled: its order stream keeps its facts and answers refunds and cancellations
    case 'adjust':
      // a migration credit can be reversed with its batch until fully taken back
      return e.amount_cents > 0 && !!e.batch_id && e.reversed_cents < e.amount_cents;
    case 'redeem':
      return heldRedeems.has(e.id); // a voucher the state holds may be voided or expire (a restore reads it)
    case 'reverse':
      return e.status === 'pending'; // follows its pending earn's fate
    case 'expire':
      return false;
    default: {
      const never: never = e.type;
      throw new Error(`unknown entry type ${String(never)}`);
    }
  }
};

const heapify = (h: Lot[]): void => {
  for (let i = (h.length >> 1) - 1; i >= 0; i--) {
    let j = i;
    for (;;) {
      const l = 2 * j + 1;
      const r = l + 1;
      let m = j;
      if (l < h.length && heapLess(h[l], h[m])) m = l;
      if (r < h.length && heapLess(h[r], h[m])) m = r;
      if (m === j) break;
      [h[j], h[m]] = [h[m], h[j]];
      j = m;
    }
  }
};

/**
 * Drops what no decision can reach any more, so the state is O(open items + the retention window),
 * not O(history): entries closed and older than the retention, spent lots, causes and resolved
 * vouchers/reservations past the retention, tier activity past the horizon (folded into the base of
 * the prefix sums). Deterministic in the events (it counts back from the member's own clock), so a
 * snapshot, a projection and the command handler fold a stream to the same state.
 */
export const compactMember = (s: MemberAggregate): MemberAggregate => {
  s.since_compaction = 0;
  const cutoff = s.clock_ms - MEMBER_RETENTION.closedDays * DAY_MS;
  // idempotency causes, oldest first (recorded at the member's clock, so in time order); a signup bonus is once ever
  const dropped: string[] = [];
  for (const [cause, ms] of s.cause_at) {
    if (ms >= cutoff) break;
    if (cause.startsWith('signup:')) continue;
    s.cause_at.delete(cause);
    s.causes.delete(cause);
    dropped.push(cause);
  }
  if (dropped.length) {
    const byGroup = new Map<string, Set<string>>();
    for (const c of dropped) {
      const g = groupOf(c) ?? c;
      let set = byGroup.get(g);
      if (!set) byGroup.set(g, (set = new Set()));
      set.add(c);
    }
    for (const [g, gone] of byGroup) {
      const left = (s.cause_groups.get(g) ?? []).filter((c) => !gone.has(c));
      if (left.length) s.cause_groups.set(g, left);
      else s.cause_groups.delete(g);
    }
  }
  // resolved vouchers and reservations past the retention (insertion order is creation order)
  for (const [id, v] of s.vouchers) {
    if (Date.parse(v.created_at) >= cutoff) break;
    if (v.status !== 'created') s.vouchers.delete(id);
  }
  for (const [id, r] of s.reservations) {
    if (Date.parse(r.created_at) >= cutoff) break;
    if (r.status !== 'open') s.reservations.delete(id);
  }
  // entries: closed and past the retention
  const heldRedeems = new Set<string>();
  for (const v of s.vouchers.values()) heldRedeems.add(v.entry_id);
  for (const [id, e] of s.entries) {
    if (entryOpen(e, heldRedeems)) continue;
    if (Date.parse(e.settled_at ?? e.created_at) >= cutoff) continue;
    s.entries.delete(id);
  }
  // lots: only live ones (a spent lot never gets points back); the dated heap is rebuilt from them
  if (s.lots.length > 0) {
    const live = s.lots.filter((l) => l.remaining_cents > 0);
    if (live.length !== s.lots.length) {
      for (const l of s.lots) if (l.remaining_cents <= 0) s.lot_by_id.delete(l.entry_id);
      s.lots = live;
      s.lot_head = 0;
      s.dated_lots = live.filter((l) => l.expires_ms !== null && !l.expired);
      heapify(s.dated_lots);
    }
  }
  // tier activity past the horizon: the prefix sums already hold it, so dropping items keeps sums[0] as the base
  const horizon = s.clock_ms - MEMBER_RETENTION.activityDays * DAY_MS;
  let k = 0;
  while (k < s.activity.length && s.activity[k].ms < horizon) k++;
  if (k > 0) {
    s.activity.splice(0, k);
    const { spend, points, orders } = s.activity_sums;
    s.activity_sums = { spend: spend.slice(k), points: points.slice(k), orders: orders.slice(k) };
  }
  return s;
};

/** The production fold: the full fold plus compaction every `MEMBER_RETENTION.every` events (before the event, so what the event touched is still there for the read models that look at the state after it). */
export const evolveCompact = (s: MemberAggregate, event: MemberEvent): MemberAggregate => {
  if (++s.since_compaction >= MEMBER_RETENTION.every) compactMember(s);
  return evolveMember(s, event);
};

/** The snapshot format: bump `version` whenever the shape of MemberAggregate changes, so older snapshots are ignored. */
export const MEMBER_SNAPSHOT_VERSION = 'member-4';

/** A decoded snapshot is used only if it has this version's shape (a guard beyond the format key). */
const isMap = (x: unknown): boolean => Object.prototype.toString.call(x) === '[object Map]'; // whatever realm decoded it
const isMemberState = (x: unknown): boolean => {
  const s = x as Partial<MemberAggregate> | null;
  return !!s && typeof s === 'object' && isMap(s.entries) && isMap(s.cause_at) && typeof s.clock_ms === 'number' && typeof s.since_compaction === 'number'
    && Array.isArray(s.lots) && isMap(s.lot_by_id) && Array.isArray(s.dated_lots) && Array.isArray(s.activity) && !!s.activity_sums && Array.isArray(s.activity_sums.spend)
    && s.activity_sums.spend.length === s.activity.length + 1 && !('order' in s);
};

/**
 * Rough bytes a state holds in memory (for caches bounded in bytes): O(1), from the sizes of its
 * collections. Checked against V8's heap (round three): a fresh member takes ~2.7 KB (its empty
 * maps and sealed PII), an order's earn with its lot, causes and activity ~1.8 KB (estimated 1.6).
 */
export const memberStateBytes = (s: MemberAggregate): number =>
  2_800 + s.entries.size * 900 + s.lots.length * 220 + s.causes.size * 200 + s.activity.length * 120
  + s.vouchers.size * 400 + s.reservations.size * 350 + s.pending_earns.size * 60;

/**
 * The member's evolver. Its state is compacted as it goes (`evolveCompact`) and snapshotted every
 * 250 events (a cold load folds at most that many after reading a small snapshot).
 */
export const memberEvolver = {
  initialState: initialMemberState,
  evolve: evolveCompact,
  snapshot: { version: MEMBER_SNAPSHOT_VERSION, every: 250, accepts: isMemberState, encode: encodeMemberSnapshot, decode: decodeMemberSnapshot },
  sizeOf: memberStateBytes,
};

/** What the readers of a shared fold need of a member just before an event: its standing, tier and balances (a few figures, not the state). */
export type MemberHead = Pick<MemberAggregate, 'exists' | 'state' | 'tier' | 'available' | 'pending' | 'reserved' | 'lifetime_earned' | 'lifetime_redeemed'>;

export const memberHead = (s: MemberAggregate): MemberHead => ({
  exists: s.exists, state: s.state, tier: s.tier, available: s.available, pending: s.pending, reserved: s.reserved,
  lifetime_earned: s.lifetime_earned, lifetime_redeemed: s.lifetime_redeemed,
});

/**
 * The member fold the read models of a process share (the ledger's and the webhook service's): which
 * streams, the evolver, what is kept of the state before each event, and the cache's name on /metrics.
 */
export const MEMBER_FOLD = { key: 'member', prefix: STREAM_PREFIX.member, evolver: memberEvolver, head: memberHead, cacheName: 'member_fold' } as const;
