import { JITTER, retryDelayMs } from './retry-schedule';

const DEFAULT = [5, 30, 120, 600, 1800, 3600, 10800, 21600, 43200, 86400];

describe('retry schedule with ±20 % jitter', () => {
  it('stays within 80 %..120 % of each step, for the extremes and for many random draws', () => {
    DEFAULT.forEach((seconds, i) => {
      const attempt = i + 1;
      expect(retryDelayMs(attempt, DEFAULT, () => 0)).toBe(seconds * 1000 * (1 - JITTER));
      expect(retryDelayMs(attempt, DEFAULT, () => 0.5)).toBe(seconds * 1000);
      expect(retryDelayMs(attempt, DEFAULT, () => 0.999999)!).toBeLessThanOrEqual(seconds * 1000 * (1 + JITTER));
      for (let k = 0; k < 200; k++) {
        const d = retryDelayMs(attempt, DEFAULT)!;
        expect(d).toBeGreaterThanOrEqual(Math.floor(seconds * 1000 * 0.8));
        expect(d).toBeLessThanOrEqual(Math.ceil(seconds * 1000 * 1.2));
      }
    });
  });

  it('actually varies (jitter spreads retries of many deliveries)', () => {
    const seen = new Set(Array.from({ length: 50 }, () => retryDelayMs(3, DEFAULT)));
    expect(seen.size).toBeGreaterThan(10);
  });

  it('gives up after the last step, and refuses nonsense attempt numbers', () => {
    expect(retryDelayMs(10, DEFAULT, () => 0.5)).toBe(86_400_000);
    expect(retryDelayMs(11, DEFAULT)).toBeNull();
    expect(retryDelayMs(0, DEFAULT)).toBeNull();
    expect(retryDelayMs(1.5, DEFAULT)).toBeNull();
    expect(retryDelayMs(1, [])).toBeNull();
    expect(retryDelayMs(2, [1, 1, 1], () => 0)).toBe(800);
  });
});
