import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { PATTERNS, ReferralView } from '@loyalty/contracts';
import { AdminOnly } from '../auth/auth.decorators';
import { Bus } from '../http/bus';

/**
 * Admin review of held referrals (decisions §10): the referral id alone names it. 200 with the
 * referral: approve → `pending`, or `qualified`/`rewarded` when the friend's qualifying order
 * already came; reject → `rejected`. 404 unknown; 409 `invalid-state` when it is not held.
 * Repeating the decision taken is an idempotent 200.
 */
@ApiTags('admin')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/v1/referrals')
export class ReferralsAdminController {
  constructor(private readonly bus: Bus) {}

  @Post(':id/approve')
  @HttpCode(200)
  async approve(@Param('id') id: string) {
    return { data: await this.bus.requestAs<ReferralView>('*', PATTERNS.referral.approve, { id }, id) };
  }

  @Post(':id/reject')
  @HttpCode(200)
  async reject(@Param('id') id: string) {
    return { data: await this.bus.requestAs<ReferralView>('*', PATTERNS.referral.reject, { id }, id) };
  }
}
