import { FieldError, pointer } from '@loyalty/platform';

/** Deepest nesting a request body may have: real bodies stay under 6 levels (event → lines → tags). */
export const MAX_BODY_DEPTH = 32;

/** Keys that would reach an object's prototype in careless code: always unknown fields. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** An unpaired UTF-16 surrogate: not Unicode, so PostgreSQL refuses it (and it is not valid UTF-8). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const badText = (s: string): string | null =>
  s.includes('\u0000') ? 'must not contain NUL characters' : LONE_SURROGATE.test(s) ? 'must not contain unpaired UTF-16 surrogates' : null;

/**
 * Checks a parsed request body before anything else reads it, without recursion (a body of a few
 * thousand nested arrays once overflowed the stack here and killed the process): nesting deeper
 * than MAX_BODY_DEPTH, NUL characters and unpaired surrogates (PostgreSQL text and jsonb refuse
 * both, so they would fail deep inside as a 500), and prototype keys (`__proto__`, `constructor`).
 * Returns the first offence as a field error with the JSON pointer of the value or key, or null.
 */
export const inspectBody = (body: unknown): FieldError | null => (bodyIsClean(body) ? null : findOffence(body));

/**
 * The same checks without paths (issue 7): a walk over two parallel stacks, allocating nothing per
 * value. Only a body that fails it is walked again, with paths, to say where.
 */
const bodyIsClean = (body: unknown): boolean => {
  const values: unknown[] = [body];
  const depths: number[] = [0];
  while (values.length > 0) {
    const value = values.pop();
    const depth = depths.pop()!;
    if (typeof value === 'string') {
      if (badText(value)) return false;
      continue;
    }
    if (!value || typeof value !== 'object') continue;
    if (depth >= MAX_BODY_DEPTH) return false;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) { values.push(value[i]); depths.push(depth + 1); }
    } else {
      for (const k of Object.keys(value)) {
        if (FORBIDDEN_KEYS.has(k) || badText(k)) return false;
        values.push((value as Record<string, unknown>)[k]);
        depths.push(depth + 1);
      }
    }
  }
  return true;
};

/** The first offence in document order, with its JSON pointer. */
const findOffence = (body: unknown): FieldError | null => {
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value: body, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string') {
      const bad = badText(value);
      if (bad) return { path: pointer(...path), message: bad };
      continue;
    }
    if (!value || typeof value !== 'object') continue;
    if (path.length >= MAX_BODY_DEPTH) return { path: pointer(...path), message: `nesting deeper than ${MAX_BODY_DEPTH} levels` };
    const children: { value: unknown; path: (string | number)[] }[] = [];
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) children.push({ value: value[i], path: [...path, i] });
    } else {
      for (const k of Object.keys(value)) {
        const bad = badText(k);
        if (bad) return { path: pointer(...path, k), message: bad };
        if (FORBIDDEN_KEYS.has(k)) return { path: pointer(...path, k), message: `unknown field ${k}` };
        children.push({ value: (value as Record<string, unknown>)[k], path: [...path, k] });
      }
    }
    // pushed in reverse so the first offence in document order is the one reported
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return null;
};

/** Where a raw URL carries an encoded NUL: in the path, in a query parameter (its name), or nowhere. */
export const nulInUrl = (url: string): { where: 'path' } | { where: 'query'; param: string } | null => {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (/%00/i.test(path)) return { where: 'path' };
  if (q < 0) return null;
  for (const part of url.slice(q + 1).split('&')) {
    if (/%00/i.test(part)) {
      const name = part.split('=')[0];
      let decoded = name;
      try { decoded = decodeURIComponent(name.replace(/\+/g, ' ')); } catch { /* keep raw */ }
      return { where: 'query', param: decoded.replace(/\u0000/g, '') };
    }
  }
  return null;
};
