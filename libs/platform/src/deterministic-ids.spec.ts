import { deterministicUlid, deterministicUuid, entryIdFor } from './deterministic-ids';

/**
 * These ids are stored: a retried command must derive the very same ids after an upgrade, or the
 * event store's idempotent append would take its events as new ones. The expected values were
 * printed by the implementation they were first stored with; they must never change.
 */
describe('deterministic ids', () => {
  it('derive the same event id from the same seed as every earlier release', () => {
    expect(deterministicUuid('member-P-1|M-1|step|EV-1')).toBe('9a5a1d7a-ef32-5841-be7e-ca7adcb059e3');
    expect(deterministicUuid('member-P-1|M-1|step|EV-2')).not.toBe(deterministicUuid('member-P-1|M-1|step|EV-1'));
  });

  it('derive the same ledger entry id from the same cause and time as every earlier release', () => {
    expect(deterministicUlid('P-1|entry|earn:ORD-1', Date.parse('2026-01-02T03:04:05.678Z'))).toBe('01KDYAK3SEWJ0PJPZFWZQYM4H2');
    expect(entryIdFor('P-1', 'earn:ORD-1', '2026-01-02T03:04:05.678Z')).toBe('LE-01KDYAK3SEWJ0PJPZFWZQYM4H2');
    // the time part sorts by time; the rest comes from the seed
    const later = entryIdFor('P-1', 'earn:ORD-1', '2026-01-02T03:04:06.678Z');
    expect(later.slice(13)).toBe('WJ0PJPZFWZQYM4H2');
    expect(later > 'LE-01KDYAK3SEWJ0PJPZFWZQYM4H2').toBe(true);
  });
});
