/**
 * The long-history benchmark's member history (issue 13), as a pure generator: used by
 * `long-history.ts` (appended to the event store) and `snapshot-decode.ts` (in memory).
 */
import { randomBytes } from 'node:crypto';
import type { EarnLine } from '@loyalty/domain-earning';
import {
  MemberAggregate, MemberEvent, decideAdjust, decideConfirmRedemption, decideIssueRedemption, decideOrderStep, memberEvolver, orderCauses, spendingRules,
} from '@loyalty/domain-member';

const DAY = 86_400_000;

/** How long a member's seeded history spans (one entry every 8 hours, at most ten years). */
export const spanOf = (entries: number): number => Math.min(10 * 365 * DAY, entries * 8 * 3_600_000);

/**
 * `entries` ledger entries on the member's stream, decided by the domain on the member's own state
 * `s` and dated from `startMs` on (one every `step` ms over `spanOf(entries)`; the benchmark then
 * moves the sandbox clock past them, so the history is in time order, as years of use would have
 * written it, and the member's own clock, which retention counts from, is the present): a day's
 * order earning 10 % (some with a second rule), a voucher redeemed and used about every tenth
 * entry, a refund every 50th order, a goodwill adjustment now and then. `sink` receives the events
 * about 1,000 at a time; returns the member's state after them.
 */
export const seedHistory = async (
  s: MemberAggregate, startMs: number, entries: number, sink: (events: MemberEvent[]) => Promise<void> | void,
): Promise<MemberAggregate> => {
  const rules = spendingRules({});
  const step = spanOf(entries) / entries;
  let recorded = 0;
  let n = 0;
  let batch: MemberEvent[] = [];
  // entry ids are unique per programme (as the service's derived ids are)
  const tag = `${entries}-`;
  const orders: { ref: string; ids: string[]; gross: number }[] = [];
  const push = (events: MemberEvent[]) => {
    for (const e of events) {
      s = memberEvolver.evolve(s, e);
      batch.push(e);
      if (e.type === 'EntryRecorded') recorded++;
    }
  };
  const flush = async () => {
    if (!batch.length) return;
    const out = batch;
    batch = [];
    await sink(out);
  };
  while (recorded < entries) {
    const at = new Date(startMs + recorded * step).toISOString();
    const k = n++;
    if (k % 10 === 9 && s.available - s.reserved >= 500) {
      const id = `RD-${randomBytes(8).toString('hex')}`;
      push(decideIssueRedemption(s, rules, { redemption_id: id, entry_id: `LE-${randomBytes(10).toString('hex')}`, code: `RWD-${k}`, mode: 'voucher', amount_cents: 500, order_ref: null, expires_at: new Date(Date.parse(at) + 3 * DAY).toISOString(), cause: `redeem:${id}`, at }));
      push(decideConfirmRedemption(s, { redemption_id: id, order_ref: `use-${k}`, at }));
    } else if (k % 37 === 36) {
      push(decideAdjust(s, { entryId: `LE-${randomBytes(10).toString('hex')}`, amount_cents: 100, reason_code: 'goodwill', note: null, cause: `adjust:${k}`, actor: 'bench', at }));
    } else if (k % 50 === 49 && orders.length) {
      const o = orders[orders.length - 1];
      push(decideOrderStep(s, {
        order: { order_ref: o.ref, earn_entry_ids: o.ids, fulfilled_at: at, delivered: false }, at, expiry: { policy: 'none' }, return_window_days: 30,
        entryId: (cause) => `LE-${tag}${cause}`, refund: { refund_ref: `r${k}`, gross_cents: o.gross, cumulative_refunded_cents: Math.floor(o.gross / 2) },
        activity: { spend_cents: -Math.floor(o.gross / 2), orders: 0, cause: orderCauses.refundActivity(o.ref, `r${k}`) },
      }).events);
    } else {
      const ref = `ord-${k}`;
      const gross = 400 + (k % 7) * 150;
      const lines: EarnLine[] = [{ rule_id: 'base', rule_name: 'Base', rule_type: 'base', rule_version: 1, amount_cents: Math.floor(gross / 10), timing: 'paid', expiry_months: null }];
      if (k % 5 === 0) lines.push({ rule_id: 'boost', rule_name: 'Boost', rule_type: 'category_boost', rule_version: 1, amount_cents: 20, timing: 'paid', expiry_months: null });
      const d = decideOrderStep(s, {
        order: { order_ref: ref, earn_entry_ids: [], fulfilled_at: null, delivered: false }, at, expiry: { policy: 'none' }, return_window_days: 30,
        entryId: (cause) => `LE-${tag}${cause}`, earn: { lines }, activity: { spend_cents: gross, orders: 1, cause: orderCauses.earnActivity(ref) },
      });
      push(d.events);
      orders.push({ ref, ids: d.earn_entry_ids, gross });
      if (orders.length > 100) orders.shift();
    }
    if (batch.length >= 1_000) await flush();
  }
  await flush();
  return s;
};
