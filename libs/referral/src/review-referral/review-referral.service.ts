import { ReferralView } from '@loyalty/contracts';
import { notFound } from '@loyalty/platform';
import { decideReview, toReferralView } from '@loyalty/domain-referral';
import { QualificationService } from '../qualification/qualification.service';
import { Pool } from 'pg';
import { ProgramStore } from '@loyalty/programs';
import { ReferralDecisions, programmeNow } from '../referral-decisions';

/**
 * POST /admin/v1/referrals/{id}/approve|reject (decisions §10). The admin plane names only the
 * referral id; its row tells the programme partition. Approving a held referral whose qualifying
 * order already came qualifies it and pays the rewards before answering.
 */
export class ReviewReferralService {
  constructor(
    private readonly decisions: ReferralDecisions,
    private readonly programs: ProgramStore,
    private readonly pool: Pool,
    private readonly qualification: QualificationService,
  ) {}

  async review(id: string, action: 'approve' | 'reject', actor: string | null): Promise<ReferralView> {
    const { rows } = await this.pool.query<{ tenant: string; friend_id: string }>('select tenant, friend_id from referral.referrals where id = $1', [id]);
    if (!rows.length) throw notFound('referral');
    const { tenant, friend_id: friendId } = rows[0];
    const at = await programmeNow(this.programs, tenant);
    let state = await this.decisions.decide(tenant, friendId, (s) => decideReview(s, { action, actor, at }));
    if (state.status === 'qualified') state = await this.qualification.reward(tenant, friendId).catch(() => state);
    return toReferralView(state);
  }
}
