import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { PATTERNS, ProgramSettings, Rule, Tier } from '@loyalty/contracts';
import { tenantKey, validation } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { AdminOnly } from '../auth/auth.decorators';
import { ApiKeysService } from '../auth/api-keys.service';
import { Bus } from '../http/bus';
import { RejectedCallLog } from '../http/rejected-call.log';
import { publicProgram } from '../program/program.controller';
import { AdvanceClockDto, CreateKeyDto, CreateProgramDto, ModeDto, PatchProgramDto, PutRulesDto, PutTiersDto, RejectedCallsQuery } from './admin.dto';

/** A validated DTO as plain JSON: class instances carry every declared field, unset ones as undefined, which must not overwrite stored settings. */
const plain = <T extends object>(o: T | undefined): Partial<T> | undefined => (o === undefined ? undefined : JSON.parse(JSON.stringify(o)));

/** A rule's id names it across versions; two rules with one id would make versions ambiguous. */
const assertUniqueRuleIds = (rules: { id?: string }[]): void => {
  const seen = new Set<string>();
  const errors = rules.flatMap((r, i) => {
    const id = r.id ?? `rule_${i + 1}`;
    if (seen.has(id)) return [{ path: `/rules/${i}/id`, message: `duplicate rule id ${id}` }];
    seen.add(id);
    return [];
  });
  if (errors.length) throw validation(errors);
};

/** The admin plane (decisions §10), authenticated by LOYALTY_ADMIN_TOKEN. */
@ApiTags('admin')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/v1')
export class AdminController {
  constructor(
    private readonly programs: ProgramStore,
    private readonly keys: ApiKeysService,
    private readonly bus: Bus,
    private readonly rejected: RejectedCallLog,
  ) {}

  @Post('programs')
  async create(@Body() body: CreateProgramDto) {
    assertUniqueRuleIds(body.rules ?? []);
    const p = await this.programs.create({
      program_name: body.program_name, currency_name: body.currency_name,
      settings: plain(body.settings) as Partial<ProgramSettings> | undefined,
      rules: plain(body.rules) as Partial<Rule>[] | undefined, tiers: plain(body.tiers) as Partial<Tier>[] | undefined,
    });
    const [live, test] = await Promise.all([this.keys.issue(p.id, 'live'), this.keys.issue(p.id, 'test')]);
    const shown = (k: typeof live) => ({ id: k.id, key: k.key, scopes: k.scopes });
    return { data: { ...publicProgram(p), created_at: p.created_at, keys: { live: shown(live), test: shown(test) } } };
  }

  @Get('programs/:pid')
  async get(@Param('pid') pid: string) {
    const p = await this.programs.get(pid);
    return { data: { ...publicProgram(p), created_at: p.created_at, updated_at: p.updated_at, keys: await this.keys.list(pid) } };
  }

  @Patch('programs/:pid')
  async patch(@Param('pid') pid: string, @Body() body: PatchProgramDto) {
    return { data: publicProgram(await this.programs.patch(pid, { ...plain(body), settings: plain(body.settings) as Partial<ProgramSettings> | undefined })) };
  }

  @Put('programs/:pid/rules')
  async rules(@Param('pid') pid: string, @Body() body: PutRulesDto) {
    assertUniqueRuleIds(body.rules);
    return { data: publicProgram(await this.programs.putRules(pid, plain(body.rules) as Partial<Rule>[])) };
  }

  @Put('programs/:pid/tiers')
  async tiers(@Param('pid') pid: string, @Body() body: PutTiersDto) {
    return { data: publicProgram(await this.programs.putTiers(pid, plain(body.tiers) as Partial<Tier>[])) };
  }

  @Post('programs/:pid/keys')
  async createKey(@Param('pid') pid: string, @Body() body: CreateKeyDto) {
    await this.programs.get(pid);
    return { data: await this.keys.issue(pid, body.mode, body.scopes, body.name ?? null, body.rate_limit) };
  }

  @Get('programs/:pid/keys')
  async listKeys(@Param('pid') pid: string) {
    await this.programs.get(pid);
    return { data: await this.keys.list(pid) };
  }

  @Post('keys/:kid/rotate')
  async rotate(@Param('kid') kid: string) {
    return { data: await this.keys.rotate(kid) };
  }

  @Delete('keys/:kid')
  @HttpCode(200)
  async revoke(@Param('kid') kid: string) {
    await this.keys.revoke(kid);
    return { data: { id: kid, revoked: true } };
  }

  @Post('programs/:pid/test-clock/advance')
  @HttpCode(200)
  async advance(@Param('pid') pid: string, @Body() body: AdvanceClockDto) {
    await this.programs.get(pid);
    const now = await this.programs.advanceTestClock(pid, body.seconds);
    const tenant = tenantKey({ programId: pid, mode: 'test' });
    // every time-based behaviour of the sandbox follows the clock at once
    const swept = await Promise.allSettled([
      this.bus.requestAs(tenant, PATTERNS.ledger.sweep, {}),
      this.bus.requestAs(tenant, PATTERNS.redemption.sweep, {}),
      this.bus.requestAs(tenant, PATTERNS.webhook.sweep, {}),
    ]);
    return { data: { program_id: pid, mode: 'test', now: now.toISOString(), sweeps: swept.map((s) => s.status) } };
  }

  @Get('programs/:pid/rejected-calls')
  async rejectedCalls(@Param('pid') pid: string, @Query() query: RejectedCallsQuery) {
    await this.programs.get(pid);
    return { data: await this.rejected.list(pid, query.limit ?? 100) };
  }

  @Post('members/:id/:command')
  @HttpCode(200)
  async memberState(@Param('id') id: string, @Param('command') command: string, @Body() body: ModeDto) {
    if (!['suspend', 'reinstate', 'pause', 'resume'].includes(command)) {
      const { problem } = await import('@loyalty/platform');
      throw problem('not-found', `unknown member command ${command}`);
    }
    return { data: await this.bus.requestAs('*', PATTERNS.ledger.memberState, { id, command, mode: body.mode }) };
  }
}
