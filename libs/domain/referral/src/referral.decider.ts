import { RuleError } from '@loyalty/contracts';
import type {
  ReferralEvent, ReferralHoldReason, ReferralOrder, ReferralStatus, ReferralTerms, ReferralView, Rule,
} from '@loyalty/contracts';

/**
 * The referral aggregate (stream `referral-<tenant>-<friendId>`, decisions §7): pure decide and
 * evolve. Time and ids arrive in the commands; nothing here reads a clock or does I/O.
 *
 *   (none) ─create─▶ pending ─qualifying order─▶ qualified ─credits─▶ rewarded
 *   (none) ─create─▶ held ─approve─▶ pending (or qualified, when its order already came)
 *                    held ─reject─▶ rejected
 * A paid order processed before the referral existed makes it ineligible: rejected.
 */

/** Domain refusals; the service maps them to problems in one place. */
export class ReferralRuleError extends RuleError<'not-found' | 'conflict' | 'rule-ineligible' | 'invalid-state'> {}

export interface ReferralState {
  exists: boolean;
  id: string;
  code: string;
  advocate_id: string;
  friend_id: string;
  status: ReferralStatus;
  hold_reasons: ReferralHoldReason[];
  created_at: string;
  approved_at: string | null;
  rejected_at: string | null;
  /** the qualifying order (for a held referral: the one it waits on) and the terms it earned under */
  order: ReferralOrder | null;
  terms: ReferralTerms | null;
  qualified_at: string | null;
  rewarded_at: string | null;
  advocate_entry_id: string | null;
  friend_entry_id: string | null;
}

export const initialReferralState = (): ReferralState => ({
  exists: false, id: '', code: '', advocate_id: '', friend_id: '', status: 'pending', hold_reasons: [], created_at: '',
  approved_at: null, rejected_at: null, order: null, terms: null, qualified_at: null, rewarded_at: null,
  advocate_entry_id: null, friend_entry_id: null,
});

export const evolveReferral = (s: ReferralState, event: ReferralEvent): ReferralState => {
  switch (event.type) {
    case 'ReferralCreated': {
      const d = event.data;
      return {
        ...s, exists: true, id: d.referral_id, code: d.code, advocate_id: d.advocate_id, friend_id: d.friend_id,
        status: d.status, hold_reasons: [...d.hold_reasons], created_at: d.at,
      };
    }
    case 'ReferralOrderMatched':
      return { ...s, order: event.data.order, terms: event.data.terms };
    case 'ReferralQualified':
      return { ...s, status: 'qualified', order: event.data.order, terms: event.data.terms, qualified_at: event.data.at };
    case 'ReferralApproved':
      return { ...s, status: 'pending', approved_at: event.data.at };
    case 'ReferralRejected':
      return { ...s, status: 'rejected', rejected_at: event.data.at };
    case 'ReferralRewarded':
      return {
        ...s, status: 'rewarded', rewarded_at: event.data.at,
        advocate_entry_id: event.data.advocate_entry_id, friend_entry_id: event.data.friend_entry_id,
      };
    default: {
      const never: never = event;
      throw new TypeError(`unknown referral event ${JSON.stringify(never)}`);
    }
  }
};

export const referralEvolver = { initialState: initialReferralState, evolve: evolveReferral };

export const toReferralView = (s: ReferralState): ReferralView => ({
  id: s.id,
  code: s.code,
  advocate_id: s.advocate_id,
  friend_id: s.friend_id,
  status: s.status,
  created_at: s.created_at,
  hold_reasons: [...s.hold_reasons],
  order_ref: s.order?.order_ref ?? null,
  qualified_at: s.qualified_at,
  rewarded_at: s.rewarded_at,
  rejected_at: s.rejected_at,
  advocate_entry_id: s.advocate_entry_id,
  friend_entry_id: s.friend_entry_id,
});

/** Folds events into a state (tests and read paths; the command handler folds the same way). */
export const foldReferral = (events: readonly ReferralEvent[], from: ReferralState = initialReferralState()): ReferralState =>
  events.reduce(evolveReferral, from);

// ---------- terms ----------

const within = (r: Rule, at: string): boolean => {
  const t = Date.parse(at);
  if (r.starts_at && Date.parse(r.starts_at) > t) return false;
  if (r.ends_at && Date.parse(r.ends_at) <= t) return false;
  return true;
};

const cents = (v: number | null | undefined): number => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : 0);

/**
 * The programme's referral terms at `at`: its first `referral` rule in force (an optional
 * starts_at/ends_at window). Without one a referral still qualifies (no minimum) and is rewarded
 * with nothing.
 */
export const referralTerms = (rules: readonly Rule[], at: string): ReferralTerms => {
  const rule = rules.find((r) => r.type === 'referral' && within(r, at));
  if (!rule) return { rule_id: null, rule_version: null, min_order_cents: 0, amount_cents: 0, friend_amount_cents: 0, expiry_months: null, timing: null };
  return {
    rule_id: rule.id, rule_version: rule.version, min_order_cents: cents(rule.min_order_cents),
    amount_cents: cents(rule.amount_cents), friend_amount_cents: cents(rule.friend_amount_cents),
    expiry_months: rule.expiry_months ?? null, timing: rule.timing ?? null,
  };
};

