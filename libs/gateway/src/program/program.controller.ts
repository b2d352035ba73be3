import { Controller, Get, Header, Query, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { PATTERNS, Program } from '@loyalty/contracts';
import { ProgramStore } from '@loyalty/programs';
import { RequireScopes } from '../auth/auth.decorators';
import { Bus } from '../http/bus';
import { GatewayRequest } from '../http/request-context';
import { LiabilityQuery } from '../finance/finance.dto';

const publicProgram = (p: Program) => ({
  id: p.id, program_name: p.program_name, currency_name: p.currency_name, rules: p.rules, tiers: p.tiers, settings: p.settings,
});

@ApiTags('programme')
@ApiBearerAuth()
@Controller('v1')
export class ProgramController {
  constructor(private readonly programs: ProgramStore, private readonly bus: Bus) {}

  @Get('ping')
  ping(@Req() req: GatewayRequest) {
    return { data: { pong: true, mode: req.auth!.mode, scopes: req.auth!.scopes, program_id: req.auth!.programId } };
  }

  @Get('programs')
  @RequireScopes('read')
  async program(@Req() req: GatewayRequest) {
    return { data: publicProgram(await this.programs.get(req.auth!.programId)) };
  }

  @Get('programmes')
  @RequireScopes('read')
  programme(@Req() req: GatewayRequest) {
    return this.program(req);
  }

  @Get('tenant/liability')
  @RequireScopes('read')
  @Header('Cache-Control', 'max-age=30')
  async liability(@Req() req: GatewayRequest, @Query() query: LiabilityQuery) {
    // without as_of: today's cached figure; with it: the liability as it stood then (decisions §9a)
    return { data: await this.bus.request(req, PATTERNS.ledger.liabilityAsOf, { as_of: query.as_of }) };
  }
}

export { publicProgram };
