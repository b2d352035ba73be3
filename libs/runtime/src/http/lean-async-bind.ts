import { AsyncResource } from 'node:async_hooks';

/**
 * Node 20's `AsyncResource.prototype.bind` gives every bound function a deprecated `asyncResource`
 * accessor (DEP0172), built with two `util.deprecate` wrappers per call. Fastify binds once per
 * request body and Nest twice per intercepted call (`defer(AsyncResource.bind(...))` in its
 * interceptors consumer), so an enrolment paid for six of them: 2.7 % of its CPU (`deprecate`
 * 2.0 %, `bind` 0.7 %, in `node --cpu-prof`). Nothing here or in node_modules reads the accessor.
 *
 * This is the same bind without the accessor: the function runs in the resource's async scope,
 * with the caller's `this` (or `thisArg`) and arguments, and keeps `fn.length`. It replaces only a
 * bind that defines the deprecated accessor (Node 20 and 22), once, on import; a Node without it
 * keeps its own (and `lean-async-bind.spec.ts` says which applied).
 */
type Bind = (this: AsyncResource, fn: (...args: unknown[]) => unknown, thisArg?: unknown) => (...args: unknown[]) => unknown;

const original = AsyncResource.prototype.bind as unknown as Bind;

/** Marks the lean bind: a second copy of this module (a test runner's fresh registry) finds it in place. */
const LEAN = Symbol.for('loyalty.leanAsyncBind');

export const leanAsyncBindApplied: boolean = (() => {
  if ((original as unknown as Record<symbol, boolean>)[LEAN]) return true;
  if (!/DEP0172/.test(Function.prototype.toString.call(original))) return false;
  const lean: Bind = function bind(this: AsyncResource, fn, thisArg) {
    if (typeof fn !== 'function') return original.call(this, fn, thisArg); // Node's own validation and error
    const resource = this;
    const bound = thisArg === undefined
      ? function (this: unknown, ...args: unknown[]) { return resource.runInAsyncScope(fn, this, ...args); }
      : (...args: unknown[]) => resource.runInAsyncScope(fn, thisArg, ...args);
    Object.defineProperty(bound, 'length', { configurable: true, enumerable: false, value: fn.length, writable: false });
    return bound;
  };
  (lean as unknown as Record<symbol, boolean>)[LEAN] = true;
  (AsyncResource.prototype as unknown as { bind: Bind }).bind = lean;
  return true;
})();
