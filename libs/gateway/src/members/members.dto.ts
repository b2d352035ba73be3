import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsOmittable } from '../http/validation';
import { IsBoolean, IsEmail, IsIn, IsInt, IsNotEmpty, IsOptional, IsString, Max, MaxLength, Min, NotEquals } from 'class-validator';

export class EnrolMemberDto {
  @ApiProperty({ format: 'email', maxLength: 254 }) @IsEmail() @MaxLength(254) email!: string;
  @ApiPropertyOptional({ description: 'E.164 after normalisation' }) @IsOmittable() @IsString() @MaxLength(32) phone?: string;
  @ApiPropertyOptional({ maxLength: 128 }) @IsOmittable() @IsString() @IsNotEmpty() @MaxLength(128) external_ref?: string;
  @ApiPropertyOptional() @IsOmittable() @IsString() @MaxLength(64) accepted_terms_version?: string;
  @ApiPropertyOptional() @IsOmittable() @IsBoolean() marketing_consent?: boolean;
}

export class PatchMemberDto {
  @ApiPropertyOptional({ description: 'Refused: email anchors identity and never changes through the API' }) @IsOptional() email?: string;
  @ApiPropertyOptional() @IsOmittable() @IsString() @MaxLength(32) phone?: string;
  @ApiPropertyOptional({ maxLength: 128 }) @IsOmittable() @IsString() @IsNotEmpty() @MaxLength(128) external_ref?: string;
  @ApiPropertyOptional() @IsOmittable() @IsString() @MaxLength(64) accepted_terms_version?: string;
  @ApiPropertyOptional() @IsOmittable() @IsBoolean() marketing_consent?: boolean;
}

export class ResolveMemberDto {
  @ApiPropertyOptional({ format: 'email' }) @IsOmittable() @IsEmail() @MaxLength(254) email?: string;
  @ApiPropertyOptional() @IsOmittable() @IsString() @MaxLength(32) phone?: string;
  @ApiPropertyOptional() @IsOmittable() @IsString() @IsNotEmpty() @MaxLength(128) external_ref?: string;
}

export class ListMembersQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 25 }) @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(100) limit?: number;
  @ApiPropertyOptional() @IsOptional() @IsString() cursor?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() email?: string;
  @ApiPropertyOptional({ enum: ['prospect', 'registered', 'active', 'suspended', 'deleted'] })
  @IsOptional() @IsIn(['prospect', 'registered', 'active', 'suspended', 'deleted']) state?: string;
}

export class LedgerQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 200, default: 50 }) @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(200) limit?: number;
  @ApiPropertyOptional() @IsOptional() @IsString() cursor?: string;
}

export class AdjustDto {
  @ApiProperty({ description: 'Positive credit, negative debit, minor units (a safe integer)' })
  @IsInt() @NotEquals(0) @Min(-Number.MAX_SAFE_INTEGER) @Max(Number.MAX_SAFE_INTEGER) amount_cents!: number;
  @ApiProperty({ maxLength: 64 }) @IsString() @IsNotEmpty() @MaxLength(64) reason_code!: string;
  @ApiPropertyOptional({ maxLength: 1000 }) @IsOmittable() @IsString() @MaxLength(1000) note?: string;
  @ApiPropertyOptional({ maxLength: 255 }) @IsOmittable() @IsString() @MaxLength(255) idempotency_key?: string;
}
