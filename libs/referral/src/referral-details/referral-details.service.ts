import { ReferralDetails, ReferralView } from '@loyalty/contracts';
import { notFound } from '@loyalty/platform';
import { referralLink, toReferralView } from '@loyalty/domain-referral';
import { Pool } from 'pg';
import { CommandBus } from '@loyalty/messaging';
import { ProgramStore } from '@loyalty/programs';
import { ReferralDecisions, ledgerMember } from '../referral-decisions';

/**
 * Reads: GET /v1/members/{id}/referral (the member's code, link and the counters of the referrals
 * they made) and GET /v1/referrals/{id}.
 *
 * Counters are by current status: `pending` counts referrals waiting for the friend's qualifying
 * order, held ones (waiting for a review) included; `qualified` those qualified and not yet
 * rewarded; `rewarded` those paid. Rejected referrals are not counted.
 */
export class ReferralDetailsService {
  constructor(
    private readonly decisions: ReferralDecisions,
    private readonly programs: ProgramStore,
    private readonly bus: CommandBus,
    private readonly pool: Pool,
  ) {}

  async details(tenant: string, rawMemberId: string): Promise<ReferralDetails> {
    const member = await ledgerMember(this.bus, tenant, rawMemberId);
    const [program, counts] = await Promise.all([
      this.programs.forTenant(tenant),
      this.pool.query<{ status: string; n: string }>(
        'select status, count(*) as n from referral.referrals where tenant = $1 and advocate_id = $2 group by status', [tenant, member.id]),
    ]);
    const n = (...statuses: string[]) => counts.rows.filter((r) => statuses.includes(r.status)).reduce((a, r) => a + Number(r.n), 0);
    return {
      code: member.referral_code,
      link: referralLink(program.settings.referral_link_template, member.referral_code),
      stats: { pending: n('pending', 'held'), qualified: n('qualified'), rewarded: n('rewarded') },
    };
  }

  async get(tenant: string, id: string): Promise<ReferralView> {
    const { rows } = await this.pool.query<{ friend_id: string }>('select friend_id from referral.referrals where tenant = $1 and id = $2', [tenant, id]);
    if (!rows.length) throw notFound('referral');
    const state = await this.decisions.load(tenant, rows[0].friend_id);
    if (!state.exists) throw notFound('referral');
    return toReferralView(state);
  }
}
