import { takeFromBucket } from './token-bucket';

const rate = { burst: 50, perSecond: 10 };

describe('token bucket', () => {
  it('allows a burst of 50 then refuses the 51st', () => {
    let b = { tokens: 50, updatedAt: 0 };
    for (let i = 0; i < 50; i++) {
      const r = takeFromBucket(b, rate, 1, 0);
      expect(r.allowed).toBe(true);
      b = r.bucket;
    }
    const r = takeFromBucket(b, rate, 1, 0);
    expect(r.allowed).toBe(false);
    expect(r.retryAfterSeconds).toBeCloseTo(0.1);
  });

  it('refills at 10 per second and never above the burst', () => {
    const empty = { tokens: 0, updatedAt: 0 };
    expect(takeFromBucket(empty, rate, 1, 100).allowed).toBe(true);
    expect(takeFromBucket(empty, rate, 10, 900).allowed).toBe(false);
    expect(takeFromBucket(empty, rate, 10, 1000).allowed).toBe(true);
    expect(takeFromBucket(empty, rate, 1, 3_600_000).remaining).toBe(49);
  });

  it('charges a batch cost in one take', () => {
    const r = takeFromBucket({ tokens: 50, updatedAt: 0 }, rate, 10, 0);
    expect(r.remaining).toBe(40);
  });
});
