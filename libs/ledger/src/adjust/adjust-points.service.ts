import { randomUUID } from 'node:crypto';
import { AdjustmentCommand, decideAdjustment, expiresAtFor } from '@loyalty/domain-member';
import { newId } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { MembersService } from '../members/members.service';

export class AdjustPointsService {
  constructor(private readonly members: MembersService, private readonly programs: ProgramStore) {}

  /** POST /v1/members/{id}/adjust. The caller's idempotency key (header or body) makes a retry a no-op. */
  async adjust(tenant: string, raw: string, input: { amount_cents: number; reason_code: string; note?: string; idempotency_key?: string; actor?: string }, at: string) {
    const memberId = await this.members.resolveId(tenant, raw);
    const cause = input.idempotency_key ? `adjust:${input.idempotency_key}` : `adjust:${randomUUID()}`;
    // a credit expires under the programme's expiry policy like earned points
    const expires_at = input.amount_cents > 0 ? expiresAtFor((await this.programs.forTenant(tenant)).settings.expiry, null, at) : null;
    const adjustment: AdjustmentCommand = {
      entryId: newId('LE'), amount_cents: input.amount_cents, reason_code: input.reason_code, note: input.note ?? null, cause, actor: input.actor ?? null, at, expires_at,
    };
    const { result, state } = await this.members.decide(tenant, memberId, (s) => {
      const { events, entryId } = decideAdjustment(s, adjustment);
      return { events, result: entryId };
    });
    const e = state.entries.get(result)!;
    return { ledger_entry_id: e.id, amount_cents: e.amount_cents, reason_code: e.reason_code, status: e.status, member_id: memberId, created_at: e.created_at };
  }
}
