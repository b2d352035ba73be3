/**
 * Group commit: callers submit one item each and wait for its result; the items that arrive while
 * a flush is running are written together by the next flush, in one transaction. At most
 * `concurrency` flushes run at a time (one unless the owner allows more), so under load every
 * transaction carries everything that queued during the last commit (no timer, no added latency
 * when idle: a lone item is flushed at once). With two, a batch no longer waits for the whole round
 * trip of the one before it (a synchronous command passes through several such stages); only
 * owners whose flushes may run side by side allow it (the database orders them: row locks,
 * unique indexes, expected revisions).
 *
 * `flush` returns one outcome per item, in order: a value, or an Error for that item alone.
 * When the flush itself throws, every item of the batch gets that error.
 */
export type GroupOutcome<R> = R | Error;

interface Pending<T, R> { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }

export class GroupCommitter<T, R> {
  private queue: Pending<T, R>[] = [];
  private flushing = 0;

  constructor(
    private readonly flush: (items: T[]) => Promise<GroupOutcome<R>[]>,
    private readonly maxBatch = 500,
    private readonly concurrency = 1,
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      // a second flusher starts only for items that queued behind a running one
      if (this.flushing === 0 || (this.flushing < this.concurrency && this.queue.length === 1)) void this.run();
    });
  }

  /** Items waiting for the next flush (not counting the ones running). */
  get waiting(): number { return this.queue.length; }

  private async run(): Promise<void> {
    this.flushing += 1;
    try {
      // let the callers of this tick queue up before the first flush
      await new Promise<void>((r) => setImmediate(r));
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        let outcomes: GroupOutcome<R>[];
        try {
          outcomes = await this.flush(batch.map((p) => p.item));
        } catch (e) {
          for (const p of batch) p.reject(e);
          continue;
        }
        batch.forEach((p, i) => {
          const o = outcomes[i];
          if (o instanceof Error) p.reject(o);
          else p.resolve(o as R);
        });
      }
    } finally {
      this.flushing -= 1;
    }
  }
}
