import { asyncRequestContext, currentRequestId, resetRequestContextMode, withRequestId } from './request-context';

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('request context', () => {
  const saved = { mode: process.env.LOYALTY_REQUEST_CONTEXT, level: process.env.LOG_LEVEL };
  const use = (mode: string | undefined, level: string | undefined) => {
    if (mode === undefined) delete process.env.LOYALTY_REQUEST_CONTEXT;
    else process.env.LOYALTY_REQUEST_CONTEXT = mode;
    if (level === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = level;
    resetRequestContextMode();
  };
  afterEach(() => use(saved.mode, saved.level));

  it('picks the async mode only when asked for, or for debug and trace logging', () => {
    use(undefined, 'info');
    expect(asyncRequestContext()).toBe(false);
    use('async', 'info');
    expect(asyncRequestContext()).toBe(true);
    use(undefined, 'debug');
    expect(asyncRequestContext()).toBe(true);
    use('edges', 'TRACE');
    expect(asyncRequestContext()).toBe(true);
  });

  describe('edges mode (the default)', () => {
    beforeEach(() => use(undefined, 'info'));

    it('holds the id while the function runs synchronously, nested scopes included, and restores the outer one', () => {
      expect(currentRequestId()).toBeUndefined();
      const seen = withRequestId('outer', () => {
        const inner = withRequestId('inner', () => currentRequestId());
        const none = withRequestId(null, () => currentRequestId()); // no id: the outer scope stays
        return [currentRequestId(), inner, none];
      });
      expect(seen).toEqual(['outer', 'inner', 'outer']);
      expect(currentRequestId()).toBeUndefined();
    });

    it('ends at the first await and after a throw: no later work is credited to the request', async () => {
      const after = withRequestId('req-1', async () => {
        const before = currentRequestId();
        await tick();
        return [before, currentRequestId()];
      });
      expect(currentRequestId()).toBeUndefined();
      expect(await after).toEqual(['req-1', undefined]);
      expect(() => withRequestId('req-2', () => { throw new Error('boom'); })).toThrow('boom');
      expect(currentRequestId()).toBeUndefined();
    });
  });

  describe('async mode', () => {
    beforeEach(() => use('async', 'info'));

    it('follows awaits and callbacks, and two requests in flight keep their own ids', async () => {
      const run = (id: string) => withRequestId(id, async () => {
        await tick();
        const afterAwait = currentRequestId();
        const inCallback = await new Promise((r) => setTimeout(() => r(currentRequestId()), 1));
        return [afterAwait, inCallback];
      });
      expect(await Promise.all([run('a'), run('b')])).toEqual([['a', 'a'], ['b', 'b']]);
      expect(currentRequestId()).toBeUndefined();
    });
  });
});
