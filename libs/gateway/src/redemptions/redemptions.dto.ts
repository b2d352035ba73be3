import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsIn, IsInt, IsNotEmpty, IsOptional, IsString, Max, MaxLength, Min, ValidateIf } from 'class-validator';

const MAX_CENTS = Number.MAX_SAFE_INTEGER;

export class CreateRedemptionDto {
  @ApiProperty({ minimum: 1, description: 'Minor units to debit now' }) @IsInt() @Min(1) @Max(MAX_CENTS) amount_cents!: number;
  @ApiPropertyOptional({ enum: ['voucher', 'direct'], default: 'voucher' }) @IsOptional() @IsIn(['voucher', 'direct']) mode?: 'voucher' | 'direct';
  @ApiPropertyOptional({ maxLength: 128, description: 'Required when mode is direct' })
  @ValidateIf((o: CreateRedemptionDto) => o.mode === 'direct' || (o.order_ref !== undefined && o.order_ref !== null))
  @IsDefined({ message: 'order_ref is required when mode is direct' }) @IsString() @IsNotEmpty() @MaxLength(128)
  order_ref?: string | null;
}

export class ConfirmDto {
  @ApiProperty({ maxLength: 128 }) @IsDefined() @IsString() @IsNotEmpty() @MaxLength(128) order_ref!: string;
}

export class RedemptionByCodeQuery {
  @ApiProperty({ description: 'Voucher code RWD-XXXX-XXXX' }) @IsDefined() @IsString() @IsNotEmpty() @MaxLength(64) code!: string;
}

export class QuoteDto {
  @ApiProperty({ description: 'M-…, ref:<external_ref> or phone:<E.164>' }) @IsDefined() @IsString() @IsNotEmpty() @MaxLength(300) member_id!: string;
  @ApiProperty({ minimum: 0 }) @IsInt() @Min(0) @Max(MAX_CENTS) eligible_total_cents!: number;
  @ApiPropertyOptional({ maxLength: 64 }) @IsOptional() @IsString() @MaxLength(64) payment_method?: string;
}

export class ReserveDto {
  @ApiProperty({ description: 'M-…, ref:<external_ref> or phone:<E.164>' }) @IsDefined() @IsString() @IsNotEmpty() @MaxLength(300) member_id!: string;
  @ApiProperty({ minimum: 1 }) @IsInt() @Min(1) @Max(MAX_CENTS) amount_cents!: number;
  @ApiPropertyOptional({ maxLength: 128 }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) cart_ref?: string;
  @ApiPropertyOptional({ minimum: 0, description: 'Checked against max_order_share_pct' }) @IsOptional() @IsInt() @Min(0) @Max(MAX_CENTS) eligible_total_cents?: number;
  @ApiPropertyOptional({ maxLength: 64 }) @IsOptional() @IsString() @MaxLength(64) payment_method?: string;
}
