/** Opaque cursors: base64url of the last row's sort key (decisions §1). */
import { problem } from './problem';

export const encodeCursor = (key: unknown[]): string => Buffer.from(JSON.stringify(key)).toString('base64url');
export const decodeCursor = (cursor: string | undefined | null): unknown[] | null => {
  if (!cursor) return null;
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (!Array.isArray(v)) throw new Error('not an array');
    return v;
  } catch {
    throw problem('validation', 'cursor is not valid', { errors: [{ path: '/cursor', message: 'cursor is not valid' }] });
  }
};
export interface Page<T> { data: T[]; pagination: { cursor: string | null } }
