import { Body, Controller, Get, Param, Post, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { PATTERNS, ReferralDetails, ReferralView } from '@loyalty/contracts';
import { RequireScopes } from '../auth/auth.decorators';
import { Idempotent } from '../idempotency/idempotency.interceptor';
import { Bus } from '../http/bus';
import { GatewayRequest } from '../http/request-context';
import { CreateReferralDto } from './referrals.dto';

const P = PATTERNS.referral;

/** Referrals (interface-spec "Referrals", "Referral details"; decisions §7). */
@ApiTags('referrals')
@ApiBearerAuth()
@Controller('v1')
export class ReferralsController {
  constructor(private readonly bus: Bus) {}

  /** 201 the referral (`pending`, or `held` by a fraud check); 404 unknown code or friend; 409 friend already referred; 422 `rule-ineligible`. */
  @Post('referrals')
  @RequireScopes('act')
  @Idempotent()
  async create(@Req() req: GatewayRequest, @Body() body: CreateReferralDto) {
    // keyed by the advocate's code: one advocate's referrals are decided in order (the daily limit)
    return { data: await this.bus.request<ReferralView>(req, P.create, { body }, body.code.trim().toUpperCase()) };
  }

  @Get('referrals/:id')
  @RequireScopes('read')
  async get(@Req() req: GatewayRequest, @Param('id') id: string) {
    return { data: await this.bus.request<ReferralView>(req, P.get, { id }, id) };
  }

  /** The member's referral code, share link and counters of the referrals they made. */
  @Get('members/:id/referral')
  @RequireScopes('read')
  async details(@Req() req: GatewayRequest, @Param('id') id: string) {
    return { data: await this.bus.request<ReferralDetails>(req, P.details, { id }, id) };
  }
}
