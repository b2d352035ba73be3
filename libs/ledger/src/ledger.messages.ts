import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PATTERNS } from '@loyalty/contracts';
import { reply } from '@loyalty/messaging';
import type { MemberState } from '@loyalty/contracts';
import type { ReferralCreditReply, ReferralCreditRequest } from '@loyalty/contracts';
import { MemberEvent, decideTier, earningRefusal, expiresAtFor, withinMoneyLimits } from '@loyalty/domain-member';
import { newId, problem } from '@loyalty/platform';
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
      const { result, append } = await this.members.decide(p.tenant, p.member_id, (s) => {
        const done = s.causes.get(p.cause);
        if (done?.length) return { events: [], result: done[0] };
        if (!s.exists || s.state === 'deleted' || s.state === 'anonymised') return { events: [], result: null };
        const refusal = earningRefusal(s);
        if (refusal) throw problem('invalid-state', refusal);
        const id = newId('LE');
        const entry: MemberEvent = { type: 'EntryRecorded', data: {
          id, type: 'earn', status: p.manual ? 'under_review' : 'posted', amount_cents: p.amount_cents, reason_code: 'referral', rule: 'referral',
          parent_entry_id: null, release_at: null, expires_at: expiresAtFor(expiry, p.expiry_months, at), created_at: at, order_ref: null,
          cause: p.cause, release_on: p.manual ? 'manual' : null,
        } };
        return { events: withinMoneyLimits(s, [entry]), result: id as string | null };
      });
      // the credit counts as earned points: a points tier it crosses applies at once
      if (append) await this.members.decide(p.tenant, p.member_id, (s) => ({ events: decideTier(s, tiers, at), result: null }));
      return { ledger_entry_id: result };
    });
  }
}
