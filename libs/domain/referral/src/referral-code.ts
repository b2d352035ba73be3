/**
 * Referral codes are 8 characters of Crockford base32 (decisions §1). What a person types is read
 * the Crockford way: case-insensitive, hyphens and spaces ignored, I/L read as 1 and O as 0.
 * Null when it cannot be a code (the caller answers 404, as for any unknown code).
 */
export const normaliseReferralCode = (raw: string): string | null => {
  const s = raw.trim().toUpperCase().replace(/[-\s]/g, '').replace(/[IL]/g, '1').replace(/O/g, '0');
  return /^[0-9A-HJKMNP-TV-Z]{8}$/.test(s) ? s : null;
};

/** The programme's `referral_link_template` with every `{code}` replaced, or null without a template. */
export const referralLink = (template: string | null | undefined, code: string): string | null =>
  template ? template.split('{code}').join(code) : null;
