import { randomUUID } from 'node:crypto';
import type { AppConfig } from '@loyalty/platform';
import { RateLimiter } from './rate-limiter';

/** The token bucket in real Redis: shared by every limiter on the same server, atomic under concurrency. */
const REDIS = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const config = (redisUrl?: string) => ({ redisUrl } as AppConfig);
const rate = { burst: 50, perSecond: 10 };

describe('RateLimiter (Redis)', () => {
  const limiters: RateLimiter[] = [];
  const limiter = (redisUrl?: string) => {
    const l = new RateLimiter(config(redisUrl));
    limiters.push(l);
    return l;
  };
  afterAll(async () => { for (const l of limiters) await l.onModuleDestroy(); });

  it('shares one bucket between two limiters: 50 concurrent takes pass in total, then refusals', async () => {
    const a = limiter(REDIS);
    const b = limiter(REDIS);
    const key = `it-${randomUUID()}`;
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).take(key, rate, 1)));
    const allowed = results.filter((r) => r.allowed).length;
    expect(allowed).toBeGreaterThanOrEqual(50);
    expect(allowed).toBeLessThanOrEqual(51); // at most one token refills while the calls land
    const refused = results.filter((r) => !r.allowed);
    expect(refused.length).toBe(60 - allowed);
    for (const r of refused) {
      expect(r.retryAfterSeconds).toBeGreaterThan(0);
      expect(r.retryAfterSeconds).toBeLessThanOrEqual(0.1 + 1e-9);
      expect(r.remaining).toBeLessThan(1);
    }
  });

  it('counts remaining tokens down and charges a batch cost at once', async () => {
    const l = limiter(REDIS);
    const key = `it-${randomUUID()}`;
    const first = await l.take(key, rate, 1);
    expect(first.allowed).toBe(true);
    expect(Math.floor(first.remaining)).toBe(49);
    const batch = await l.take(key, rate, 10);
    expect(batch.allowed).toBe(true);
    expect(Math.floor(batch.remaining)).toBeGreaterThanOrEqual(39);
    expect(Math.floor(batch.remaining)).toBeLessThanOrEqual(40);
    const tooBig = await l.take(key, rate, 45);
    expect(tooBig.allowed).toBe(false);
    expect(tooBig.retryAfterSeconds).toBeGreaterThan(0.4);
  });

  it('refills at the per-second rate', async () => {
    const l = limiter(REDIS);
    const key = `it-${randomUUID()}`;
    const tiny = { burst: 2, perSecond: 10 };
    expect((await l.take(key, tiny, 2)).allowed).toBe(true);
    expect((await l.take(key, tiny, 1)).allowed).toBe(false);
    await new Promise((r) => setTimeout(r, 150));
    expect((await l.take(key, tiny, 1)).allowed).toBe(true);
  });

  it('keeps buckets per key and per process without Redis', async () => {
    const a = limiter();
    const b = limiter();
    const key = `it-${randomUUID()}`;
    for (let i = 0; i < 50; i++) expect((await a.take(key, rate, 1)).allowed).toBe(true);
    expect((await a.take(key, rate, 1)).allowed).toBe(false);
    expect((await b.take(key, rate, 1)).allowed).toBe(true); // another process, another bucket
    expect((await a.take(`${key}-other`, rate, 1)).allowed).toBe(true);
  });
});

describe('RateLimiter without a reachable Redis', () => {
  it('falls back to the in-process bucket instead of failing requests', async () => {
    const l = new RateLimiter({ redisUrl: 'redis://127.0.0.1:1' } as AppConfig);
    try {
      const key = `it-${randomUUID()}`;
      const started = Date.now();
      for (let i = 0; i < 3; i++) expect((await l.take(key, { burst: 3, perSecond: 1 }, 1)).allowed).toBe(true);
      expect((await l.take(key, { burst: 3, perSecond: 1 }, 1)).allowed).toBe(false);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await l.onModuleDestroy();
    }
  });
});
