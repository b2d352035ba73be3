import { IdentityLocks, identityKeys } from './identity-locks';

const tick = () => new Promise((r) => setImmediate(r));

describe('IdentityLocks', () => {
  it('runs calls sharing a key one after the other', async () => {
    const locks = new IdentityLocks();
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
    const locks = new IdentityLocks();
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
    const locks = new IdentityLocks();
    let done = 0;
    await Promise.all(Array.from({ length: 20 }, (_, i) => locks.run(i % 2 ? ['p', 'q', 'r'] : ['r', 'q', 'p'], async () => { await tick(); done++; })));
    expect(done).toBe(20);
  });

  it('releases the keys when the work fails', async () => {
    const locks = new IdentityLocks();
    await expect(locks.run(['k'], async () => { throw new Error('boom'); })).rejects.toThrow('boom');
    await expect(locks.run(['k'], async () => 'ok')).resolves.toBe('ok');
  });

  it('keys identifiers per tenant and kind', () => {
    expect(identityKeys('P1', { email: 'a@b.c', phone: '+1', external_ref: 'r' })).toHaveLength(3);
    expect(identityKeys('P1', { email: 'x' })).not.toEqual(identityKeys('P1_test', { email: 'x' }));
    expect(identityKeys('P1', { email: 'x' })).not.toEqual(identityKeys('P1', { external_ref: 'x' }));
    expect(identityKeys('P1', {})).toEqual([]);
  });
});
