import { holdReasons, normaliseEmailForFraud } from './fraud';

describe('normaliseEmailForFraud', () => {
  it.each([
    ['john.doe+a@x.com', 'johndoe@x.com'],
    ['John.Doe+promo+2@X.COM', 'johndoe@x.com'],
    ['JOHNDOE@x.com', 'johndoe@x.com'],
    ['  j.o.h.n@x.com ', 'john@x.com'],
    ['plain@example.org', 'plain@example.org'],
  ])('normalises %s to %s', (input, expected) => {
    expect(normaliseEmailForFraud(input)).toBe(expected);
  });

  it('keeps the domain as it is apart from case (dots in the domain matter)', () => {
    expect(normaliseEmailForFraud('a@mail.example.com')).toBe('a@mail.example.com');
    expect(normaliseEmailForFraud('a@mail.example.com')).not.toBe(normaliseEmailForFraud('a@mailexample.com'));
  });

  it('treats a + in the domain as part of the domain, not a tag', () => {
    expect(normaliseEmailForFraud('ab@x+y.com')).toBe('ab@x+y.com');
  });

  it('gives null for a missing email', () => {
    expect(normaliseEmailForFraud(null)).toBeNull();
    expect(normaliseEmailForFraud(undefined)).toBeNull();
    expect(normaliseEmailForFraud('')).toBeNull();
  });
});

describe('holdReasons', () => {
  const advocate = { email: 'john.doe+a@x.com', phone: '+14155550100' };
  const base = { advocate, recentByAdvocate: 0, dailyLimit: 10 };

  it('given distinct people under the limit then nothing holds the referral', () => {
    expect(holdReasons({ ...base, friend: { email: 'ada@x.com', phone: '+14155550101' } })).toEqual([]);
  });

  it('given the same normalised email then it is held for same_email', () => {
    expect(holdReasons({ ...base, friend: { email: 'johndoe@x.com', phone: null } })).toEqual(['same_email']);
  });

  it('given the same phone then it is held for same_phone', () => {
    expect(holdReasons({ ...base, friend: { email: 'other@x.com', phone: '+14155550100' } })).toEqual(['same_phone']);
  });

  it('given two missing phones or emails then they do not count as the same', () => {
    expect(holdReasons({ ...base, advocate: { email: null, phone: null }, friend: { email: null, phone: null } })).toEqual([]);
  });

  it('given the advocate already made `limit` referrals in 24 h then the next one is held (more than the limit)', () => {
    const friend = { email: 'ada@x.com', phone: null };
    expect(holdReasons({ ...base, friend, recentByAdvocate: 9 })).toEqual([]);
    expect(holdReasons({ ...base, friend, recentByAdvocate: 10 })).toEqual(['daily_limit']);
  });

  it('given a daily limit of 0 then every referral is held', () => {
    expect(holdReasons({ ...base, friend: { email: 'ada@x.com', phone: null }, dailyLimit: 0 })).toEqual(['daily_limit']);
  });

  it('reports every reason that applies', () => {
    expect(holdReasons({ ...base, friend: { email: 'JohnDoe@x.com', phone: '+14155550100' }, recentByAdvocate: 12 }))
      .toEqual(['same_phone', 'same_email', 'daily_limit']);
  });
});
