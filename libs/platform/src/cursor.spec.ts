import { decodeCursor, encodeCursor } from './cursor';
import { ProblemError } from './problem';

const forged = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const refusal = (cursor: string): unknown => {
  try {
    decodeCursor(cursor);
  } catch (e) {
    return e instanceof ProblemError ? { status: e.status, errors: e.problem.errors } : e;
  }
  return 'accepted';
};

describe('cursors', () => {
  it('round-trips the positions the lists hand out', () => {
    expect(decodeCursor(encodeCursor(['42']))).toEqual(['42']);
    expect(decodeCursor(encodeCursor([0]))).toEqual([0]);
    expect(decodeCursor(encodeCursor([String(Number.MAX_SAFE_INTEGER)]))).toEqual([String(Number.MAX_SAFE_INTEGER)]);
    expect(decodeCursor(undefined)).toBeNull();
    expect(decodeCursor('')).toBeNull();
  });

  it.each([
    ['empty array', forged([])],
    ['a word', forged(['x'])],
    ['1e308', forged([1e308])],
    ['a huge number', forged([2 ** 64])],
    ['a 30-digit string', forged(['123456789012345678901234567890'])],
    ['above 2^53 - 1', forged([String(2 ** 53)])],
    ['negative', forged([-1])],
    ['a fraction', forged([2.5])],
    ['two keys', forged(['1', '2'])],
    ['an object', forged({ seq: 1 })],
    ['null', forged(null)],
    ['nested', forged([['1']])],
    ['not base64', '!!!'],
    ['not JSON', Buffer.from('[1').toString('base64url')],
    ['too long', 'A'.repeat(300)],
  ])('refuses a forged cursor (%s) with a 422 at /cursor', (_name, cursor) => {
    expect(refusal(cursor)).toEqual({ status: 422, errors: [{ path: '/cursor', message: 'cursor is not valid' }] });
  });
});
