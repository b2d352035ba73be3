import { tierWindowStart } from './tier-window.policy';
import { aTier } from './testing/program.fixture';

describe('tierWindowStart', () => {
  const now = '2024-03-01T12:00:00.000Z';

  it('given a lifetime window when asked then there is no start', () => {
    expect(tierWindowStart(aTier({ window: 'lifetime' }), now)).toBeNull();
  });

  it('given a calendar_year window when asked then it starts on 1 January UTC of now', () => {
    expect(tierWindowStart(aTier({ window: 'calendar_year' }), now)).toBe('2024-01-01T00:00:00.000Z');
    expect(tierWindowStart(aTier({ window: 'calendar_year' }), '2024-12-31T23:59:59.999Z')).toBe('2024-01-01T00:00:00.000Z');
    expect(tierWindowStart(aTier({ window: 'calendar_year' }), '2025-01-01T00:00:00.000Z')).toBe('2025-01-01T00:00:00.000Z');
  });

  it('given a rolling_365 window when asked then it starts 365 days before now (leap day included)', () => {
    expect(tierWindowStart(aTier({ window: 'rolling_365' }), now)).toBe('2023-03-02T12:00:00.000Z');
    expect(tierWindowStart(aTier({ window: 'rolling_365' }), '2023-03-01T12:00:00.000Z')).toBe('2022-03-01T12:00:00.000Z');
  });

  it('given a custom window when asked then it starts window_days days before now', () => {
    expect(tierWindowStart(aTier({ window: 'custom', window_days: 90 }), now)).toBe('2023-12-02T12:00:00.000Z');
    expect(tierWindowStart(aTier({ window: 'custom', window_days: 1 }), now)).toBe('2024-02-29T12:00:00.000Z');
  });

  it('given a custom window and an anchor when asked then it is the anchored period containing now', () => {
    const tier = aTier({ window: 'custom', window_days: 30 });
    const anchor = '2024-01-01T00:00:00.000Z';
    expect(tierWindowStart(tier, '2024-01-01T00:00:00.000Z', anchor)).toBe('2024-01-01T00:00:00.000Z');
    expect(tierWindowStart(tier, '2024-01-30T23:59:59.999Z', anchor)).toBe('2024-01-01T00:00:00.000Z');
    expect(tierWindowStart(tier, '2024-01-31T00:00:00.000Z', anchor)).toBe('2024-01-31T00:00:00.000Z');
    expect(tierWindowStart(tier, '2024-03-01T12:00:00.000Z', anchor)).toBe('2024-03-01T00:00:00.000Z');
    // now before the anchor: the period that contains now, counted backwards
    expect(tierWindowStart(tier, '2023-12-31T00:00:00.000Z', anchor)).toBe('2023-12-02T00:00:00.000Z');
  });

  it('given an anchor on a non-custom window when asked then the anchor is ignored', () => {
    expect(tierWindowStart(aTier({ window: 'rolling_365' }), now, '2020-01-01T00:00:00.000Z')).toBe('2023-03-02T12:00:00.000Z');
  });

  it('given a custom window without a positive window_days when asked then it throws', () => {
    expect(() => tierWindowStart(aTier({ window: 'custom', window_days: null }), now)).toThrow(/window_days/);
    expect(() => tierWindowStart(aTier({ window: 'custom', window_days: 0 }), now)).toThrow(RangeError);
    expect(() => tierWindowStart(aTier({ window: 'custom', window_days: 1.5 }), now)).toThrow(RangeError);
  });

  it('given an unknown window or an invalid now when asked then it throws', () => {
    expect(() => tierWindowStart(aTier({ window: 'decade' as never }), now)).toThrow(TypeError);
    expect(() => tierWindowStart(aTier(), 'now')).toThrow(RangeError);
  });
});
