import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { PATTERNS } from '@loyalty/contracts';
import { RequireScopes } from '../auth/auth.decorators';
import { Idempotent } from '../idempotency/idempotency.interceptor';
import { Bus } from '../http/bus';
import { GatewayRequest } from '../http/request-context';
import { ConfirmDto, CreateRedemptionDto, RedemptionByCodeQuery } from './redemptions.dto';

const P = PATTERNS.redemption;

/** Vouchers and direct redemptions (interface-spec "Redemptions", decisions §6). */
@ApiTags('redemptions')
@ApiBearerAuth()
@Controller('v1')
export class RedemptionsController {
  constructor(private readonly bus: Bus) {}

  /** The Idempotency-Key is the command's to keep (recorded on the member stream and claimed with its append): a retry never debits twice. */
  @Post('members/:id/redemptions')
  @RequireScopes('act')
  @Idempotent({ claimedByCommand: true })
  async create(@Req() req: GatewayRequest, @Res({ passthrough: true }) res: FastifyReply, @Param('id') id: string, @Body() body: CreateRedemptionDto) {
    return { data: await this.bus.requestKeyed(req, res, P.create, { member_id: id, body }, id) };
  }

  @Get('redemptions')
  @RequireScopes('read')
  async byCode(@Req() req: GatewayRequest, @Query() query: RedemptionByCodeQuery) {
    return { data: await this.bus.request(req, P.byCode, { code: query.code }) };
  }

  @Get('redemptions/:id')
  @RequireScopes('read')
  async get(@Req() req: GatewayRequest, @Param('id') id: string) {
    return { data: await this.bus.request(req, P.get, { id }, id) };
  }

  @Post('redemptions/:id/confirm')
  @HttpCode(200)
  @RequireScopes('act')
  @Idempotent()
  async confirm(@Req() req: GatewayRequest, @Param('id') id: string, @Body() body: ConfirmDto) {
    return { data: await this.bus.request(req, P.confirm, { id, order_ref: body.order_ref }, id) };
  }

  @Post('redemptions/:id/void')
  @HttpCode(200)
  @RequireScopes('act')
  @Idempotent()
  async void(@Req() req: GatewayRequest, @Param('id') id: string) {
    return { data: await this.bus.request(req, P.void, { id }, id) };
  }
}
