import { campaignMode, isActiveAt, remainingBudget } from './campaign-window.policy';

describe('isActiveAt', () => {
  const window = { id: 'C1', starts_at: '2024-06-01T00:00:00.000Z', ends_at: '2024-07-01T00:00:00.000Z' };

  it.each([
    ['2024-05-31T23:59:59.999Z', false],
    ['2024-06-01T00:00:00.000Z', true], // start inclusive
    ['2024-06-15T12:00:00.000Z', true],
    ['2024-06-30T23:59:59.999Z', true],
    ['2024-07-01T00:00:00.000Z', false], // end exclusive
  ])('given a June campaign when checked at %p then active is %p', (at, active) => {
    expect(isActiveAt(window, at)).toBe(active);
  });

  it('given open bounds when checked then null and absent bounds are unbounded', () => {
    expect(isActiveAt({ id: 'C', starts_at: null, ends_at: null }, '1999-01-01T00:00:00.000Z')).toBe(true);
    expect(isActiveAt({ id: 'C' }, '2999-01-01T00:00:00.000Z')).toBe(true);
    expect(isActiveAt({ id: 'C', starts_at: '2024-06-01T00:00:00.000Z' }, '2999-01-01T00:00:00.000Z')).toBe(true);
    expect(isActiveAt({ id: 'C', ends_at: '2024-06-01T00:00:00.000Z' }, '1999-01-01T00:00:00.000Z')).toBe(true);
    expect(isActiveAt({ id: 'C', ends_at: '2024-06-01T00:00:00.000Z' }, '2024-06-01T00:00:00.000Z')).toBe(false);
  });

  it('given bounds with offsets when checked then instants (not strings) are compared', () => {
    // 02:00+02:00 is midnight UTC: exactly the start.
    expect(isActiveAt({ id: 'C', starts_at: '2024-06-01T02:00:00+02:00' }, '2024-06-01T00:00:00.000Z')).toBe(true);
  });

  it('given an invalid bound when checked then it throws naming the rule', () => {
    expect(() => isActiveAt({ id: 'C9', starts_at: 'soon' }, '2024-06-01T00:00:00.000Z')).toThrow(/C9 starts_at/);
  });
});

describe('campaignMode', () => {
  it('given an explicit applies_to when resolved then it wins', () => {
    expect(campaignMode({ applies_to: 'base', tags: ['shoes'] })).toBe('base');
    expect(campaignMode({ applies_to: 'category_boost', tags: null })).toBe('category_boost');
  });

  it('given no applies_to when resolved then non-empty tags mean a boost', () => {
    expect(campaignMode({ tags: ['shoes'] })).toBe('category_boost');
    expect(campaignMode({ applies_to: null, tags: [] })).toBe('base');
    expect(campaignMode({ tags: null })).toBe('base');
  });

  it('given an unknown applies_to when resolved then it throws', () => {
    expect(() => campaignMode({ applies_to: 'everything' as never, tags: null })).toThrow(TypeError);
  });
});

describe('remainingBudget', () => {
  it('given no budget when asked then it is unlimited (null)', () => {
    expect(remainingBudget({ budget_cents: null }, 1_000)).toBeNull();
    expect(remainingBudget({}, 1_000)).toBeNull();
  });

  it('given a budget when asked then it is budget − issued, never negative', () => {
    expect(remainingBudget({ budget_cents: 10_000 }, 0)).toBe(10_000);
    expect(remainingBudget({ budget_cents: 10_000 }, 9_999)).toBe(1);
    expect(remainingBudget({ budget_cents: 10_000 }, 10_000)).toBe(0);
    expect(remainingBudget({ budget_cents: 10_000 }, 12_000)).toBe(0);
  });
});
