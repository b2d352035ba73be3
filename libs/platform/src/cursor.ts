/** Opaque cursors: base64url of the last row's sort key (decisions §1). */
import { problem } from './problem';

const invalid = () => problem('validation', 'cursor is not valid', { errors: [{ path: '/cursor', message: 'cursor is not valid' }] });

/**
 * A cursor's key: every list in the service pages on one position, a sequence number (a decimal
 * string, as PostgreSQL returns bigint) or an index (a number). Anything else is a forged or
 * corrupted cursor and a 422, never a value handed on to SQL (`[1e308]` or a 30-digit string
 * would fail there as a 500). Positions stay within 2^53 − 1 so they convert to numbers exactly.
 */
const isPosition = (v: unknown): boolean =>
  (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0)
  || (typeof v === 'string' && /^\d{1,16}$/.test(v) && Number(v) <= Number.MAX_SAFE_INTEGER);

export const encodeCursor = (key: unknown[]): string => Buffer.from(JSON.stringify(key)).toString('base64url');
/** The key of a cursor when `valid` accepts it; anything else (forged, corrupted, too long) is a 422 at /cursor. */
export const decodeCursorAs = <T extends unknown[]>(cursor: string, valid: (v: unknown[]) => boolean): T => {
  if (cursor.length > 256 || !/^[A-Za-z0-9_-]+={0,2}$/.test(cursor)) throw invalid();
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!Array.isArray(v) || !valid(v)) throw invalid();
  return v as T;
};

export const decodeCursor = (cursor: string | undefined | null): unknown[] | null => {
  if (!cursor) return null;
  return decodeCursorAs(cursor, (v) => v.length === 1 && isPosition(v[0]));
};
export interface Page<T> { data: T[]; pagination: { cursor: string | null } }
