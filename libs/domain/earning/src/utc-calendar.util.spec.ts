import fc from 'fast-check';
import {
  MS_PER_DAY,
  addDaysUtc,
  addMonthsUtc,
  daysInMonthUtc,
  endOfPeriodUtc,
  parseInstant,
  startOfYearUtc,
  toIso,
} from './utc-calendar.util';

/** Instants between 1970 and 2200 as ISO strings. */
const isoInstant = fc
  .integer({ min: 0, max: Date.UTC(2200, 0, 1) })
  .map((ms) => new Date(ms).toISOString());

describe('parseInstant', () => {
  it.each([
    ['2024-02-29T10:00:00.000Z', Date.UTC(2024, 1, 29, 10)],
    ['2024-02-29T10:00:00Z', Date.UTC(2024, 1, 29, 10)],
    ['2024-02-29T12:00:00+02:00', Date.UTC(2024, 1, 29, 10)],
    ['2024-02-29', Date.UTC(2024, 1, 29)],
    ['2024-02-29T10:00Z', Date.UTC(2024, 1, 29, 10)],
  ])('given %p when parsed then it is the UTC instant', (iso, ms) => {
    expect(parseInstant(iso)).toBe(ms);
  });

  it.each([
    ['2024-02-29T10:00:00'], // no offset: would be read in the host's zone
    ['not a date'],
    [''],
    ['2023-02-29'], // not a leap year
    ['2024-13-01'],
    ['2024-04-31T00:00:00Z'],
    ['2024-00-10'],
  ])('given %p when parsed then it throws a RangeError', (iso) => {
    expect(() => parseInstant(iso, 'when')).toThrow(RangeError);
  });

  it('property: round-trips with toIso', () => {
    fc.assert(
      fc.property(isoInstant, (iso) => {
        expect(toIso(parseInstant(iso))).toBe(iso);
      }),
    );
  });

  it('property: the same as Date.parse with a calendar check, whatever was parsed before (the last instant is remembered)', () => {
    const dated = fc.record({ y: fc.integer({ min: 1900, max: 2300 }), m: fc.integer({ min: 0, max: 13 }), d: fc.integer({ min: 0, max: 32 }) })
      .map(({ y, m, d }) => `${y}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}T08:30:00.000Z`);
    const expected = (iso: string): number | 'throws' => {
      const [y, m, d] = iso.slice(0, 10).split('-').map(Number);
      return m >= 1 && m <= 12 && d >= 1 && d <= new Date(Date.UTC(y, m, 0)).getUTCDate() ? Date.parse(iso) : 'throws';
    };
    fc.assert(
      fc.property(fc.array(fc.oneof(dated, isoInstant, fc.constant('')), { minLength: 1, maxLength: 6 }), (list) => {
        for (const iso of [...list, ...list]) {
          const want = iso === '' ? 'throws' : expected(iso);
          if (want === 'throws') expect(() => parseInstant(iso)).toThrow(RangeError);
          else expect(parseInstant(iso)).toBe(want);
        }
      }),
    );
  });
});

describe('daysInMonthUtc', () => {
  it.each([
    [2024, 1, 29],
    [2023, 1, 28],
    [2000, 1, 29], // divisible by 400
    [1900, 1, 28], // divisible by 100, not 400
    [2024, 0, 31],
    [2024, 3, 30],
    [2024, 11, 31],
  ])('given %p-%p when asked then it has %p days', (year, monthIndex, days) => {
    expect(daysInMonthUtc(year, monthIndex)).toBe(days);
  });
});

describe('addDaysUtc', () => {
  it('given an instant when adding days then it adds 24 h per day across month and year ends', () => {
    expect(addDaysUtc('2024-12-31T23:00:00.000Z', 1)).toBe('2025-01-01T23:00:00.000Z');
    expect(addDaysUtc('2024-02-28T00:00:00.000Z', 1)).toBe('2024-02-29T00:00:00.000Z');
    expect(addDaysUtc('2024-03-01T00:00:00.000Z', -1)).toBe('2024-02-29T00:00:00.000Z');
  });

  it('property: adds exactly days × 86 400 000 ms', () => {
    fc.assert(
      fc.property(isoInstant, fc.integer({ min: -10_000, max: 10_000 }), (iso, days) => {
        expect(parseInstant(addDaysUtc(iso, days)) - parseInstant(iso)).toBe(days * MS_PER_DAY);
      }),
    );
  });
});

