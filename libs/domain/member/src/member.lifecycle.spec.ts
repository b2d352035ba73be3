import type { MemberEvent } from './member.events';
import { MemberRuleError } from './member.decider';
import { decideAdjustment, decideCreate, decideErase, decideMigrationReversal, decideProfile, decideReferralReward } from './member.lifecycle';
import { balancesOf } from './member.state';
import { T0, at, created, entry, fold } from './testing/member.builder';

const pii = { v: 1 as const, kid: 'k', iv: '', tag: '', data: '' };
const codeOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    if (e instanceof MemberRuleError) return e.code;
    throw e;
  }
  return 'none';
};

describe('member lifecycle decisions (pure: time and ids come in)', () => {
  it('creates a member once: a stream that holds one creates nothing', () => {
    const cmd = { member_id: 'M-TEST', state: 'registered' as const, referral_code: 'ABCDEFGH', pii, marketing_consent: true, accepted_terms_version: 'v1', at: T0 };
    const events = decideCreate(fold([]), cmd);
    expect(events).toEqual([{ type: 'MemberCreated', data: cmd }]);
    expect(decideCreate(fold(events), cmd)).toEqual([]);
  });

  it('enrols a prospect on POST (not on a plain profile change) and records only what changed', () => {
    const prospect = fold([created(T0, 'prospect')]);
    const enrolled = decideProfile(prospect, { enrol: true, accepted_terms_version: 'v2', at: at(1) });
    expect(enrolled.enrolled).toBe(true);
    expect(enrolled.events.map((e) => e.type)).toEqual(['MemberEnrolled']);
    const patched = decideProfile(fold([created(T0, 'prospect')]), { enrol: false, marketing_consent: true, at: at(1) });
    expect(patched).toEqual({ enrolled: false, events: [{ type: 'ProfileUpdated', data: { marketing_consent: true, at: at(1) } }] });
    expect(decideProfile(fold([created()]), { enrol: false, marketing_consent: false, at: at(1) }).events).toEqual([]);
    expect(codeOf(() => decideProfile(fold([]), { enrol: true, at: T0 }))).toBe('not-found');
  });

  it('adjusts once per cause; the same key for another adjustment is refused', () => {
    const s = fold([created()]);
    const cmd = { entryId: 'LE-A', amount_cents: 500, reason_code: 'goodwill', note: null, cause: 'adjust:k1', actor: 'admin', expires_at: null, at: T0 };
    const first = decideAdjustment(s, cmd);
    expect(first.entryId).toBe('LE-A');
    const after = fold(first.events, s);
    expect(decideAdjustment(after, { ...cmd, entryId: 'LE-B' })).toEqual({ events: [], entryId: 'LE-A' });
    expect(codeOf(() => decideAdjustment(after, { ...cmd, entryId: 'LE-C', amount_cents: 600 }))).toBe('idempotency-key-reused');
  });

  it('rewards a referral once, nothing for a member who is gone, and refuses a suspended one', () => {
    const cmd = { entryId: 'LE-R', amount_cents: 1_000, cause: 'referral:F1', manual: false, expires_at: null, at: T0 };
    const s = fold([created()]);
    const first = decideReferralReward(s, cmd);
    expect(first.entryId).toBe('LE-R');
    expect(balancesOf(fold(first.events, s)).available_cents).toBe(1_000);
    expect(decideReferralReward(s, { ...cmd, entryId: 'LE-X' })).toEqual({ events: [], entryId: 'LE-R' });
    expect(decideReferralReward(fold([]), cmd)).toEqual({ events: [], entryId: null });
    const suspended = fold([created(), { type: 'MemberStateChanged', data: { from: 'registered', to: 'suspended', reason: 'suspend', at: T0 } }]);
    expect(codeOf(() => decideReferralReward(suspended, cmd))).toBe('invalid-state');
  });

  it('erases: open reservations released, open vouchers restored, the balance forfeited, with the ids it is given', () => {
    const s = fold([created(), entry({ type: 'adjust', amount_cents: 2_000, cause: 'adjust:1' })]);
    const ids = ['LE-E1', 'LE-E2'];
    const events = decideErase(s, { member_id: 'M-TEST', at: at(2), entryIds: () => ids.shift()! });
    expect(events.map((e) => e.type)).toEqual(['EntryRecorded', 'MemberErased']);
    const forfeit = events[0] as Extract<MemberEvent, { type: 'EntryRecorded' }>;
    expect(forfeit.data).toMatchObject({ id: 'LE-E1', type: 'expire', amount_cents: -2_000, reason_code: 'erasure', cause: 'erasure:M-TEST' });
    expect(balancesOf(fold(events, s)).available_cents).toBe(0);
    expect(decideErase(fold(events, s), { member_id: 'M-TEST', at: at(3), entryIds: () => 'LE-X' })).toEqual([]);
  });

  it('reverses what is left of a migration credit once; nothing for an erased member', () => {
    const s = fold([created(), entry({ id: 'LE-MIG', type: 'adjust', amount_cents: 700, cause: 'migration:MB-1:M-TEST', batch_id: 'MB-1' })]);
    const cmd = { credit_entry_id: 'LE-MIG', entryId: 'LE-REV', batch_id: 'MB-1', at: at(1) };
    const first = decideMigrationReversal(s, cmd);
    expect(first.reversed).toBe(true);
    expect(first.events).toEqual([expect.objectContaining({ type: 'EntryRecorded', data: expect.objectContaining({ id: 'LE-REV', type: 'reverse', amount_cents: -700, parent_entry_id: 'LE-MIG', cause: 'migration-reverse:LE-MIG' }) })]);
    const after = fold(first.events, s);
    expect(balancesOf(after).available_cents).toBe(0);
    expect(decideMigrationReversal(after, { ...cmd, entryId: 'LE-X' })).toEqual({ events: [], reversed: true });
    const erased = fold([{ type: 'MemberErased', data: { at: at(1) } }], fold([created(), entry({ id: 'LE-MIG', type: 'adjust', amount_cents: 700, cause: 'migration:MB-1:M-TEST' })]));
    expect(decideMigrationReversal(erased, cmd)).toEqual({ events: [], reversed: false });
  });
});
