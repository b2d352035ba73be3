import type { ExpiryPolicy } from '@loyalty/contracts';
import { computeExpiresAt, inactivityExpiryAt } from './expiry.policy';

const earnedAt = '2024-01-31T15:45:00.000Z';

describe('computeExpiresAt', () => {
  describe('given a rule expiry_months', () => {
    it('when computed then it overrides the programme policy with calendar months, clamped to month end', () => {
      const policy: ExpiryPolicy = { policy: 'fixed_days', days: 10 };
      expect(computeExpiresAt(policy, 1, earnedAt)).toBe('2024-02-29T15:45:00.000Z');
      expect(computeExpiresAt({ policy: 'none' }, 13, earnedAt)).toBe('2025-02-28T15:45:00.000Z');
      expect(computeExpiresAt({ policy: 'inactivity', days: 5 }, 3, earnedAt)).toBe(
        '2024-04-30T15:45:00.000Z',
      );
    });

    it('when the months are 12 from a leap day then it clamps to 28 February', () => {
      expect(computeExpiresAt({ policy: 'none' }, 12, '2024-02-29T00:00:00.000Z')).toBe(
        '2025-02-28T00:00:00.000Z',
      );
    });

    it('when the months are negative then it throws', () => {
      expect(() => computeExpiresAt({ policy: 'none' }, -1, earnedAt)).toThrow(RangeError);
    });
  });

  describe('given no rule override', () => {
    it('when the policy is none then it never expires', () => {
      expect(computeExpiresAt({ policy: 'none' }, null, earnedAt)).toBeNull();
    });

    it('when the policy is inactivity then the date is not known at earn time', () => {
      expect(computeExpiresAt({ policy: 'inactivity', days: 365 }, null, earnedAt)).toBeNull();
    });

    it('when the policy is fixed_days then it adds whole days', () => {
      expect(computeExpiresAt({ policy: 'fixed_days', days: 30 }, null, earnedAt)).toBe(
        '2024-03-01T15:45:00.000Z', // 2024 is a leap year: Jan 31 + 30 days = Mar 1
      );
      expect(computeExpiresAt({ policy: 'fixed_days', days: 30 }, null, '2023-01-31T15:45:00.000Z')).toBe(
        '2023-03-02T15:45:00.000Z',
      );
      expect(computeExpiresAt({ policy: 'fixed_days', days: 0 }, null, earnedAt)).toBe(earnedAt);
    });

    it('when fixed_days has no days then it is a configuration error', () => {
      expect(() => computeExpiresAt({ policy: 'fixed_days' }, null, earnedAt)).toThrow(/requires days/);
      expect(() => computeExpiresAt({ policy: 'fixed_days', days: null }, null, earnedAt)).toThrow(RangeError);
      expect(() => computeExpiresAt({ policy: 'fixed_days', days: -3 }, null, earnedAt)).toThrow(RangeError);
    });

    it.each([
      ['month', '2024-02-10T08:00:00.000Z', '2024-02-29T23:59:59.999Z'],
      ['month', '2023-02-10T08:00:00.000Z', '2023-02-28T23:59:59.999Z'],
      ['quarter', '2024-02-10T08:00:00.000Z', '2024-03-31T23:59:59.999Z'],
      ['quarter', '2024-05-31T23:59:59.999Z', '2024-06-30T23:59:59.999Z'],
      ['quarter', '2024-07-01T00:00:00.000Z', '2024-09-30T23:59:59.999Z'],
      ['quarter', '2024-12-01T00:00:00.000Z', '2024-12-31T23:59:59.999Z'],
      ['year', '2024-02-10T08:00:00.000Z', '2024-12-31T23:59:59.999Z'],
    ] as const)('when the policy is end_of_period %p and earned %p then it expires %p', (period, at, expected) => {
      expect(computeExpiresAt({ policy: 'end_of_period', period }, null, at)).toBe(expected);
    });

    it('when end_of_period has no period then it is a configuration error', () => {
      expect(() => computeExpiresAt({ policy: 'end_of_period' }, null, earnedAt)).toThrow(/requires period/);
    });

    it('when the policy is unknown (unvalidated input) then it throws', () => {
      expect(() => computeExpiresAt({ policy: 'weekly' } as unknown as ExpiryPolicy, null, earnedAt)).toThrow(
        TypeError,
      );
    });
  });

  it('given an invalid earnedAt when computed then it throws', () => {
    expect(() => computeExpiresAt({ policy: 'none' }, null, 'yesterday')).toThrow(RangeError);
  });
});

describe('inactivityExpiryAt', () => {
  it('given the last activity when computed then it is that plus the policy days', () => {
    expect(inactivityExpiryAt('2024-02-28T12:00:00.000Z', 2)).toBe('2024-03-01T12:00:00.000Z');
    expect(inactivityExpiryAt('2024-01-01T00:00:00.000Z', 366)).toBe('2025-01-01T00:00:00.000Z');
  });

  it('given invalid days when computed then it throws', () => {
    expect(() => inactivityExpiryAt('2024-01-01T00:00:00.000Z', -1)).toThrow(RangeError);
    expect(() => inactivityExpiryAt('2024-01-01T00:00:00.000Z', 1.5)).toThrow(RangeError);
  });
});
