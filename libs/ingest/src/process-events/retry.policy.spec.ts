import { problem } from '@loyalty/platform';
import { backoffMs, isRetryable } from './retry.policy';

describe('ingest retry policy', () => {
  const p = { maxAttempts: 5, backoffBaseMs: 1000, backoffMaxMs: 8000 };

  it('retries bus and handler faults, not domain problems', () => {
    expect(isRetryable(problem('unavailable', 'broker down'))).toBe(true);
    expect(isRetryable(problem('internal', 'no handler'))).toBe(true);
    expect(isRetryable(new Error('socket hang up'))).toBe(true);
    expect(isRetryable(problem('validation', 'bad'))).toBe(false);
    expect(isRetryable(problem('not-found', 'member'))).toBe(false);
  });

  it('backs off exponentially up to the cap, with ±20 % jitter', () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4, 5, 6].map((a) => backoffMs(a, p, mid))).toEqual([1000, 2000, 4000, 8000, 8000, 8000]);
    expect(backoffMs(1, p, () => 0)).toBe(800);
    expect(backoffMs(1, p, () => 1)).toBe(1200);
    expect(backoffMs(1000, p, mid)).toBe(8000);
  });
});
