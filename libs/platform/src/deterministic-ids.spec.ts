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

  it('give every seed the id the first (BigInt) implementation gave it', () => {
    const { hash } = jest.requireActual<typeof import('node:crypto')>('node:crypto');
    const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    const reference = (seed: string): string => {
      const bytes = hash('sha256', seed, 'buffer');
      let bits = 0n;
      for (let i = 0; i < 10; i++) bits = (bits << 8n) | BigInt(bytes[i]);
      let rand = '';
      for (let i = 0; i < 16; i++) { rand = CROCKFORD[Number(bits & 31n)] + rand; bits >>= 5n; }
      return rand;
    };
    for (let i = 0; i < 2_000; i++) {
      const seed = `P-${i % 7}|entry|earn:ORD-${i}:${'x'.repeat(i % 13)}`;
      expect(deterministicUlid(seed, 1_767_000_000_000 + i).slice(10)).toBe(reference(seed));
    }
  });
});
