import { Body, Controller, Get, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { PATTERNS } from '@loyalty/contracts';
import { RequireScopes } from '../auth/auth.decorators';
import { Idempotent } from '../idempotency/idempotency.interceptor';
import { Bus } from '../http/bus';
import { GatewayRequest } from '../http/request-context';
import { ConfirmDto, QuoteDto, ReserveDto } from './redemptions.dto';

const P = PATTERNS.redemption;

/** Checkout: quotes and reservations (interface-spec "Checkout quote and reservations", decisions §6). */
@ApiTags('checkout')
@ApiBearerAuth()
@Controller('v1')
export class ReservationsController {
  constructor(private readonly bus: Bus) {}

  @Post('redemption-quotes')
  @HttpCode(200)
  @RequireScopes('act')
  async quote(@Req() req: GatewayRequest, @Body() body: QuoteDto) {
    return { data: await this.bus.request(req, P.quote, { body }, body.member_id) };
  }

  /** The Idempotency-Key is the command's to keep (recorded on the member stream and claimed with its append). */
  @Post('redemption-reservations')
  @RequireScopes('act')
  @Idempotent({ claimedByCommand: true })
  async reserve(@Req() req: GatewayRequest, @Res({ passthrough: true }) res: FastifyReply, @Body() body: ReserveDto) {
    return { data: await this.bus.requestKeyed(req, res, P.reserve, { body }, body.member_id) };
  }

  @Get('redemption-reservations/:id')
  @RequireScopes('read')
  async get(@Req() req: GatewayRequest, @Param('id') id: string) {
    return { data: await this.bus.request(req, P.getReservation, { id }, id) };
  }

  @Post('redemption-reservations/:id/confirm')
  @HttpCode(200)
  @RequireScopes('act')
  @Idempotent()
  async confirm(@Req() req: GatewayRequest, @Param('id') id: string, @Body() body: ConfirmDto) {
    return { data: await this.bus.request(req, P.confirmReservation, { id, order_ref: body.order_ref }, id) };
  }

  @Post('redemption-reservations/:id/release')
  @HttpCode(200)
  @RequireScopes('act')
  @Idempotent()
  async release(@Req() req: GatewayRequest, @Param('id') id: string) {
    return { data: await this.bus.request(req, P.releaseReservation, { id }, id) };
  }
}
