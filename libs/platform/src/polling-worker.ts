/** Work a polling worker runs for what it claimed: `size` slots are busy until `run` settles. */
export interface PolledWork { size: number; run: () => Promise<void> }

export interface PollingWorkerOptions<T> {
  /** slots: claimed items in flight at once in this process */
  concurrency: number;
  /** how often the queue is looked at when nothing wakes the worker (other processes, items coming due) */
  pollIntervalMs: number;
  /** lapsed leases are recovered at most this often (default: every poll interval) */
  recoverEveryMs?: number;
  /** while work is in flight, claim only once this many slots are free (default 1) */
  claimAtLeast?: number;
  /** brings back items whose worker's lease lapsed (another process crashed); answers how many */
  recover?: () => Promise<number>;
  /** claims up to `free` items (FOR UPDATE SKIP LOCKED: any number of processes share a queue) */
  claim: (free: number) => Promise<T[]>;
  /** what to run for the items claimed */
  dispatch: (claimed: T[]) => PolledWork[];
  /** a warning (claiming failed, leases recovered, a run failed) */
  warn: (message: string) => void;
}

/**
 * The outer loop of a queue worker, the one of the house (webhook deliveries; the ingest queue):
 * woken on insert (`wakeSoon`), on finished work and on a poll tick, it recovers lapsed leases,
 * claims as many items as there are free slots, runs them, and on `stop` waits for what is in
 * flight. Nothing in it knows what the items are for.
 */
export class PollingWorker<T> {
  private readonly inFlight = new Set<Promise<void>>();
  private busySlots = 0;
  private started = false;
  private pumping = false;
  private again = false;
  private lastRecovery = 0;
  private pollTimer: NodeJS.Timeout | null = null;
  private soonTimer: NodeJS.Timeout | null = null;

  constructor(private readonly options: PollingWorkerOptions<T>) {}

  get running(): boolean { return this.started; }
  /** slots busy now */
  get busy(): number { return this.busySlots; }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.pollTimer = setInterval(() => this.wake(), this.options.pollIntervalMs);
    this.pollTimer.unref();
    this.wake();
  }

  /** Stops claiming and waits (up to `timeoutMs`) for the work in flight; unfinished items come back by their lease. */
  async stop(timeoutMs = 10_000): Promise<void> {
    if (!this.started) return;
    this.started = false;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.soonTimer) clearTimeout(this.soonTimer);
    this.pollTimer = this.soonTimer = null;
    let t: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.inFlight]),
      new Promise<void>((r) => { t = setTimeout(r, timeoutMs); t.unref(); }),
    ]);
    if (t) clearTimeout(t);
  }

  /** Items were just queued (by a transaction about to commit): look shortly. */
  wakeSoon(): void {
    if (!this.started || this.soonTimer) return;
    this.soonTimer = setTimeout(() => { this.soonTimer = null; this.wake(); }, 20);
    this.soonTimer.unref();
  }

  wake(): void {
    if (!this.started) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    void this.pump();
  }

  private async pump(): Promise<void> {
    const o = this.options;
    this.pumping = true;
    try {
      do {
        this.again = false;
        if (o.recover && Date.now() - this.lastRecovery >= (o.recoverEveryMs ?? o.pollIntervalMs)) {
          this.lastRecovery = Date.now();
          await o.recover();
        }
        const free = o.concurrency - this.busySlots;
        if (free <= 0 || !this.started || (this.busySlots > 0 && free < (o.claimAtLeast ?? 1))) break;
        const claimed = await o.claim(free);
        if (claimed.length > 0) for (const work of o.dispatch(claimed)) this.track(work);
        // every slot filled: more may be waiting once one frees
        if (claimed.length === free) this.again = true;
      } while (this.again && this.started && this.busySlots < o.concurrency);
    } catch (e) {
      // the database may be briefly unreachable: the next poll tries again
      if (this.started) o.warn(`claiming failed: ${(e as Error).message}`);
    } finally {
      this.pumping = false;
    }
  }

  private track(work: PolledWork): void {
    this.busySlots += work.size;
    const p = work.run().catch((e: unknown) => this.options.warn(`processing claimed work failed: ${(e as Error).message}`));
    this.inFlight.add(p);
    void p.finally(() => {
      this.inFlight.delete(p);
      this.busySlots -= work.size;
      // finished work frees slots (and may unblock what waited on it)
      this.wake();
    });
  }
}
