import { PollingWorker } from './polling-worker';

const until = async (cond: () => boolean, ms = 2_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('PollingWorker', () => {
  it('claims into free slots only, runs every item once, and drains the queue as work finishes', async () => {
    const queue = Array.from({ length: 25 }, (_, i) => i);
    const done: number[] = [];
    let running = 0;
    let most = 0;
    const worker = new PollingWorker<number>({
      concurrency: 4, pollIntervalMs: 1_000, warn: () => undefined,
      claim: async (free) => queue.splice(0, free),
      dispatch: (claimed) => claimed.map((n) => ({ size: 1, run: async () => {
        running++; most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 2));
        running--; done.push(n);
      } })),
    });
    worker.start();
    await until(() => done.length === 25);
    await worker.stop();
    expect([...done].sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(most).toBeLessThanOrEqual(4);
    expect(worker.busy).toBe(0);
  });

  it('recovers lapsed leases before claiming, at most once per interval, and survives a failing claim', async () => {
    let recovered = 0;
    let claims = 0;
    const warnings: string[] = [];
    const worker = new PollingWorker<number>({
      concurrency: 2, pollIntervalMs: 10_000, warn: (m) => warnings.push(m),
      recover: async () => { recovered++; return 0; },
      claim: async () => { claims++; if (claims === 1) throw new Error('db down'); return []; },
      dispatch: () => [],
    });
    worker.start();
    await until(() => claims === 1 && warnings.length === 1);
    worker.wake();
    await until(() => claims === 2);
    await worker.stop();
    expect(recovered).toBe(1);
    expect(warnings[0]).toContain('db down');
  });

  it('stop waits for the work in flight and claims nothing after', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let finished = false;
    let claims = 0;
    const worker = new PollingWorker<number>({
      concurrency: 1, pollIntervalMs: 10_000, warn: () => undefined,
      claim: async () => (claims++ === 0 ? [1] : []),
      dispatch: (claimed) => claimed.map(() => ({ size: 1, run: async () => { await gate; finished = true; } })),
    });
    worker.start();
    await until(() => worker.busy === 1);
    const stopping = worker.stop();
    release();
    await stopping;
    expect(finished).toBe(true);
    const before = claims;
    worker.wake();
    await new Promise((r) => setTimeout(r, 20));
    expect(claims).toBe(before);
  });
});
