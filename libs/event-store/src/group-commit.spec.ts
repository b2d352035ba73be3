import { GroupCommitter } from './group-commit';

/** How many flushes a GroupCommitter runs at once, and that every item still gets its own outcome. */
describe('GroupCommitter concurrency', () => {
  const deferred = () => {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => { resolve = r; });
    return { promise, resolve };
  };
  const tick = () => new Promise<void>((r) => setImmediate(r));

  it.each([[1], [2]])('runs at most %i flush(es) at a time; items that queue meanwhile go together in the next one', async (concurrency) => {
    const gates: { items: number[]; gate: ReturnType<typeof deferred> }[] = [];
    let running = 0;
    let most = 0;
    const committer = new GroupCommitter<number, number>(async (items) => {
      running += 1;
      most = Math.max(most, running);
      const gate = deferred();
      gates.push({ items, gate });
      await gate.promise;
      running -= 1;
      return items.map((i) => (i === 13 ? new Error('unlucky') : i * 10));
    }, 500, concurrency);
    const first = committer.submit(1);
    await tick();
    await tick();
    expect(gates.map((g) => g.items)).toEqual([[1]]);
    const more = [2, 3, 13].map((i) => committer.submit(i).catch((e: Error) => e.message));
    await tick();
    await tick();
    // a second flush has started with the queued items only when two may run
    expect(gates.map((g) => g.items)).toEqual(concurrency === 2 ? [[1], [2, 3, 13]] : [[1]]);
    const last = committer.submit(4);
    await tick();
    await tick();
    expect(gates).toHaveLength(concurrency);
    for (let i = 0; i < 4 && gates.some((g) => g.items.includes(4)) === false; i++) {
      gates.forEach((g) => g.gate.resolve());
      await tick();
      await tick();
    }
    gates.forEach((g) => g.gate.resolve());
    await expect(first).resolves.toBe(10);
    await expect(Promise.all(more)).resolves.toEqual([20, 30, 'unlucky']);
    await expect(last).resolves.toBe(40);
    expect(most).toBe(concurrency);
    expect(gates.flatMap((g) => g.items).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 13]);
  });
});
