/**
 * Serialises work per key inside one process (the one keyed lock of the house: a stream's
 * commands, an order's events, an advocate's referrals, a member's identity values).
 *
 * `run(key, fn)` holds one key; `run([k1, k2, …], fn)` holds every key named, taken in sorted
 * order so calls naming several keys in different orders cannot deadlock. Across processes
 * something else must decide (an expected revision, a unique constraint).
 *
 * A held key has a queue of waiters, first come first served; a free key is taken at once, with
 * no promise made (issue 7: the chain of promises each call built was 7 % of what the ingest
 * service allocated). Releasing hands the key to the next waiter, which keeps it held meanwhile.
 */
export class KeyedMutex {
  /** held keys → their waiters, oldest first */
  private readonly held = new Map<string, (() => void)[]>();

  async run<T>(keys: string | readonly string[], fn: () => Promise<T>): Promise<T> {
    if (typeof keys === 'string') return this.holding(keys, fn);
    if (keys.length === 1) return this.holding(keys[0], fn);
    const sorted = [...new Set(keys)].sort();
    let taken = 0;
    try {
      for (const k of sorted) {
        const wait = this.acquire(k);
        if (wait) await wait;
        taken++;
      }
      return await fn();
    } finally {
      for (let i = taken - 1; i >= 0; i--) this.release(sorted[i]);
    }
  }

  private async holding<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const wait = this.acquire(key);
    if (wait) await wait;
    try {
      return await fn();
    } finally {
      this.release(key);
    }
  }

  /** Takes the key now (undefined) or answers the promise of its turn. */
  private acquire(key: string): Promise<void> | undefined {
    const waiters = this.held.get(key);
    if (!waiters) {
      this.held.set(key, []);
      return undefined;
    }
    return new Promise<void>((resolve) => waiters.push(resolve));
  }

  private release(key: string): void {
    const waiters = this.held.get(key);
    const next = waiters?.shift();
    if (next) next();
    else this.held.delete(key);
  }
}
