import fc from 'fast-check';
import { pgArray } from './db';

// the pg driver's own serialiser of a parameter (what `pool.query(text, [array])` sends)
const { prepareValue } = require('pg/lib/utils') as { prepareValue: (v: unknown) => unknown };

describe('pgArray (array parameters as PostgreSQL array literals)', () => {
  it('is the text the pg driver sends for the same array: strings, numbers, bigints and nulls', () => {
    const element = fc.oneof(
      fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('"', '\\', '\\"', '{}', 'a,b', ' x ', 'NULL', ''),
      fc.integer(), fc.bigInt(), fc.constant(null), fc.constant(undefined),
    );
    fc.assert(fc.property(fc.array(element, { maxLength: 20 }), (values) => {
      expect(pgArray(values)).toBe(prepareValue(values));
    }), { numRuns: 2_000 });
  });

  it('escapes quotes and backslashes, and writes null as NULL', () => {
    expect(pgArray(['a', 'b"c', 'd\\e', null, 42, 7n])).toBe('{"a","b\\"c","d\\\\e",NULL,"42","7"}');
    expect(pgArray([])).toBe('{}');
  });
});
