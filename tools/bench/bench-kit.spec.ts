import { cpuPerOp, mainThreadSched, schedShares } from './bench-kit';

describe('bench kit: the service main thread over a window', () => {
  it('shares of the window on a core and waiting for one, from two schedstat readings', () => {
    expect(schedShares({ runNs: 1_000_000_000, waitNs: 500_000_000 }, { runNs: 3_480_000_000, waitNs: 1_980_000_000 }, 4_000_000_000))
      .toEqual({ running: 62, waiting: 37 });
  });

  it("reads this process's own main thread (Linux), which has run and can only have run more since", () => {
    const a = mainThreadSched(process.pid);
    if (process.platform !== 'linux') return expect(a).toBeNull();
    expect(a).not.toBeNull();
    // the kernel adds a running thread's time at scheduler ticks and switches, not continuously: a
    // short loop can end between two ticks (a CI run saw the same figure twice), so the thread runs
    // until the figure moves, for at most a second; at least once (a figure read twice may already
    // have moved, and the loop then never ran: a CI run saw x = 0)
    let x = 0;
    let b: NonNullable<ReturnType<typeof mainThreadSched>>;
    const until = Date.now() + 1_000;
    do {
      for (let i = 0; i < 1e6; i++) x += i;
      b = mainThreadSched(process.pid)!;
    } while (b.runNs === a!.runNs && Date.now() < until);
    expect(x).toBeGreaterThan(0);
    expect(b.runNs).toBeGreaterThan(a!.runNs);
    expect(b.waitNs).toBeGreaterThanOrEqual(a!.waitNs);
    expect(mainThreadSched(2 ** 30)).toBeNull(); // no such process
  });

  it('prints the shares after the CPU per operation, and nothing of them when unknown', () => {
    const spent = { nodeMs: 2_000, pgMs: 1_000, nodeSystemMs: 200, clientMs: 100 };
    expect(cpuPerOp({ ...spent, mainThread: { running: 62, waiting: 37 } }, 1_000))
      .toBe('CPU per op: service 2.000 ms (10 % in the kernel) + PostgreSQL 1.000 ms; load generator 0.100 ms; service main thread on a core 62 %, waiting for one 37 %');
    expect(cpuPerOp({ ...spent, mainThread: null }, 1_000)).toBe('CPU per op: service 2.000 ms (10 % in the kernel) + PostgreSQL 1.000 ms; load generator 0.100 ms');
  });
});
