import { Body, Controller, Delete, Headers, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize, ArrayMinSize, IsArray, IsEmail, IsIn, IsInt, IsISO8601, IsNotEmpty, IsOptional, IsString, MaxLength, Min, ValidateNested,
} from 'class-validator';
import { PATTERNS } from '@loyalty/contracts';
import { Pool } from 'pg';
import { deleteTenantRows, tenantKey, validation } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { AdminOnly } from '../auth/auth.decorators';
import { Bus } from '../http/bus';
import { RejectedCallLog } from '../http/rejected-call.log';
import { PG_POOL } from '../tokens';

export class MigrationEntryDto {
  @ApiProperty({ format: 'email', maxLength: 254 }) @IsEmail() @MaxLength(254) email!: string;
  @ApiPropertyOptional({ description: 'E.164' }) @IsOptional() @IsString() @MaxLength(32) phone?: string;
  @ApiPropertyOptional({ maxLength: 128 }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) external_ref?: string;
  @ApiProperty({ description: 'Balance carried over, minor units, at least 1' }) @IsInt() @Min(1) amount_cents!: number;
  @ApiPropertyOptional({ format: 'date-time', description: 'When the migrated points expire; default: the programme expiry policy from the import' })
  @IsOptional() @IsISO8601({ strict: true }) expires_at?: string;
}

export class MigrationImportDto {
  @ApiPropertyOptional({ enum: ['live', 'test'], default: 'live' }) @IsOptional() @IsIn(['live', 'test']) mode?: 'live' | 'test';
  @ApiProperty({ type: [MigrationEntryDto], minItems: 1, maxItems: 10000 })
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(10000) @ValidateNested({ each: true }) @Type(() => MigrationEntryDto) entries!: MigrationEntryDto[];
}

/**
 * Admin plane, programme-level ledger operations (decisions §10): migration import and batch
 * reversal, and the sandbox wipe. (The test clock lives in AdminController.)
 */
@ApiTags('admin')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/v1')
export class LedgerTimeAdminController {
  constructor(
    private readonly programs: ProgramStore,
    private readonly bus: Bus,
    private readonly rejected: RejectedCallLog,
    @Inject(PG_POOL) private readonly pool: Pool,
  ) {}

  /** 201 `{batch_id, imported, members_created}`; an Idempotency-Key makes a retry land in the same batch. */
  @Post('programs/:pid/migrations')
  @ApiHeader({ name: 'Idempotency-Key', required: false })
  async importMigration(@Param('pid') pid: string, @Body() body: MigrationImportDto, @Headers('idempotency-key') key?: string) {
    await this.programs.get(pid);
    if (key !== undefined && (key.length === 0 || key.length > 255)) {
      throw validation([{ path: '/headers/idempotency-key', message: 'Idempotency-Key must be 1 to 255 characters' }]);
    }
    const tenant = tenantKey({ programId: pid, mode: body.mode ?? 'live' });
    return { data: await this.bus.requestAs(tenant, PATTERNS.ledger.migrate, { entries: body.entries, idempotency_key: key ?? null }) };
  }

  /** Reverses every entry of the batch (a `reverse` entry each); repeating it is a 200 that reverses nothing more. */
  @Delete('migrations/:batch_id')
  @HttpCode(200)
  async reverseMigration(@Param('batch_id') batchId: string) {
    return { data: await this.bus.requestAs('*', PATTERNS.ledger.reverseMigration, { batch_id: batchId }, batchId) };
  }

  /** Deletes the sandbox's members, ledgers, events and read models; the live programme, keys, rules and tiers stay. */
  @Post('programs/:pid/sandbox/wipe')
  @HttpCode(200)
  async wipeSandbox(@Param('pid') pid: string) {
    await this.programs.get(pid);
    const tenant = tenantKey({ programId: pid, mode: 'test' });
    // each owner wipes its own part: the ledger the sandbox's streams and its rows first (no service
    // sees the sandbox's events after that), then every other service its rows and caches, then the
    // gateway its idempotency records and rejected calls, and the programme store the test clock
    const ledger = await this.bus.requestAs<{ head?: { commit: string; prepare: string } }>(tenant, PATTERNS.ledger.wipe, {});
    // the head before the streams went: each service's runners get past it before its rows are deleted
    const head = ledger?.head ?? null;
    await Promise.all([PATTERNS.ingest.wipe, PATTERNS.referral.wipe, PATTERNS.redemption.wipe, PATTERNS.webhook.wipe].map((p) => this.bus.requestAs(tenant, p, { head })));
    await deleteTenantRows(this.pool, ['gateway.idempotency'], tenant);
    await this.rejected.forgetSandbox(pid);
    await this.programs.resetTestClock(pid);
    return { data: { wiped: true, program_id: pid, mode: 'test' } };
  }
}
