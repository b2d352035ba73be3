import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMinSize, IsArray, IsBoolean, IsIn, IsInt, IsISO8601, IsNotEmpty, IsNumber, IsObject, IsOptional, IsString, Max, MaxLength, Min, ValidateNested,
} from 'class-validator';
import { RULE_TYPES, TIER_METRICS, TIER_WINDOWS, TIMINGS } from '@loyalty/contracts';
import { IsOmittable } from '../http/validation';

/** Upper bounds where a column, a date or an earning would otherwise overflow (issue 8): refused as 422 at the door. */
export const MAX_EARN_RATE_PCT = 10_000; // 100 points per minor unit spent
export const MAX_EARN_MULTIPLIER = 100;
export const MAX_DAYS = 36_500; // a century
export const MAX_CLOCK_SECONDS = 315_360_000; // ten years (a test-clock step, a TTL)
export const MAX_INT4 = 2_147_483_647; // rate-limit columns are int

export class RuleDto {
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(64) id?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(128) name?: string;
  @ApiProperty({ enum: RULE_TYPES }) @IsIn(RULE_TYPES as unknown as string[]) type!: (typeof RULE_TYPES)[number];
  @ApiPropertyOptional({ description: 'Percent; held as basis points, so at most 2 decimals' }) @IsOptional() @IsNumber({ maxDecimalPlaces: 2, allowNaN: false, allowInfinity: false }) @Min(0) @Max(MAX_EARN_RATE_PCT) earn_rate_pct?: number;
  @ApiPropertyOptional({ enum: TIMINGS }) @IsOptional() @IsIn(TIMINGS as unknown as string[]) timing?: (typeof TIMINGS)[number];
  @ApiPropertyOptional() @IsOptional() @IsArray() @IsString({ each: true }) tags?: string[] | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) min_order_cents?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) cap_per_order_cents?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(1200) expiry_months?: number | null;
  @ApiPropertyOptional({ format: 'date-time' }) @IsOptional() @IsISO8601({ strict: true }) starts_at?: string | null;
  @ApiPropertyOptional({ format: 'date-time' }) @IsOptional() @IsISO8601({ strict: true }) ends_at?: string | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) budget_cents?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsIn(['base', 'category_boost']) applies_to?: 'base' | 'category_boost' | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) amount_cents?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) friend_amount_cents?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) version?: number;
}

export class CriterionDto {
  @ApiProperty({ enum: TIER_METRICS }) @IsIn(TIER_METRICS as unknown as string[]) metric!: (typeof TIER_METRICS)[number];
  @ApiProperty() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) threshold!: number;
}

export class TierDto {
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(64) name!: string;
  @ApiProperty() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) level!: number;
  @ApiPropertyOptional({ enum: TIER_METRICS }) @IsOptional() @IsIn(TIER_METRICS as unknown as string[]) threshold_type?: (typeof TIER_METRICS)[number];
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) threshold_value?: number;
  @ApiPropertyOptional({ type: [CriterionDto] }) @IsOptional() @IsArray() @IsObject({ each: true }) @ValidateNested({ each: true }) @Type(() => CriterionDto) criteria?: CriterionDto[];
  @ApiPropertyOptional({ enum: ['all', 'any'] }) @IsOptional() @IsIn(['all', 'any']) criteria_mode?: 'all' | 'any';
  @ApiPropertyOptional({ enum: TIER_WINDOWS }) @IsOptional() @IsIn(TIER_WINDOWS as unknown as string[]) window?: (typeof TIER_WINDOWS)[number];
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(1) @Max(MAX_DAYS) window_days?: number | null;
  @ApiPropertyOptional({ description: 'Held as basis points, so at most 4 decimals' }) @IsOptional() @IsNumber({ maxDecimalPlaces: 4, allowNaN: false, allowInfinity: false }) @Min(0) @Max(MAX_EARN_MULTIPLIER) earn_multiplier?: number;
  @ApiPropertyOptional() @IsOptional() @IsObject() benefits?: Record<string, unknown>;
}

export class ExpiryDto {
  @ApiProperty({ enum: ['none', 'fixed_days', 'end_of_period', 'inactivity'] }) @IsIn(['none', 'fixed_days', 'end_of_period', 'inactivity']) policy!: 'none' | 'fixed_days' | 'end_of_period' | 'inactivity';
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(1) @Max(MAX_DAYS) days?: number | null;
  @ApiPropertyOptional({ enum: ['month', 'quarter', 'year'] }) @IsOptional() @IsIn(['month', 'quarter', 'year']) period?: 'month' | 'quarter' | 'year' | null;
}

