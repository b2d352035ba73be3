import { KeyedMutex } from './keyed-mutex';

const tick = () => new Promise((r) => setImmediate(r));

describe('KeyedMutex', () => {
  it('runs calls sharing a key one after the other', async () => {
    const locks = new KeyedMutex();
    const log: string[] = [];
    const job = (name: string, keys: string[]) => locks.run(keys, async () => {
      log.push(`${name}:start`);
      await tick(); await tick();
      log.push(`${name}:end`);
    });
    await Promise.all([job('a', ['x']), job('b', ['x', 'y']), job('c', ['y'])]);
    const at = (e: string) => log.indexOf(e);
    expect(at('a:end')).toBeLessThan(at('b:start'));
    // b and c share y: one finishes before the other starts (in either order)
    expect(at('b:end') < at('c:start') || at('c:end') < at('b:start')).toBe(true);
  });

  it('lets calls with disjoint keys run together', async () => {
    const locks = new KeyedMutex();
    const log: string[] = [];
    const job = (name: string, keys: string[]) => locks.run(keys, async () => {
      log.push(`${name}:start`);
      await tick();
      log.push(`${name}:end`);
    });
    await Promise.all([job('a', ['x']), job('b', ['y'])]);
    expect(log.slice(0, 2).sort()).toEqual(['a:start', 'b:start']);
  });

  it('does not deadlock when calls name the same keys in different orders', async () => {
    const locks = new KeyedMutex();
    let done = 0;
    await Promise.all(Array.from({ length: 20 }, (_, i) => locks.run(i % 2 ? ['p', 'q', 'r'] : ['r', 'q', 'p'], async () => { await tick(); done++; })));
    expect(done).toBe(20);
  });

  it('releases the keys when the work fails', async () => {
    const locks = new KeyedMutex();
    await expect(locks.run(['k'], async () => { throw new Error('boom'); })).rejects.toThrow('boom');
    await expect(locks.run(['k'], async () => 'ok')).resolves.toBe('ok');
  });

  it('serialises single-key calls and lets other keys through', async () => {
    const mutex = new KeyedMutex();
    const log: string[] = [];
    const job = (name: string, key: string) => mutex.run(key, async () => {
      log.push(`${name}:start`);
      await tick(); await tick();
      log.push(`${name}:end`);
    });
    await Promise.all([job('a', 'x'), job('b', 'x'), job('c', 'y')]);
    expect(log.indexOf('a:end')).toBeLessThan(log.indexOf('b:start'));
    expect(log.indexOf('c:start')).toBeLessThan(log.indexOf('a:end'));
  });

  it('hands a key to its waiters in the order they came, and forgets it once free', async () => {
    const mutex = new KeyedMutex();
    const order: number[] = [];
    await Promise.all([1, 2, 3, 4].map((n) => mutex.run(n % 2 ? 'k' : ['k'], async () => { await tick(); order.push(n); })));
    expect(order).toEqual([1, 2, 3, 4]);
    expect((mutex as unknown as { held: Map<string, unknown> }).held.size).toBe(0);
  });
});
