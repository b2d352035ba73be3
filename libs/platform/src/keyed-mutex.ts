/**
 * Serialises work per key inside one process (the one keyed lock of the house: a stream's
 * commands, an order's events, an advocate's referrals, a member's identity values).
 *
 * `run(key, fn)` holds one key; `run([k1, k2, …], fn)` holds every key named, taken in sorted
 * order so calls naming several keys in different orders cannot deadlock. Across processes
 * something else must decide (an expected revision, a unique constraint).
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(keys: string | readonly string[], fn: () => Promise<T>): Promise<T> {
    if (typeof keys === 'string') return this.holding(keys, fn);
    const releases: (() => void)[] = [];
    try {
      for (const k of [...new Set(keys)].sort()) releases.push(await this.acquire(k));
      return await fn();
    } finally {
      for (const release of releases.reverse()) release();
    }
  }

  private async holding<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const release = await this.acquire(key);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  private async acquire(key: string): Promise<() => void> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.tails.set(key, tail);
    await prev;
    return () => {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }
}
