import { normaliseReferralCode, referralLink } from './referral-code';

describe('normaliseReferralCode', () => {
  it('reads codes the Crockford way: case-insensitive, I/L as 1, O as 0, hyphens ignored', () => {
    expect(normaliseReferralCode('abcd1234')).toBe('ABCD1234');
    expect(normaliseReferralCode(' ABCD-EFGH ')).toBe('ABCDEFGH');
    expect(normaliseReferralCode('ABCDOIL1')).toBe('ABCD0111');
  });

  it('refuses what cannot be a code', () => {
    expect(normaliseReferralCode('ABC')).toBeNull();
    expect(normaliseReferralCode('ABCDEFGHJ')).toBeNull();
    expect(normaliseReferralCode('ABCDEFGU')).toBeNull();
    expect(normaliseReferralCode('ABCD$FGH')).toBeNull();
  });
});

describe('referralLink', () => {
  it('replaces every {code} of the template', () => {
    expect(referralLink('https://shop.example/r/{code}?c={code}', 'ABCD1234')).toBe('https://shop.example/r/ABCD1234?c=ABCD1234');
  });
  it('is null without a template', () => {
    expect(referralLink(null, 'ABCD1234')).toBeNull();
    expect(referralLink(undefined, 'ABCD1234')).toBeNull();
  });
});
