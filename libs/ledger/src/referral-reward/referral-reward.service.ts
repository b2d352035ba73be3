import type { ReferralCreditReply, ReferralCreditRequest } from '@loyalty/contracts';
import { ReferralRewardCommand, decideReferralReward, decideTier, expiresAtFor } from '@loyalty/domain-member';
import { newId } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { MembersService } from '../members/members.service';

/** A referral reward the referral service asks for (decisions §7): one `earn` entry, rule `referral`, once per cause; nothing for an erased member. */
export class ReferralRewardService {
  constructor(private readonly members: MembersService, private readonly programs: ProgramStore) {}

  async credit(p: ReferralCreditRequest, at: string): Promise<ReferralCreditReply> {
    const { settings: { expiry }, tiers } = await this.programs.forTenant(p.tenant);
    const reward: ReferralRewardCommand = {
      entryId: newId('LE'), amount_cents: p.amount_cents, cause: p.cause, manual: p.manual, expires_at: expiresAtFor(expiry, p.expiry_months, at), at,
    };
    const { result, append } = await this.members.decide(p.tenant, p.member_id, (s) => {
      const { events, entryId } = decideReferralReward(s, reward);
      return { events, result: entryId };
    });
    // the credit counts as earned points: a points tier it crosses applies at once
    if (append) await this.members.decide(p.tenant, p.member_id, (s) => ({ events: decideTier(s, tiers, at), result: null }));
    return { ledger_entry_id: result };
  }
}
