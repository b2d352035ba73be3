import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PATTERNS } from '@loyalty/contracts';
import { reply } from '@loyalty/messaging';
import type { MemberState } from '@loyalty/contracts';
import type { ReferralCreditReply, ReferralCreditRequest } from '@loyalty/contracts';
import { ProgramStore } from '@loyalty/programs';
import { AdjustPointsService } from './adjust/adjust-points.service';
import { EraseMemberService } from './erase/erase-member.service';
import { LiabilityService } from './liability/liability.service';
import { ChangeMemberStateService } from './member-state/change-member-state.service';
import { MembersService } from './members/members.service';
import { ReadMembersService } from './read-members/read-members.service';
import { ReferralRewardService } from './referral-reward/referral-reward.service';

type T = { tenant: string; actor?: string };
const P = PATTERNS.ledger;

/** The ledger service's bus adapter: one line per pattern. */
@Controller()
export class LedgerMessages {
  constructor(
    private readonly members: MembersService,
    private readonly reading: ReadMembersService,
    private readonly erasing: EraseMemberService,
    private readonly adjusting: AdjustPointsService,
    private readonly states: ChangeMemberStateService,
    private readonly rewards: ReferralRewardService,
    private readonly liability: LiabilityService,
    private readonly programs: ProgramStore,
  ) {}

  private async now(tenant: string): Promise<string> { return (await this.programs.now(tenant)).toISOString(); }

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
    return reply(() => this.reading.list(p.tenant, p.query));
  }

  @MessagePattern(P.entries)
  entries(@Payload() p: T & { id: string; query: { limit?: number; cursor?: string } }) { return reply(() => this.reading.entries(p.tenant, p.id, p.query)); }

  @MessagePattern(P.patch)
  patch(@Payload() p: T & { id: string; body: Record<string, never> }) {
    return reply(async () => this.members.patch(p.tenant, p.id, p.body, await this.now(p.tenant)));
  }

  @MessagePattern(P.erase)
  erase(@Payload() p: T & { id: string }) { return reply(async () => this.erasing.erase(p.tenant, p.id, await this.now(p.tenant))); }

  @MessagePattern(P.resolve)
  resolve(@Payload() p: T & { body: { email?: string; phone?: string; external_ref?: string } }) {
    return reply(async () => this.members.resolve(p.tenant, p.body, await this.now(p.tenant)));
  }

  @MessagePattern(P.adjust)
  adjust(@Payload() p: T & { id: string; body: { amount_cents: number; reason_code: string; note?: string; idempotency_key?: string } }) {
    return reply(async () => this.adjusting.adjust(p.tenant, p.id, { ...p.body, actor: p.actor }, await this.now(p.tenant)));
  }

  @MessagePattern(P.memberState)
  memberState(@Payload() p: T & { id: string; command: 'suspend' | 'reinstate' | 'pause' | 'resume' }) {
    return reply(async () => {
      // the admin plane names only the member id; find its programme partition
      const tenant = p.tenant === '*' ? await this.members.tenantOf(p.id) : p.tenant;
      return this.states.changeState(tenant, p.id, p.command, await this.now(tenant));
    });
  }

  @MessagePattern(P.liability)
  getLiability(@Payload() p: T) { return reply(() => this.liability.get(p.tenant)); }

  /** A referral reward (referral service, decisions §7). */
  @MessagePattern(P.referral)
  referralCredit(@Payload() p: ReferralCreditRequest) {
    return reply(async (): Promise<ReferralCreditReply> => this.rewards.credit(p, await this.now(p.tenant)));
  }
}