// ---------- decisions ----------

export interface CreateReferral {
  referral_id: string;
  code: string;
  advocate_id: string;
  friend_id: string;
  /** the fraud checks' verdict (fraud.ts) */
  hold_reasons: ReferralHoldReason[];
  /** the friend already has a paid order (that was not cancelled) */
  friend_has_paid_order: boolean;
  at: string;
}

/** POST /v1/referrals. Order of refusals: self-referral (422), already referred (409), already a customer (422). */
export const decideCreate = (s: ReferralState, cmd: CreateReferral): ReferralEvent[] => {
  if (cmd.advocate_id === cmd.friend_id) throw new ReferralRuleError('rule-ineligible', 'A member cannot refer themselves');
  if (s.exists) throw new ReferralRuleError('conflict', `Member ${cmd.friend_id} has already been referred (${s.id})`);
  if (cmd.friend_has_paid_order) throw new ReferralRuleError('rule-ineligible', `Member ${cmd.friend_id} already has a paid order and cannot be referred`);
  return [{
    type: 'ReferralCreated',
    data: {
      referral_id: cmd.referral_id, code: cmd.code, advocate_id: cmd.advocate_id, friend_id: cmd.friend_id,
      status: cmd.hold_reasons.length ? 'held' : 'pending', hold_reasons: [...cmd.hold_reasons], at: cmd.at,
    },
  }];
};

const qualified = (s: ReferralState, order: ReferralOrder, terms: ReferralTerms, at: string): ReferralEvent => ({
  type: 'ReferralQualified',
  data: {
    order, terms, at,
    referral: toReferralView({ ...s, status: 'qualified', order, terms, qualified_at: at }),
  },
});

export interface OrderPaid {
  order: ReferralOrder;
  /** the rules in force now */
  terms: ReferralTerms;
  at: string;
}

/**
 * The friend paid an order. Its first paid order whose gross meets the rule's minimum qualifies
 * the referral (a held one remembers it for the review). An order paid before the referral was
 * created means the friend was already a customer: the referral is rejected. Anything else, or a
 * repeat, decides nothing.
 */
export const decideOrderPaid = (s: ReferralState, cmd: OrderPaid): ReferralEvent[] => {
  if (!s.exists || s.order !== null || (s.status !== 'pending' && s.status !== 'held')) return [];
  if (Date.parse(cmd.order.paid_at) < Date.parse(s.created_at)) {
    return [{ type: 'ReferralRejected', data: { at: cmd.at, actor: null, reason: 'friend_already_ordered' } }];
  }
  if (cmd.order.gross_cents < cmd.terms.min_order_cents) return [];
  if (s.status === 'held') return [{ type: 'ReferralOrderMatched', data: { order: cmd.order, terms: cmd.terms, at: cmd.at } }];
  return [qualified(s, cmd.order, cmd.terms, cmd.at)];
};

export interface ReviewReferral { action: 'approve' | 'reject'; actor: string | null; at: string }

/**
 * POST /admin/v1/referrals/{id}/approve|reject: only a held referral is reviewed. Approval makes it
 * pending, or qualified at once when its qualifying order already came. Repeating the decision
 * that was taken is an idempotent no-op; the other one is `invalid-state`.
 */
export const decideReview = (s: ReferralState, cmd: ReviewReferral): ReferralEvent[] => {
  if (!s.exists) throw new ReferralRuleError('not-found', 'referral not found');
  if (cmd.action === 'approve') {
    if (s.approved_at !== null && s.status !== 'rejected') return [];
    if (s.status !== 'held') throw new ReferralRuleError('invalid-state', `Referral ${s.id} is ${s.status}, not held`);
    const events: ReferralEvent[] = [{ type: 'ReferralApproved', data: { at: cmd.at, actor: cmd.actor } }];
    if (s.order && s.terms) events.push(qualified({ ...s, status: 'pending', approved_at: cmd.at }, s.order, s.terms, cmd.at));
    return events;
  }
  if (s.status === 'rejected') return [];
  if (s.status !== 'held') throw new ReferralRuleError('invalid-state', `Referral ${s.id} is ${s.status}, not held`);
  return [{ type: 'ReferralRejected', data: { at: cmd.at, actor: cmd.actor, reason: 'admin' } }];
};

/** What the ledger credited for a qualified referral (null: nothing to credit, or the member is gone). */
export interface RewardReferral { advocate_entry_id: string | null; friend_entry_id: string | null; at: string }

export const decideRewarded = (s: ReferralState, cmd: RewardReferral): ReferralEvent[] => {
  if (!s.exists || s.status !== 'qualified' || !s.terms) return [];
  return [{
    type: 'ReferralRewarded',
    data: {
      at: cmd.at, advocate_entry_id: cmd.advocate_entry_id, friend_entry_id: cmd.friend_entry_id,
      advocate_amount_cents: cmd.advocate_entry_id ? s.terms.amount_cents : 0,
      friend_amount_cents: cmd.friend_entry_id ? s.terms.friend_amount_cents : 0,
    },
  }];
};

/** The idempotency causes of a referral's credits on the members' ledgers. */
export const rewardCause = (referralId: string, role: 'advocate' | 'friend'): string => `referral:${referralId}:${role}`;
