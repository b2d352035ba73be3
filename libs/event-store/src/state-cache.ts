import { LRUCache } from 'lru-cache';

/**
 * A per-process cache of folded aggregate states bounded in bytes (issue 13), not in streams: a
 * programme of long-history members must not exhaust a pod's memory after a rolling restart warms
 * it. Sizes are estimates (the evolver's `sizeOf`, else a flat figure); least recently used states
 * go first. Hits and misses are counted for /metrics (`stateCacheStats`).
 */
export interface StateCacheStats { name: string; hits: number; misses: number; evictions: number; bytes: () => number; entries: () => number; maxBytes: number }

// weak: a cache dropped by its owner (tests make many) is not kept alive by the metrics
const registry = new Set<WeakRef<StateCacheStats>>();

/** Every live state cache of this process (several instances of one name are summed by the metrics). */
export const stateCacheStats = (): StateCacheStats[] => {
  const out: StateCacheStats[] = [];
  for (const ref of registry) {
    const s = ref.deref();
    if (s) out.push(s);
    else registry.delete(ref);
  }
  return out;
};

/** 1 MiB. */
export const MIB = 1024 * 1024;

/** A byte budget from the environment (`LOYALTY_STATE_CACHE_BYTES`, …): a whole number of bytes, or `fallback`. */
export const cacheBytesFromEnv = (variable: string, fallback: number): number => {
  const raw = process.env[variable];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${variable} must be a whole number of bytes, got ${raw}`);
  return n;
};

/** What a state is assumed to weigh when its evolver gives no estimate. */
export const DEFAULT_STATE_BYTES = 1_024;

export class StateCache<V extends {}> {
  private readonly lru: LRUCache<string, V>;
  readonly stats: StateCacheStats;

  /** `maxBytes` 0 disables the cache (every load is cold). */
  constructor(name: string, maxBytes: number, sizeOf: (v: V) => number) {
    const max = Math.max(1, maxBytes);
    this.lru = new LRUCache<string, V>({
      maxSize: max,
      // a state larger than the whole budget still stays (alone): refusing it would fold it again on every
      // event or command, which is far worse than the overshoot of the one state being worked on
      maxEntrySize: max,
      sizeCalculation: (v) => Math.min(max, Math.max(1, Math.ceil(sizeOf(v)))),
      dispose: (_v, _k, reason) => { if (reason === 'evict') this.stats.evictions++; },
    });
    const lru = new WeakRef(this.lru);
    this.stats = { name, hits: 0, misses: 0, evictions: 0, bytes: () => lru.deref()?.calculatedSize ?? 0, entries: () => lru.deref()?.size ?? 0, maxBytes };
    this.disabled = maxBytes === 0;
    registry.add(new WeakRef(this.stats));
  }

  private readonly disabled: boolean;

  /** A lookup that counts as a hit or a miss (and refreshes recency). */
  get(key: string): V | undefined {
    const v = this.disabled ? undefined : this.lru.get(key);
    if (v === undefined) this.stats.misses++;
    else this.stats.hits++;
    return v;
  }

  /** A look without counting or refreshing. */
  peek(key: string): V | undefined { return this.disabled ? undefined : this.lru.peek(key); }

  /** Stores (or re-stores, after the state changed: its size is computed again). */
  set(key: string, v: V): void {
    if (this.disabled) return;
    // lru-cache does not weigh a value again when the same object is stored again (states are mutated in place)
    if (this.lru.peek(key) === v) this.lru.delete(key);
    this.lru.set(key, v);
  }

  delete(key: string): void { this.lru.delete(key); }

  clear(): void { this.lru.clear(); }

  get size(): number { return this.lru.size; }
}

/**
 * The budget of a process's member fold (StreamFold: the ledger's and the webhook service's read
 * models share one per process): `LOYALTY_FOLD_CACHE_BYTES`, default 64 MiB (what their two folds had together).
 */
export const foldCacheBytes = (): number => cacheBytesFromEnv('LOYALTY_FOLD_CACHE_BYTES', 64 * MIB);
