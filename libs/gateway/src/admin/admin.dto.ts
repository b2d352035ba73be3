import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMinSize, IsArray, IsBoolean, IsIn, IsInt, IsISO8601, IsNotEmpty, IsNumber, IsObject, IsOptional, IsString, Max, MaxLength, Min, ValidateNested,
} from 'class-validator';
import { RULE_TYPES, TIER_METRICS, TIER_WINDOWS, TIMINGS } from '@loyalty/contracts';

export class RuleDto {
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(64) id?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(128) name?: string;
  @ApiProperty({ enum: RULE_TYPES }) @IsIn(RULE_TYPES as unknown as string[]) type!: (typeof RULE_TYPES)[number];
  @ApiPropertyOptional({ description: 'Percent; held as basis points, so at most 2 decimals' }) @IsOptional() @IsNumber({ maxDecimalPlaces: 2, allowNaN: false, allowInfinity: false }) @Min(0) earn_rate_pct?: number;
  @ApiPropertyOptional({ enum: TIMINGS }) @IsOptional() @IsIn(TIMINGS as unknown as string[]) timing?: (typeof TIMINGS)[number];
  @ApiPropertyOptional() @IsOptional() @IsArray() @IsString({ each: true }) tags?: string[] | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) min_order_cents?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) cap_per_order_cents?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) expiry_months?: number | null;
  @ApiPropertyOptional({ format: 'date-time' }) @IsOptional() @IsISO8601({ strict: true }) starts_at?: string | null;
  @ApiPropertyOptional({ format: 'date-time' }) @IsOptional() @IsISO8601({ strict: true }) ends_at?: string | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) budget_cents?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsIn(['base', 'category_boost']) applies_to?: 'base' | 'category_boost' | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) amount_cents?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) friend_amount_cents?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() version?: number;
}

export class CriterionDto {
  @ApiProperty({ enum: TIER_METRICS }) @IsIn(TIER_METRICS as unknown as string[]) metric!: (typeof TIER_METRICS)[number];
  @ApiProperty() @IsInt() @Min(0) threshold!: number;
}

export class TierDto {
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(64) name!: string;
  @ApiProperty() @IsInt() @Min(0) level!: number;
  @ApiPropertyOptional({ enum: TIER_METRICS }) @IsOptional() @IsIn(TIER_METRICS as unknown as string[]) threshold_type?: (typeof TIER_METRICS)[number];
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) threshold_value?: number;
  @ApiPropertyOptional({ type: [CriterionDto] }) @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => CriterionDto) criteria?: CriterionDto[];
  @ApiPropertyOptional({ enum: ['all', 'any'] }) @IsOptional() @IsIn(['all', 'any']) criteria_mode?: 'all' | 'any';
  @ApiPropertyOptional({ enum: TIER_WINDOWS }) @IsOptional() @IsIn(TIER_WINDOWS as unknown as string[]) window?: (typeof TIER_WINDOWS)[number];
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(1) window_days?: number | null;
  @ApiPropertyOptional({ description: 'Held as basis points, so at most 4 decimals' }) @IsOptional() @IsNumber({ maxDecimalPlaces: 4, allowNaN: false, allowInfinity: false }) @Min(0) earn_multiplier?: number;
  @ApiPropertyOptional() @IsOptional() @IsObject() benefits?: Record<string, unknown>;
}

export class ExpiryDto {
  @ApiProperty({ enum: ['none', 'fixed_days', 'end_of_period', 'inactivity'] }) @IsIn(['none', 'fixed_days', 'end_of_period', 'inactivity']) policy!: 'none' | 'fixed_days' | 'end_of_period' | 'inactivity';
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(1) days?: number | null;
  @ApiPropertyOptional({ enum: ['month', 'quarter', 'year'] }) @IsOptional() @IsIn(['month', 'quarter', 'year']) period?: 'month' | 'quarter' | 'year' | null;
}

/** Programme settings (decisions §5, §6, §7): every key optional, unknown keys refused. */
export class SettingsDto {
  @ApiPropertyOptional({ enum: ['order.paid', 'order.placed', 'order.fulfilled'] }) @IsOptional() @IsIn(['order.paid', 'order.placed', 'order.fulfilled']) earn_on?: string;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) return_window_days?: number;
  @ApiPropertyOptional({ enum: ['allow', 'block'] }) @IsOptional() @IsIn(['allow', 'block']) negative_balance?: string;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(1) write_off_after_days?: number | null;
  @ApiPropertyOptional({ type: ExpiryDto }) @IsOptional() @ValidateNested() @Type(() => ExpiryDto) expiry?: ExpiryDto;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) expiry_warning_days?: number;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) min_redeem_cents?: number;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) @Max(100) max_order_share_pct?: number;
  @ApiPropertyOptional() @IsOptional() @IsArray() @IsString({ each: true }) blocked_payment_methods?: string[];
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(1) voucher_ttl_seconds?: number;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(1) reservation_ttl_seconds?: number;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) referral_daily_limit?: number;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(2048) referral_link_template?: string | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) erasure_grace_days?: number;
}

export class CreateProgramDto {
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(128) program_name!: string;
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(64) currency_name!: string;
  @ApiPropertyOptional({ type: SettingsDto }) @IsOptional() @IsObject() @ValidateNested() @Type(() => SettingsDto) settings?: SettingsDto;
  @ApiPropertyOptional({ type: [RuleDto] }) @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => RuleDto) rules?: RuleDto[];
  @ApiPropertyOptional({ type: [TierDto] }) @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => TierDto) tiers?: TierDto[];
}

export class PatchProgramDto {
  @ApiPropertyOptional() @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) program_name?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @IsNotEmpty() @MaxLength(64) currency_name?: string;
  @ApiPropertyOptional({ type: SettingsDto }) @IsOptional() @IsObject() @ValidateNested() @Type(() => SettingsDto) settings?: SettingsDto;
}

export class PutRulesDto {
  @ApiProperty({ type: [RuleDto] }) @IsArray() @ValidateNested({ each: true }) @Type(() => RuleDto) rules!: RuleDto[];
}
export class PutTiersDto {
  @ApiProperty({ type: [TierDto] }) @IsArray() @ValidateNested({ each: true }) @Type(() => TierDto) tiers!: TierDto[];
}

export class RateLimitDto {
  @ApiProperty() @IsInt() @Min(1) burst!: number;
  @ApiProperty() @IsInt() @Min(1) per_second!: number;
}

export class CreateKeyDto {
  @ApiProperty({ enum: ['live', 'test'] }) @IsIn(['live', 'test']) mode!: 'live' | 'test';
  @ApiPropertyOptional({ enum: ['ingest', 'read', 'act', 'webhooks'], isArray: true })
  @IsOptional() @IsArray() @ArrayMinSize(1) @IsIn(['ingest', 'read', 'act', 'webhooks'], { each: true }) scopes?: ('ingest' | 'read' | 'act' | 'webhooks')[];
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(128) name?: string;
  @ApiPropertyOptional({ type: RateLimitDto }) @IsOptional() @ValidateNested() @Type(() => RateLimitDto) rate_limit?: RateLimitDto;
}

export class AdvanceClockDto {
  @ApiProperty() @IsInt() @Min(1) seconds!: number;
}

export class ModeDto {
  @ApiPropertyOptional({ enum: ['live', 'test'] }) @IsOptional() @IsIn(['live', 'test']) mode?: 'live' | 'test';
}

export class BooleanFlagDto {
  @ApiPropertyOptional() @IsOptional() @IsBoolean() confirm?: boolean;
}
