/**
 * Exhaustiveness guard for `switch` statements over union types: the compiler rejects the call
 * when a member of the union is not handled, and at run time an unexpected value (e.g. from
 * unvalidated JSON) fails loudly instead of being silently ignored.
 */
export function assertNever(value: never, what = 'value'): never {
  throw new TypeError(`Unexpected ${what}: ${JSON.stringify(value)}`);
}
