import fc from 'fast-check';
import { sumActivityInWindow } from './tier-activity.aggregator';
import type { TierActivity } from './tier-activity.aggregator';

const activity: TierActivity[] = [
  { at: '2023-12-31T23:59:59.999Z', spend: 1_000, points: 10, orders: 1 },
  { at: '2024-01-01T00:00:00.000Z', spend: 2_000, points: 20, orders: 1 }, // at `from`: included
  { at: '2024-02-01T00:00:00.000Z', spend: -500, points: -5, orders: 0 }, // a refund
  { at: '2024-03-01T00:00:00.000Z', spend: 4_000, points: 40, orders: 1 }, // at `to`: included
  { at: '2024-03-01T00:00:00.001Z', spend: 8_000, points: 80, orders: 1 },
];

describe('sumActivityInWindow', () => {
  it('given a window when summed then activity in [from, to] counts, refunds included', () => {
    expect(sumActivityInWindow(activity, '2024-01-01T00:00:00.000Z', '2024-03-01T00:00:00.000Z')).toEqual({
      spend: 5_500,
      points: 55,
      orders: 2,
    });
  });

  it('given no start (lifetime) when summed then everything up to `to` counts', () => {
    expect(sumActivityInWindow(activity, null, '2024-03-01T00:00:00.000Z')).toEqual({ spend: 6_500, points: 65, orders: 3 });
  });

  it('given no activity when summed then all metrics are 0', () => {
    expect(sumActivityInWindow([], null, '2024-03-01T00:00:00.000Z')).toEqual({ spend: 0, points: 0, orders: 0 });
  });

  it('given invalid data when summed then it throws', () => {
    expect(() => sumActivityInWindow([{ at: 'x', spend: 0, points: 0, orders: 0 }], null, '2024-01-01')).toThrow(RangeError);
    expect(() => sumActivityInWindow([{ at: '2024-01-01', spend: 0.5, points: 0, orders: 0 }], null, '2024-01-02')).toThrow(RangeError);
    expect(() => sumActivityInWindow([], 'bad', '2024-01-02')).toThrow(RangeError);
  });

  it('property: splitting a window at any instant splits the sums', () => {
    const entry = fc.record({
      at: fc.integer({ min: 0, max: 1_000 }).map((d) => new Date(Date.UTC(2024, 0, 1) + d * 3_600_000).toISOString()),
      spend: fc.integer({ min: -1_000, max: 1_000 }),
      points: fc.integer({ min: 0, max: 1_000 }),
      orders: fc.integer({ min: 0, max: 1 }),
    });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 20 }), fc.integer({ min: 0, max: 1_000 }), (entries, cut) => {
        const cutMs = Date.UTC(2024, 0, 1) + cut * 3_600_000;
        const end = new Date(Date.UTC(2024, 0, 1) + 1_000 * 3_600_000).toISOString();
        const whole = sumActivityInWindow(entries, null, end);
        const before = sumActivityInWindow(entries, null, new Date(cutMs - 1).toISOString());
        const after = sumActivityInWindow(entries, new Date(cutMs).toISOString(), end);
        expect(before.spend + after.spend).toBe(whole.spend);
        expect(before.points + after.points).toBe(whole.points);
        expect(before.orders + after.orders).toBe(whole.orders);
      }),
    );
  });
});
