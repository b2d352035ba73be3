import { MAX_BODY_DEPTH, inspectBody, nulInUrl } from './nul-guard';

const nested = (depth: number): unknown => {
  let v: unknown = [];
  for (let i = 1; i < depth; i++) v = [v];
  return v;
};

describe('body inspection', () => {
  it('finds a NUL in nested strings and keys, as a JSON pointer', () => {
    expect(inspectBody({ email: 'a@b.co', external_ref: 'x\u0000y' })).toEqual({ path: '/external_ref', message: 'must not contain NUL characters' });
    expect(inspectBody({ events: [{ lines: [{ tags: ['ok', 'b\u0000d'] }] }] })?.path).toBe('/events/0/lines/0/tags/1');
    expect(inspectBody({ 'a\u0000': 1 })?.path).toBe('/a\u0000');
    expect(inspectBody('\u0000')?.path).toBe('');
  });

  it('reports the first offence in document order', () => {
    expect(inspectBody({ a: ['x', 'y\u0000'], b: '\u0000' })?.path).toBe('/a/1');
  });

  it('finds unpaired surrogates, high or low, in values and keys', () => {
    expect(inspectBody({ phone: '\ud800' })).toEqual({ path: '/phone', message: 'must not contain unpaired UTF-16 surrogates' });
    expect(inspectBody({ note: 'ok \udc00 tail' })?.path).toBe('/note');
    expect(inspectBody({ note: 'end \ud83d' })?.path).toBe('/note');
    expect(inspectBody([{ ['k\udfff']: 1 }])?.path).toBe('/0/k\udfff');
  });

  it('refuses prototype keys as unknown fields', () => {
    expect(inspectBody(JSON.parse('{"email":"a@b.co","__proto__":{"admin":true}}'))).toEqual({ path: '/__proto__', message: 'unknown field __proto__' });
    expect(inspectBody({ lines: [{ constructor: 1 }] })).toEqual({ path: '/lines/0/constructor', message: 'unknown field constructor' });
  });

  it('refuses deep nesting without recursion, however deep', () => {
    expect(inspectBody(nested(MAX_BODY_DEPTH))).toBeNull();
    const hit = inspectBody(nested(MAX_BODY_DEPTH + 1));
    expect(hit?.message).toBe(`nesting deeper than ${MAX_BODY_DEPTH} levels`);
    expect(hit?.path).toBe('/0'.repeat(MAX_BODY_DEPTH));
    // far beyond any stack: a recursive walk overflows at a few thousand levels
    expect(inspectBody(JSON.parse('['.repeat(200_000) + ']'.repeat(200_000)))?.message).toMatch(/nesting deeper/);
    expect(inspectBody({ a: JSON.parse('{"b":'.repeat(50_000) + '1' + '}'.repeat(50_000)) })?.message).toMatch(/nesting deeper/);
  });

  it('passes clean values', () => {
    expect(inspectBody({ a: 'x', b: [1, true, null, { c: 'ü€😀' }] })).toBeNull();
    expect(inspectBody(null)).toBeNull();
    expect(inspectBody({ benefits: { lounge: true } })).toBeNull();
  });

  it('locates an encoded NUL in a URL', () => {
    expect(nulInUrl('/v1/members/ref:%00')).toEqual({ where: 'path' });
    expect(nulInUrl('/v1/members?limit=1&email=a%00b')).toEqual({ where: 'query', param: 'email' });
    expect(nulInUrl('/v1/members?e%00mail=1')).toEqual({ where: 'query', param: 'email' });
    expect(nulInUrl('/v1/members?email=a%2500')).toBeNull(); // an encoded "%00" text, not a NUL
    expect(nulInUrl('/v1/members?email=a@b.co')).toBeNull();
  });
});
