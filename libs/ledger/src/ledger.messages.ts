import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PATTERNS } from '@loyalty/contracts';
import { reply } from '@loyalty/messaging';
import type { MemberState } from '@loyalty/contracts';
import type { ReferralCreditReply, ReferralCreditRequest } from '@loyalty/contracts';
import { ReferralRewardCommand, decideReferralReward, decideTier, expiresAtFor } from '@loyalty/domain-member';
import { newId } from '@loyalty/platform';
import { MembersService } from './members/members.service';
import { LedgerContext } from './ledger.context';
import { LiabilityService } from './liability/liability.service';

type T = { tenant: string; actor?: string };
const P = PATTERNS.ledger;

/** The ledger service's bus adapter: one line per pattern. */
@Controller()
export class LedgerMessages {
  constructor(private readonly members: MembersService, private readonly ctx: LedgerContext, private readonly liability: LiabilityService) {}

  private async now(tenant: string): Promise<string> { return (await this.ctx.programs.now(tenant)).toISOString(); }

  @MessagePattern(P.enrol)
  enrol(@Payload() p: T & { body: { email: string; phone?: string; external_ref?: string; accepted_terms_version?: string; marketing_consent?: boolean } }) {
    return reply(async () => this.members.enrol(p.tenant, p.body, await this.now(p.tenant)));
  }

  @MessagePattern(P.resolveId)
  resolveId(@Payload() p: T & { id: string }) { return reply(async () => ({ member_id: await this.members.resolveId(p.tenant, p.id) })); }

  @MessagePattern(P.get)
  get(@Payload() p: T & { id: string }) { return reply(() => this.members.get(p.tenant, p.id)); }

  @MessagePattern(P.list)
  list(@Payload() p: T & { query: { limit?: number; cursor?: string; email?: string; state?: MemberState } }) {
    return reply(() => this.members.list(p.tenant, p.query));
  }

  @MessagePattern(P.entries)
  entries(@Payload() p: T & { id: string; query: { limit?: number; cursor?: string } }) { return reply(() => this.members.entries(p.tenant, p.id, p.query)); }

  @MessagePattern(P.patch)
  patch(@Payload() p: T & { id: string; body: Record<string, never> }) {
    return reply(async () => this.members.patch(p.tenant, p.id, p.body, await this.now(p.tenant)));
  }

  @MessagePattern(P.erase)
  erase(@Payload() p: T & { id: string }) { return reply(async () => this.members.erase(p.tenant, p.id, await this.now(p.tenant))); }

  @MessagePattern(P.resolve)
  resolve(@Payload() p: T & { body: { email?: string; phone?: string; external_ref?: string } }) {
    return reply(async () => this.members.resolve(p.tenant, p.body, await this.now(p.tenant)));
  }

  @MessagePattern(P.adjust)
  adjust(@Payload() p: T & { id: string; body: { amount_cents: number; reason_code: string; note?: string; idempotency_key?: string } }) {
    return reply(async () => this.members.adjust(p.tenant, p.id, { ...p.body, actor: p.actor }, await this.now(p.tenant)));
  }

  @MessagePattern(P.memberState)
  memberState(@Payload() p: T & { id: string; command: 'suspend' | 'reinstate' | 'pause' | 'resume' }) {
    return reply(async () => {
      // the admin plane names only the member id; find its programme partition
      const tenant = p.tenant === '*' ? await this.members.tenantOf(p.id) : p.tenant;
      return this.members.changeState(tenant, p.id, p.command, await this.now(tenant));
    });
  }

  @MessagePattern(P.liability)
  getLiability(@Payload() p: T) { return reply(() => this.liability.get(p.tenant)); }

  /** A referral reward (referral service, decisions §7): one `earn` entry, rule `referral`, once per cause; nothing for an erased member. */
  @MessagePattern(P.referral)
  referralCredit(@Payload() p: ReferralCreditRequest) {
    return reply(async (): Promise<ReferralCreditReply> => {
      const at = await this.now(p.tenant);
      const { settings: { expiry }, tiers } = await this.ctx.programs.forTenant(p.tenant);
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
    });
  }
}
