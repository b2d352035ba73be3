/**
 * Retries an assertion until it passes or the time is up, then rethrows its last failure.
 * For asynchronous effects (subscriptions, projections) whose timing a test cannot control.
 */
export const eventually = async <T>(
  assertion: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 20 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await assertion();
    } catch (e) {
      if (Date.now() >= deadline) throw e;
      await sleep(intervalMs);
    }
  }
};

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A promise with its resolve exposed: a gate a test opens when it decides. */
export interface Gate<T = void> { promise: Promise<T>; open(value: T): void; opened: boolean }
export const gate = <T = void>(): Gate<T> => {
  let open!: (v: T) => void;
  const g: Gate<T> = {
    promise: new Promise<T>((r) => (open = r)),
    open: (v: T) => { g.opened = true; open(v); },
    opened: false,
  };
  return g;
};
