import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { isMemberId } from '@loyalty/contracts';
import { FieldError } from '@loyalty/platform';

export const normaliseEmail = (email: string): string => email.trim().toLowerCase();

/** E.164 via libphonenumber; numbers without a leading + are refused (there is no default country). */
export const normalisePhone = (phone: string, path = '/phone'): { ok: true; value: string } | { ok: false; error: FieldError } => {
  const parsed = parsePhoneNumberFromString(phone.trim());
  // isPossible (length and country code), not isValid: reserved test ranges such as +44 7700 900xxx must enrol
  if (!parsed || !parsed.isPossible()) return { ok: false, error: { path, message: 'must be a valid phone number in international form, e.g. +14155550100' } };
  return { ok: true, value: parsed.number };
};

export type MemberRef = { kind: 'id'; value: string } | { kind: 'ref'; value: string } | { kind: 'phone'; value: string } | { kind: 'email'; value: string };

/** Parses the accepted member id forms: `M-…`, `ref:<external_ref>`, `phone:<E.164>`. */
export const parseMemberRef = (raw: string): MemberRef | null => {
  if (isMemberId(raw)) return { kind: 'id', value: raw };
  if (raw.startsWith('ref:') && raw.length > 4) return { kind: 'ref', value: raw.slice(4) };
  if (raw.startsWith('phone:')) {
    const p = normalisePhone(raw.slice(6));
    return p.ok ? { kind: 'phone', value: p.value } : null;
  }
  return null;
};
