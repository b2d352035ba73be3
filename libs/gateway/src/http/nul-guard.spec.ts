import { findNul, nulInUrl } from './nul-guard';

describe('NUL guard', () => {
  it('finds a NUL in nested strings and keys, as a JSON pointer', () => {
    expect(findNul({ email: 'a@b.co', external_ref: 'x\u0000y' })).toBe('/external_ref');
    expect(findNul({ events: [{ lines: [{ tags: ['ok', 'b\u0000d'] }] }] })).toBe('/events/0/lines/0/tags/1');
    expect(findNul({ 'a\u0000': 1 })).toBe('/a\u0000');
    expect(findNul('\u0000')).toBe('');
  });

  it('passes clean values', () => {
    expect(findNul({ a: 'x', b: [1, true, null, { c: 'ü€😀' }] })).toBeNull();
    expect(findNul(null)).toBeNull();
  });

  it('locates an encoded NUL in a URL', () => {
    expect(nulInUrl('/v1/members/ref:%00')).toEqual({ where: 'path' });
    expect(nulInUrl('/v1/members?limit=1&email=a%00b')).toEqual({ where: 'query', param: 'email' });
    expect(nulInUrl('/v1/members?e%00mail=1')).toEqual({ where: 'query', param: 'email' });
    expect(nulInUrl('/v1/members?email=a%2500')).toBeNull(); // an encoded "%00" text, not a NUL
    expect(nulInUrl('/v1/members?email=a@b.co')).toBeNull();
  });
});
