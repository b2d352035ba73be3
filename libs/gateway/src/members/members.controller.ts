import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Pool } from 'pg';
import { PATTERNS, MemberView } from '@loyalty/contracts';
import { RequireScopes } from '../auth/auth.decorators';
import { Idempotent, forgetResponsesAbout } from '../idempotency/idempotency.interceptor';
import { PG_POOL } from '../tokens';
import { Bus } from '../http/bus';
import { GatewayRequest, headerOf } from '../http/request-context';
import { AdjustDto, EnrolMemberDto, LedgerQuery, ListMembersQuery, PatchMemberDto, ResolveMemberDto } from './members.dto';

const P = PATTERNS.ledger;

@ApiTags('members')
@ApiBearerAuth()
@Controller('v1/members')
export class MembersController {
  constructor(private readonly bus: Bus, @Inject(PG_POOL) private readonly pool: Pool) {}

  @Get()
  @RequireScopes('read')
  list(@Req() req: GatewayRequest, @Query() query: ListMembersQuery) {
    return this.bus.request(req, P.list, { query });
  }

  @Post()
  @RequireScopes('act')
  @Idempotent()
  async enrol(@Req() req: GatewayRequest, @Res({ passthrough: true }) res: FastifyReply, @Body() body: EnrolMemberDto) {
    // keyed by the identity anchor: enrolments of one email are serialised on one partition
    const r = await this.bus.request<{ created: boolean; member: MemberView }>(req, P.enrol, { body }, body.email.toLowerCase());
    res.status(r.created ? 201 : 200);
    return { data: r.member };
  }

  @Post('resolve')
  @RequireScopes('act')
  @Idempotent()
  async resolve(@Req() req: GatewayRequest, @Res({ passthrough: true }) res: FastifyReply, @Body() body: ResolveMemberDto) {
    const r = await this.bus.request<{ created: boolean; member: MemberView }>(req, P.resolve, { body }, body.email ?? body.phone ?? body.external_ref);
    res.status(r.created ? 201 : 200);
    return { data: r.member };
  }

  @Get(':id')
  @RequireScopes('read')
  async get(@Req() req: GatewayRequest, @Param('id') id: string) {
    return { data: await this.bus.request(req, P.get, { id }, id) };
  }

  @Patch(':id')
  @RequireScopes('act')
  @Idempotent()
  async patch(@Req() req: GatewayRequest, @Param('id') id: string, @Body() body: PatchMemberDto) {
    return { data: await this.bus.request(req, P.patch, { id, body }, id) };
  }

  @Delete(':id')
  @HttpCode(200)
  @RequireScopes('act')
  async erase(@Req() req: GatewayRequest, @Param('id') id: string) {
    // the identifiers the member was known by, read before they are destroyed: the events they sent carry them too
    const known = await this.bus.request<MemberView>(req, P.get, { id }, id);
    const member = await this.bus.request<MemberView>(req, P.erase, { id }, id);
    await forgetResponsesAbout(this.pool, req.auth!.tenant, member.id);
    if (known.email || known.phone || known.external_ref) {
      await this.bus.request(req, PATTERNS.ingest.erase, { email: known.email, phone: known.phone, external_ref: known.external_ref });
    }
    return { data: member };
  }

  @Get(':id/ledger')
  @RequireScopes('read')
  entries(@Req() req: GatewayRequest, @Param('id') id: string, @Query() query: LedgerQuery) {
    return this.bus.request(req, P.entries, { id, query }, id);
  }

  @Post(':id/adjust')
  @RequireScopes('act')
  @Idempotent()
  async adjust(@Req() req: GatewayRequest, @Param('id') id: string, @Body() body: AdjustDto) {
    const idempotency_key = body.idempotency_key ?? headerOf(req, 'idempotency-key');
    return { data: await this.bus.request(req, P.adjust, { id, body: { ...body, idempotency_key } }, id) };
  }
}
