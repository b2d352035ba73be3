import { MemberEvent } from './member.events';
import { decideStateChange, MemberRuleError } from './member.decider';
import { evolveMember, initialMemberState, MemberAggregate } from './member.state';

const at = '2026-01-01T00:00:00.000Z';
const created = (): MemberAggregate => evolveMember(initialMemberState(), {
  type: 'MemberCreated',
  data: { member_id: 'M-01', state: 'registered', referral_code: 'ABCDEFGH', pii: { v: 1, kid: 'k', iv: '', tag: '', data: '' }, marketing_consent: false, accepted_terms_version: null, at },
});
const apply = (s: MemberAggregate, cmd: Parameters<typeof decideStateChange>[1]): MemberAggregate =>
  decideStateChange(s, cmd, at).reduce((acc: MemberAggregate, e: MemberEvent) => evolveMember(acc, e), s);

describe('member state changes (decisions §4)', () => {
  it('pause then resume returns to the state before the pause', () => {
    const paused = apply(created(), 'pause');
    expect(paused.state).toBe('paused');
    expect(apply(paused, 'resume').state).toBe('registered');
  });

  it('suspending a paused member and reinstating it returns to paused, then resume to registered', () => {
    const suspended = apply(apply(created(), 'pause'), 'suspend');
    expect(suspended.state).toBe('suspended');
    const reinstated = apply(suspended, 'reinstate');
    expect(reinstated.state).toBe('paused');
    expect(apply(reinstated, 'resume').state).toBe('registered');
  });

  it('refuses to resume a member that is not paused, and to reinstate one that is not suspended', () => {
    expect(() => decideStateChange(created(), 'resume', at)).toThrow(MemberRuleError);
    expect(() => decideStateChange(created(), 'reinstate', at)).toThrow(MemberRuleError);
  });

  it('suspending twice writes nothing the second time', () => {
    const suspended = apply(created(), 'suspend');
    expect(decideStateChange(suspended, 'suspend', at)).toEqual([]);
  });
});
