import { StateCache, cacheBytesFromEnv, stateCacheStats } from './state-cache';

describe('StateCache (bounded in bytes)', () => {
  it('evicts the least recently used states to stay within its budget, counting hits, misses and evictions', () => {
    const cache = new StateCache<{ bytes: number }>('test_cache_a', 1_000, (v) => v.bytes);
    cache.set('a', { bytes: 400 });
    cache.set('b', { bytes: 400 });
    expect(cache.get('a')).toEqual({ bytes: 400 }); // a is now the most recent
    cache.set('c', { bytes: 400 }); // over budget: b (least recently used) goes
    expect(cache.peek('b')).toBeUndefined();
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('c')).toEqual({ bytes: 400 });
    expect(cache.stats).toMatchObject({ hits: 2, misses: 1, evictions: 1, maxBytes: 1_000 });
    expect(cache.stats.bytes()).toBe(800);
    expect(cache.stats.entries()).toBe(2);
    expect(stateCacheStats().filter((s) => s.name === 'test_cache_a')).toHaveLength(1);
  });

  it('keeps a state larger than the whole budget, alone (it is the one being worked on)', () => {
    const cache = new StateCache<{ bytes: number }>('test_cache_b', 1_000, (v) => v.bytes);
    cache.set('small', { bytes: 10 });
    cache.set('huge', { bytes: 50_000 });
    expect(cache.get('huge')).toEqual({ bytes: 50_000 });
    expect(cache.peek('small')).toBeUndefined();
    expect(cache.stats.bytes()).toBe(1_000);
  });

  it('re-weighs a state stored again after it grew', () => {
    const cache = new StateCache<{ bytes: number }>('test_cache_c', 1_000, (v) => v.bytes);
    const a = { bytes: 100 };
    cache.set('a', a);
    cache.set('b', { bytes: 100 });
    a.bytes = 950;
    cache.set('a', a);
    expect(cache.peek('b')).toBeUndefined();
    expect(cache.stats.bytes()).toBe(950);
  });

  it('0 bytes disables it; budgets come from the environment as whole bytes', () => {
    const off = new StateCache<{ bytes: number }>('test_cache_d', 0, (v) => v.bytes);
    off.set('a', { bytes: 1 });
    expect(off.get('a')).toBeUndefined();
    process.env.TEST_CACHE_BYTES = '12345';
    expect(cacheBytesFromEnv('TEST_CACHE_BYTES', 7)).toBe(12_345);
    process.env.TEST_CACHE_BYTES = 'lots';
    expect(() => cacheBytesFromEnv('TEST_CACHE_BYTES', 7)).toThrow(RangeError);
    delete process.env.TEST_CACHE_BYTES;
    expect(cacheBytesFromEnv('TEST_CACHE_BYTES', 7)).toBe(7);
  });
});
