import { AsyncLocalStorage, AsyncResource, executionAsyncId } from 'node:async_hooks';
import { leanAsyncBindApplied } from './lean-async-bind';

describe('the lean AsyncResource.prototype.bind', () => {
  it('replaces Node 20/22 bind (the one with the deprecated asyncResource accessor)', () => {
    const major = Number(process.versions.node.split('.')[0]);
    if (major === 20 || major === 22) expect(leanAsyncBindApplied).toBe(true);
    const bound = AsyncResource.bind(() => 1);
    // the deprecated accessor (DEP0172) is exactly what it leaves out
    expect(leanAsyncBindApplied ? Object.getOwnPropertyDescriptor(bound, 'asyncResource') : undefined).toBeUndefined();
  });

  it('runs the function in the async context of where it was bound, with its arguments and result', async () => {
    const als = new AsyncLocalStorage<string>();
    const bound = als.run('request-1', () => AsyncResource.bind((a: number, b: number) => `${als.getStore()}:${a + b}`));
    const fromElsewhere = await als.run('request-2', async () => {
      await Promise.resolve();
      return bound(2, 3);
    });
    expect(fromElsewhere).toBe('request-1:5');
    expect(bound.length).toBe(2);
  });

  it('passes the caller\'s this, or the thisArg it was given', () => {
    const resource = new AsyncResource('test');
    const own = { n: 7, get(this: { n: number }) { return this.n; } };
    const boundToCaller = resource.bind(own.get);
    expect(boundToCaller.call({ n: 9 })).toBe(9);
    // Node takes a thisArg too (its type definitions stopped declaring it)
    const boundToOwn = (resource.bind as (fn: () => number, thisArg: unknown) => () => number)(own.get, own);
    expect(boundToOwn.call({ n: 9 })).toBe(7);
    // a new async id: the bound function runs inside the resource's scope
    const ids = new AsyncResource('scope').bind(() => executionAsyncId());
    expect(ids()).not.toBe(executionAsyncId());
  });

  it('refuses what is not a function as Node does', () => {
    expect(() => new AsyncResource('x').bind(42 as never)).toThrow(/"fn" argument must be of type function/);
  });
});
