import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createPool } from './db';
import { NotifiedCache } from './notified-cache';

/**
 * Two caches on two pools stand for two processes. No trigger sends the plain notification here,
 * so whatever the second cache forgets, it forgets through `propagate`'s handshake alone.
 */
describe('NotifiedCache.propagate', () => {
  const url = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  const poolA = createPool(url, 2);
  const poolB = createPool(url, 2);
  afterAll(async () => { await Promise.all([poolA.end(), poolB.end()]); });

  /** A cache whose listener is up, holding `value` for (group, 'k'). */
  const warm = async (cache: NotifiedCache<string>, group: string, value: string) => {
    cache.drop(group);
    for (let i = 0; i < 100; i++) {
      await cache.get(group, 'k', async () => value);
      if ((await cache.get(group, 'k', async () => 'miss')) === value) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('the cache never came up');
  };

  it('returns only once the other process has dropped the group, so its next read is fresh', async () => {
    const channel = `nc_${randomBytes(4).toString('hex')}`;
    const a = new NotifiedCache<string>(poolA, channel);
    const b = new NotifiedCache<string>(poolB, channel);
    try {
      await warm(a, 'g', 'old');
      for (let round = 0; round < 5; round++) {
        await warm(b, 'g', `old-${round}`);
        await warm(b, 'other', 'kept');
        await a.propagate('g');
        // no wait of any kind between the writer's return and the other's read
        expect(await b.get('g', 'k', async () => `new-${round}`)).toBe(`new-${round}`);
        expect(await b.get('other', 'k', async () => 'miss')).toBe('kept');
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('does not wait past its bound for a listener that never answers', async () => {
    const channel = `nc_${randomBytes(4).toString('hex')}`;
    const a = new NotifiedCache<string>(poolA, channel);
    // a process that listens (pg_stat_activity shows it) but is stuck and never acknowledges
    const stuck = new Client({ connectionString: url });
    await stuck.connect();
    try {
      await warm(a, 'g', 'v');
      await stuck.query(`listen ${channel}; listen ${channel}_sync; listen ${channel}_ack`);
      const started = Date.now();
      await a.propagate('g', 400);
      const waited = Date.now() - started;
      expect(waited).toBeGreaterThanOrEqual(350);
      expect(waited).toBeLessThan(5_000);
      expect(await a.get('g', 'k', async () => 'fresh')).toBe('fresh');
    } finally {
      await stuck.end();
      await a.close();
    }
  });
});
