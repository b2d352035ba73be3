import { pointer } from '@loyalty/platform';

/**
 * NUL characters cannot be stored (PostgreSQL text and jsonb refuse them) and never belong in an
 * identifier or a reason, so they are refused at the edge instead of failing deep inside as a 500.
 * Returns the JSON pointer of the first string (or key) that holds one, or null.
 */
export const findNul = (value: unknown, path: (string | number)[] = []): string | null => {
  if (typeof value === 'string') return value.includes('\u0000') ? pointer(...path) : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = findNul(value[i], [...path, i]);
      if (hit !== null) return hit;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k.includes('\u0000')) return pointer(...path, k);
      const hit = findNul(v, [...path, k]);
      if (hit !== null) return hit;
    }
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