/** Programme settings (decisions §5, §6, §7): every key optional, unknown keys refused. */
export class SettingsDto {
  @ApiPropertyOptional({ enum: ['order.paid', 'order.placed', 'order.fulfilled'] }) @IsOptional() @IsIn(['order.paid', 'order.placed', 'order.fulfilled']) earn_on?: string;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(MAX_DAYS) return_window_days?: number;
  @ApiPropertyOptional({ enum: ['allow', 'block'] }) @IsOptional() @IsIn(['allow', 'block']) negative_balance?: string;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(1) @Max(MAX_DAYS) write_off_after_days?: number | null;
  @ApiPropertyOptional({ type: ExpiryDto }) @IsOptional() @IsObject() @ValidateNested() @Type(() => ExpiryDto) expiry?: ExpiryDto;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(MAX_DAYS) expiry_warning_days?: number;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) min_redeem_cents?: number;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(100) max_order_share_pct?: number;
  @ApiPropertyOptional() @IsOptional() @IsArray() @IsString({ each: true }) blocked_payment_methods?: string[];
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(1) @Max(MAX_CLOCK_SECONDS) voucher_ttl_seconds?: number;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(1) @Max(MAX_CLOCK_SECONDS) reservation_ttl_seconds?: number;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) referral_daily_limit?: number;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(2048) referral_link_template?: string | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(MAX_DAYS) erasure_grace_days?: number;
}

export class CreateProgramDto {
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(128) program_name!: string;
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(64) currency_name!: string;
  @ApiPropertyOptional({ type: SettingsDto }) @IsOptional() @IsObject() @ValidateNested() @Type(() => SettingsDto) settings?: SettingsDto;
  @ApiPropertyOptional({ type: [RuleDto] }) @IsOptional() @IsArray() @IsObject({ each: true }) @ValidateNested({ each: true }) @Type(() => RuleDto) rules?: RuleDto[];
  @ApiPropertyOptional({ type: [TierDto] }) @IsOptional() @IsArray() @IsObject({ each: true }) @ValidateNested({ each: true }) @Type(() => TierDto) tiers?: TierDto[];
}

export class PatchProgramDto {
  @ApiPropertyOptional() @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) program_name?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @IsNotEmpty() @MaxLength(64) currency_name?: string;
  @ApiPropertyOptional({ type: SettingsDto }) @IsOptional() @IsObject() @ValidateNested() @Type(() => SettingsDto) settings?: SettingsDto;
}

export class PutRulesDto {
  @ApiProperty({ type: [RuleDto] }) @IsArray() @IsObject({ each: true }) @ValidateNested({ each: true }) @Type(() => RuleDto) rules!: RuleDto[];
}
export class PutTiersDto {
  @ApiProperty({ type: [TierDto] }) @IsArray() @IsObject({ each: true }) @ValidateNested({ each: true }) @Type(() => TierDto) tiers!: TierDto[];
}

export class RateLimitDto {
  @ApiProperty({ maximum: MAX_INT4 }) @IsInt() @Min(1) @Max(MAX_INT4) burst!: number;
  @ApiProperty({ maximum: MAX_INT4 }) @IsInt() @Min(1) @Max(MAX_INT4) per_second!: number;
}

export class CreateKeyDto {
  @ApiProperty({ enum: ['live', 'test'] }) @IsIn(['live', 'test']) mode!: 'live' | 'test';
  @ApiPropertyOptional({ enum: ['ingest', 'read', 'act', 'webhooks'], isArray: true })
  @IsOmittable() @IsArray() @ArrayMinSize(1) @IsIn(['ingest', 'read', 'act', 'webhooks'], { each: true }) scopes?: ('ingest' | 'read' | 'act' | 'webhooks')[];
  @ApiPropertyOptional() @IsOmittable() @IsString() @MaxLength(128) name?: string;
  @ApiPropertyOptional({ type: RateLimitDto }) @IsOmittable() @IsObject() @ValidateNested() @Type(() => RateLimitDto) rate_limit?: RateLimitDto;
}

export class AdvanceClockDto {
  @ApiProperty({ maximum: MAX_CLOCK_SECONDS, description: 'At most ten years per call' }) @IsInt() @Min(1) @Max(MAX_CLOCK_SECONDS) seconds!: number;
}

/** GET /admin/v1/programs/{pid}/rejected-calls */
export class RejectedCallsQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 500, default: 100 }) @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(500) limit?: number;
}

export class ModeDto {
  @ApiPropertyOptional({ enum: ['live', 'test'] }) @IsOmittable() @IsIn(['live', 'test']) mode?: 'live' | 'test';
}

export class BooleanFlagDto {
  @ApiPropertyOptional() @IsOmittable() @IsBoolean() confirm?: boolean;
}
