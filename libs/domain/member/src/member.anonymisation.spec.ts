import { decideAnonymisation, decideSweep } from './member.expiry';
import { at, created, entry, entryId, fold } from './testing/member.builder';

/** decisions §4: `deleted` → `anonymised` by the retention job after the programme's erasure grace. */
describe('anonymisation of erased members', () => {
  const erased = () => fold([created(), entry({ type: 'earn', amount_cents: 100 }), { type: 'MemberErased', data: { at: at(1) } }]);

  it('anonymises at once with the default grace of 0 days, and only once', () => {
    const s = erased();
    expect(s.state).toBe('deleted');
    const events = decideSweep(s, { tiers: [], expiry: null }, at(1), entryId);
    expect(events).toEqual([{ type: 'MemberAnonymised', data: { at: at(1) } }]);
    fold(events, s);
    expect(s.state).toBe('anonymised');
    expect(s.pii).toBeNull();
    expect(decideSweep(s, { tiers: [], expiry: null }, at(2), entryId)).toEqual([]);
  });

  it('waits for the grace days', () => {
    const s = erased();
    expect(decideAnonymisation(s, 7, at(7.99))).toEqual([]);
    expect(decideAnonymisation(s, 7, at(8))).toHaveLength(1);
  });

  it('never anonymises a member that was not erased', () => {
    const s = fold([created()]);
    expect(decideAnonymisation(s, 0, at(100))).toEqual([]);
  });
});
