import type { EntryData, MemberEvent } from '@loyalty/domain-member';
import { balancesOf, initialMemberState, memberEvolver } from '@loyalty/domain-member';
import { ProgramInfo, mapMemberEvent, memberSummary, sameBalances } from './payloads';

const program: ProgramInfo = { currency: 'points', expiry: null, expiryWarningDays: 30 };
const AT = '2025-01-10T12:00:00.000Z';
const created = (state: 'prospect' | 'registered'): MemberEvent => ({
  type: 'MemberCreated',
  data: { member_id: 'M-01J00000000000000000000000', state, referral_code: 'ABCDEFGH', pii: { v: 1, kid: 'k', iv: '', tag: '', data: '' }, marketing_consent: true, accepted_terms_version: 'v1', at: AT },
});
const entry = (over: Partial<EntryData> & Pick<EntryData, 'id' | 'type' | 'amount_cents'>): MemberEvent => ({
  type: 'EntryRecorded',
  data: { status: 'posted', reason_code: 'goodwill', rule: null, parent_entry_id: null, release_at: null, expires_at: null, created_at: AT, order_ref: null, cause: null, ...over },
});

/** Folds events one by one, mapping each like the projection does. */
const run = (events: MemberEvent[]) => {
  let s = initialMemberState();
  const out: { kinds: string[]; data: unknown[] }[] = [];
  for (const e of events) {
    const tier = s.tier;
    s = memberEvolver.evolve(s, e);
    const mapped = mapMemberEvent(e, { tier }, s, AT, program);
    out.push({ kinds: mapped.map((m) => m.kind), data: mapped.map((m) => m.data) });
  }
  return { s, out };
};

describe('member events → webhook kinds', () => {
  it('enrolment: a registered member created, or a prospect enrolled, is member.enrolled; a bare prospect is nothing', () => {
    expect(run([created('registered')]).out[0].kinds).toEqual(['member.enrolled']);
    const p = run([created('prospect'), { type: 'MemberEnrolled', data: { accepted_terms_version: 'v2', marketing_consent: false, at: AT } }]);
    expect(p.out.map((o) => o.kinds)).toEqual([[], ['member.enrolled']]);
    const summary = p.out[1].data[0] as Record<string, unknown>;
    expect(summary).toMatchObject({ id: 'M-01J00000000000000000000000', state: 'registered', accepted_terms_version: 'v2', balances: { available_cents: 0 } });
    // sealed PII never leaves in a webhook
    expect(summary).not.toHaveProperty('email');
    expect(summary).not.toHaveProperty('phone');
  });

  it('an entry is ledger.entry.created with the entry in its API shape plus member_id', () => {
    const { out } = run([created('registered'), entry({ id: 'LE-1', type: 'adjust', amount_cents: 1500 })]);
    expect(out[1].kinds).toEqual(['ledger.entry.created']);
    expect(out[1].data[0]).toEqual({
      id: 'LE-1', type: 'adjust', status: 'posted', amount_cents: 1500, currency: 'points', reason_code: 'goodwill', rule: null,
      parent_entry_id: null, release_at: null, expires_at: null, created_at: AT, order_ref: null, member_id: 'M-01J00000000000000000000000',
    });
  });

  it('vouchers: created, confirmed, voided; a direct redemption is created and confirmed at once', () => {
    const issue = (id: string, mode: 'voucher' | 'direct'): MemberEvent => ({
      type: 'VoucherIssued',
      data: { redemption_id: id, code: 'RWD-AAAA-BBBB', mode, amount_cents: 300, entry_id: `LE-${id}`, order_ref: mode === 'direct' ? 'o-1' : null, expires_at: null, at: AT },
    });
    const { out } = run([
      created('registered'), entry({ id: 'LE-1', type: 'adjust', amount_cents: 1000 }),
      entry({ id: 'LE-RD-1', type: 'redeem', amount_cents: -300 }), issue('RD-1', 'voucher'),
      { type: 'VoucherUsed', data: { redemption_id: 'RD-1', order_ref: 'o-9', at: AT } },
      entry({ id: 'LE-RD-2', type: 'redeem', amount_cents: -300 }), issue('RD-2', 'voucher'),
      { type: 'VoucherRestored', data: { redemption_id: 'RD-2', reverse_entry_id: 'LE-R', reason: 'voided', at: AT } },
      entry({ id: 'LE-RD-3', type: 'redeem', amount_cents: -300 }), issue('RD-3', 'direct'),
    ]);
    expect(out[3].kinds).toEqual(['redemption.created']);
    expect(out[3].data[0]).toMatchObject({ id: 'RD-1', status: 'created', mode: 'voucher', amount_cents: 300, code: 'RWD-AAAA-BBBB', ledger_entry_id: 'LE-RD-1', member_id: 'M-01J00000000000000000000000' });
    expect(out[4].kinds).toEqual(['redemption.confirmed']);
    expect(out[4].data[0]).toMatchObject({ id: 'RD-1', status: 'used', order_ref: 'o-9' });
    expect(out[7].kinds).toEqual(['redemption.voided']);
    expect(out[7].data[0]).toMatchObject({ id: 'RD-2', status: 'restored' });
    expect(out[9].kinds).toEqual(['redemption.created', 'redemption.confirmed']);
    expect(out[9].data[1]).toMatchObject({ id: 'RD-3', status: 'used', mode: 'direct' });
  });

  it('tier change is {member_id, from, to}', () => {
    const gold = { name: 'Gold', level: 2, earn_multiplier: 1.5, benefits: {} };
    const silver = { name: 'Silver', level: 1, earn_multiplier: 1.2, benefits: {} };
    const { out } = run([created('registered'),
      { type: 'TierChanged', data: { from: null, to: silver, at: AT } },
      { type: 'TierChanged', data: { from: silver, to: gold, at: AT } }]);
    expect(out[1]).toEqual({ kinds: ['tier.changed'], data: [{ member_id: 'M-01J00000000000000000000000', from: null, to: silver }] });
    expect(out[2].data[0]).toEqual({ member_id: 'M-01J00000000000000000000000', from: silver, to: gold });
  });

  it('reservations map to no kind of their own (balance.updated covers them) but do move the balances', () => {
    let s = memberEvolver.evolve(memberEvolver.evolve(initialMemberState(), created('registered')), entry({ id: 'LE-1', type: 'adjust', amount_cents: 1000 }));
    const before = balancesOf(s);
    const open: MemberEvent = { type: 'ReservationOpened', data: { reservation_id: 'RS-1', amount_cents: 400, cart_ref: null, expires_at: AT, at: AT } };
    s = memberEvolver.evolve(s, open);
    expect(mapMemberEvent(open, { tier: null }, s, AT, program)).toEqual([]);
    expect(sameBalances(before, balancesOf(s))).toBe(false);
    expect(memberSummary(s, AT, null).balances).toMatchObject({ available_cents: 1000, reserved_cents: 400, spendable_cents: 600 });
  });
});
