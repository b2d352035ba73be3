import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMinSize, IsArray, IsBoolean, IsIn, IsInt, IsNotEmpty, IsNumber, IsObject, IsOptional, IsString, MaxLength, Min, ValidateNested,
} from 'class-validator';
import { RULE_TYPES, TIER_METRICS, TIER_WINDOWS, TIMINGS } from '@loyalty/contracts';

export class RuleDto {
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(64) id?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(128) name?: string;
  @ApiProperty({ enum: RULE_TYPES }) @IsIn(RULE_TYPES as unknown as string[]) type!: (typeof RULE_TYPES)[number];
  @ApiPropertyOptional() @IsOptional() @IsNumber() @Min(0) earn_rate_pct?: number;
  @ApiPropertyOptional({ enum: TIMINGS }) @IsOptional() @IsIn(TIMINGS as unknown as string[]) timing?: (typeof TIMINGS)[number];
  @ApiPropertyOptional() @IsOptional() @IsArray() @IsString({ each: true }) tags?: string[] | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) min_order_cents?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) cap_per_order_cents?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsInt() @Min(0) expiry_months?: number | null;
  @ApiPropertyOptional() @IsOptional() @IsString() starts_at?: string | null;
  @ApiPropertyOptional() @IsOptional() @IsString() ends_at?: string | null;
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
  @ApiPropertyOptional() @IsOptional() @IsNumber() @Min(0) earn_multiplier?: number;
  @ApiPropertyOptional() @IsOptional() @IsObject() benefits?: Record<string, unknown>;
}

export class CreateProgramDto {
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(128) program_name!: string;
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(64) currency_name!: string;
  @ApiPropertyOptional() @IsOptional() @IsObject() settings?: Record<string, unknown>;
  @ApiPropertyOptional({ type: [RuleDto] }) @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => RuleDto) rules?: RuleDto[];
  @ApiPropertyOptional({ type: [TierDto] }) @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => TierDto) tiers?: TierDto[];
}

export class PatchProgramDto {
  @ApiPropertyOptional() @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) program_name?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @IsNotEmpty() @MaxLength(64) currency_name?: string;
  @ApiPropertyOptional() @IsOptional() @IsObject() settings?: Record<string, unknown>;
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
