import { Pool } from 'pg';
import { ProgramStore } from '@loyalty/programs';
import type { LedgerEntryView } from '@loyalty/contracts';
import { decideReviewEntry } from '@loyalty/domain-member';
import { notFound, problem } from '@loyalty/platform';
import { LedgerReadModels } from '../ledger.read-models';
import { toEntryView } from '../members/member.view';
import { MembersService } from '../members/members.service';
import { EntryIndexProjection } from './entry-index.projection';

/** POST /admin/v1/ledger-entries/{id}/approve|reject: an `under_review` earn becomes `posted` or `rejected`. */
export class EntryReviewService {
  constructor(
    private readonly pool: Pool,
    private readonly programs: ProgramStore,
    private readonly readModels: LedgerReadModels,
    private readonly members: MembersService,
  ) {}

  /** `tenant` '*' (the admin plane) finds the entry's partition by its id; any other value restricts to it. */
  async review(tenant: string, entryId: string, action: 'approve' | 'reject', actor: string | null): Promise<LedgerEntryView & { member_id: string }> {
    // the index may not have caught up with an entry written a moment ago: catch up and look again
    const where = (await EntryIndexProjection.find(this.pool, entryId))
      ?? (await this.readModels.catchUp(), await EntryIndexProjection.find(this.pool, entryId));
    if (!where || (tenant !== '*' && where.tenant !== tenant)) throw notFound('ledger entry');
    const at = (await this.programs.now(where.tenant)).toISOString();
    const { state } = await this.members.decide(where.tenant, where.member_id, (s) => {
      if (!s.exists || s.state === 'deleted' || s.state === 'anonymised') throw notFound('ledger entry');
      const out = decideReviewEntry(s, { entry_id: entryId, action, actor, at });
      // the index knows the entry; the member's decision state lets closed entries go after the retention
      // (issue 13; an earn once settled): one it no longer holds is not under review
      if ('refusal' in out) throw problem('invalid-state', out.refusal === 'not-found' ? `ledger entry ${entryId} is not under review` : out.refusal);
      return { events: out.events, result: null };
    });
    const program = await this.programs.forTenant(where.tenant);
    return { ...toEntryView(state.entries.get(entryId)!, program.currency_name), member_id: where.member_id };
  }
}