describe('addMonthsUtc', () => {
  it.each([
    ['2024-01-31T10:20:30.456Z', 1, '2024-02-29T10:20:30.456Z'], // leap-year February
    ['2023-01-31T00:00:00.000Z', 1, '2023-02-28T00:00:00.000Z'],
    ['2024-03-31T00:00:00.000Z', 1, '2024-04-30T00:00:00.000Z'],
    ['2024-02-29T00:00:00.000Z', 12, '2025-02-28T00:00:00.000Z'],
    ['2024-02-29T00:00:00.000Z', 48, '2028-02-29T00:00:00.000Z'],
    ['2024-11-30T00:00:00.000Z', 3, '2025-02-28T00:00:00.000Z'],
    ['2024-12-15T08:00:00.000Z', 1, '2025-01-15T08:00:00.000Z'],
    ['2024-05-15T00:00:00.000Z', 0, '2024-05-15T00:00:00.000Z'],
    ['2024-08-31T00:00:00.000Z', 6, '2025-02-28T00:00:00.000Z'],
    ['2024-01-15T00:00:00.000Z', 25, '2026-02-15T00:00:00.000Z'],
  ])('given %p when adding %p months then it is %p', (iso, months, expected) => {
    expect(addMonthsUtc(iso, months)).toBe(expected);
  });

  it('given negative or fractional months when adding then it throws', () => {
    expect(() => addMonthsUtc('2024-01-01T00:00:00.000Z', -1)).toThrow(RangeError);
    expect(() => addMonthsUtc('2024-01-01T00:00:00.000Z', 1.5)).toThrow(RangeError);
  });

  it('property: lands in the right month, keeps the time of day, day = min(day, month length)', () => {
    fc.assert(
      fc.property(isoInstant, fc.integer({ min: 0, max: 240 }), (iso, months) => {
        const from = new Date(iso);
        const to = new Date(addMonthsUtc(iso, months));
        const monthsApart =
          (to.getUTCFullYear() - from.getUTCFullYear()) * 12 + to.getUTCMonth() - from.getUTCMonth();
        expect(monthsApart).toBe(months);
        expect(to.getUTCDate()).toBe(
          Math.min(from.getUTCDate(), daysInMonthUtc(to.getUTCFullYear(), to.getUTCMonth())),
        );
        expect(iso.slice(10)).toBe(to.toISOString().slice(10));
      }),
    );
  });
});

describe('startOfYearUtc', () => {
  it('given any instant when asked then it is 1 January 00:00 UTC of that year', () => {
    expect(startOfYearUtc('2024-07-04T12:00:00.000Z')).toBe('2024-01-01T00:00:00.000Z');
    expect(startOfYearUtc('2025-01-01T00:00:00.000Z')).toBe('2025-01-01T00:00:00.000Z');
    // 00:30 on 1 Jan in +01:00 is still 31 Dec in UTC
    expect(startOfYearUtc('2025-01-01T00:30:00+01:00')).toBe('2024-01-01T00:00:00.000Z');
  });
});

describe('endOfPeriodUtc', () => {
  it.each([
    ['2024-02-10T00:00:00.000Z', 'month', '2024-02-29T23:59:59.999Z'],
    ['2023-02-10T00:00:00.000Z', 'month', '2023-02-28T23:59:59.999Z'],
    ['2024-12-31T23:59:59.999Z', 'month', '2024-12-31T23:59:59.999Z'],
    ['2024-04-01T00:00:00.000Z', 'month', '2024-04-30T23:59:59.999Z'],
    ['2024-01-01T00:00:00.000Z', 'quarter', '2024-03-31T23:59:59.999Z'],
    ['2024-03-31T23:59:59.999Z', 'quarter', '2024-03-31T23:59:59.999Z'],
    ['2024-04-01T00:00:00.000Z', 'quarter', '2024-06-30T23:59:59.999Z'],
    ['2024-08-15T00:00:00.000Z', 'quarter', '2024-09-30T23:59:59.999Z'],
    ['2024-11-15T00:00:00.000Z', 'quarter', '2024-12-31T23:59:59.999Z'],
    ['2024-06-15T00:00:00.000Z', 'year', '2024-12-31T23:59:59.999Z'],
    ['2024-12-31T23:59:59.999Z', 'year', '2024-12-31T23:59:59.999Z'],
  ] as const)('given %p when asked for the end of its %p then it is %p', (iso, period, expected) => {
    expect(endOfPeriodUtc(iso, period)).toBe(expected);
  });

  it('given an unknown period from unvalidated input when asked then it throws', () => {
    expect(() => endOfPeriodUtc('2024-01-01T00:00:00.000Z', 'week' as never)).toThrow(TypeError);
  });

  it('property: the end is at or after the instant and one ms before the next period starts', () => {
    fc.assert(
      fc.property(isoInstant, fc.constantFrom('month', 'quarter', 'year' as const), (iso, period) => {
        const end = parseInstant(endOfPeriodUtc(iso, period));
        expect(end).toBeGreaterThanOrEqual(parseInstant(iso));
        const next = new Date(end + 1);
        expect(next.getUTCDate()).toBe(1);
        expect(next.getUTCHours()).toBe(0);
        const expectedMonths = { month: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], quarter: [0, 3, 6, 9], year: [0] };
        expect(expectedMonths[period]).toContain(next.getUTCMonth());
      }),
    );
  });
});
