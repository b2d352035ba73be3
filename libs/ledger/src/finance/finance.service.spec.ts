import type { FieldError } from '@loyalty/platform';
import { parseInstantParam } from './finance.service';

describe('instants in finance queries', () => {
  const parse = (raw: unknown) => {
    const errors: FieldError[] = [];
    const d = parseInstantParam('as_of', raw, errors);
    return { iso: d?.toISOString() ?? null, paths: errors.map((e) => e.path) };
  };

  it('accepts RFC 3339 date-times with a zone, normalised to UTC', () => {
    expect(parse('2026-10-31T23:59:59Z')).toEqual({ iso: '2026-10-31T23:59:59.000Z', paths: [] });
    expect(parse('2026-11-01T01:00:00.5+02:00')).toEqual({ iso: '2026-10-31T23:00:00.500Z', paths: [] });
    expect(parse('2028-02-29T12:00:00Z').iso).toBe('2028-02-29T12:00:00.000Z');
  });

  it('refuses dates alone, missing zones, impossible calendar values and non-strings at /as_of', () => {
    for (const raw of ['2026-10-31', '2026-10-31T23:59:59', 'yesterday', '2026-02-30T00:00:00Z', '2027-02-29T00:00:00Z', '2026-01-01T24:00:00Z',
      '2026-13-01T00:00:00Z', '2026-01-01T00:60:00Z', '2026-01-01T00:00:00+24:00', ['2026-01-01T00:00:00Z'], 1_700_000_000_000, '']) {
      expect({ raw, ...parse(raw) }).toEqual({ raw, iso: null, paths: ['/as_of'] });
    }
  });
});
