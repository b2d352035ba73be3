import type { ReferralHoldReason } from '@loyalty/contracts';

/**
 * Fraud checks of a new referral (decisions §7). Pure: the caller supplies both members' contact
 * data and how many referrals the advocate made in the last 24 h of the programme clock.
 */

/**
 * An email as fraud checks compare it: lower case; in the local part a `+tag` is dropped and dots
 * are removed (`John.Doe+a@X.com` and `johndoe@x.com` are one person). Null for no usable email.
 */
export const normaliseEmailForFraud = (email: string | null | undefined): string | null => {
  if (!email) return null;
  const e = email.trim().toLowerCase();
  const at = e.lastIndexOf('@');
  if (at <= 0 || at === e.length - 1) return e || null;
  const plus = e.indexOf('+');
  const local = (plus >= 0 && plus < at ? e.slice(0, plus) : e.slice(0, at)).replace(/\./g, '');
  return `${local}@${e.slice(at + 1)}`;
};

export interface Contact { email: string | null; phone: string | null }

export interface HoldCheck {
  advocate: Contact;
  friend: Contact;
  /** referrals the advocate made in the 24 h before this one */
  recentByAdvocate: number;
  /** programme setting `referral_daily_limit` */
  dailyLimit: number;
}

/** Why this referral must wait for a person: empty when it may proceed as `pending`. */
export const holdReasons = (c: HoldCheck): ReferralHoldReason[] => {
  const reasons: ReferralHoldReason[] = [];
  if (c.advocate.phone && c.friend.phone && c.advocate.phone === c.friend.phone) reasons.push('same_phone');
  const a = normaliseEmailForFraud(c.advocate.email);
  if (a !== null && a === normaliseEmailForFraud(c.friend.email)) reasons.push('same_email');
  // "more than the limit in 24 h": this one is number recent + 1
  if (c.recentByAdvocate + 1 > c.dailyLimit) reasons.push('daily_limit');
  return reasons;
};
