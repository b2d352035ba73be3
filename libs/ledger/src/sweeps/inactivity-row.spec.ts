import fc from 'fast-check';
import { INACTIVITY_STEP_MS, inactivityRowAt } from './due-items.projection';

/** What the inactivity row's instant is by definition: the last activity rounded down to the step. */
const byDate = (at: string): string => new Date(Math.floor(Date.parse(at) / INACTIVITY_STEP_MS) * INACTIVITY_STEP_MS).toISOString();

describe('inactivityRowAt', () => {
  it('is the last activity rounded down to ten minutes, for any instant written by toISOString', () => {
    fc.assert(fc.property(fc.date({ min: new Date('0000-01-01T00:00:00.000Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }), (d) => {
      const at = d.toISOString();
      expect(inactivityRowAt(at)).toBe(byDate(at));
    }), { numRuns: 2000 });
  });

  it('rounds other forms of an instant through the date', () => {
    for (const at of ['2026-11-28T14:59:59Z', '2026-11-28T15:09:59.5+01:00', '2026-11-28T14:05:00.123456Z', '+012026-01-01T00:19:00.000Z']) {
      expect(inactivityRowAt(at)).toBe(byDate(at));
    }
    expect(inactivityRowAt('2026-11-28T14:59:59.999Z')).toBe('2026-11-28T14:50:00.000Z');
    expect(inactivityRowAt('2026-11-28T14:50:00.000Z')).toBe('2026-11-28T14:50:00.000Z');
  });
});
