import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsDefined, IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { WEBHOOK_EVENT_KINDS } from '@loyalty/contracts';

/**
 * POST /v1/webhook_endpoints. Only the shape is checked here; the webhook service checks each event
 * kind (path `/events/<i>`) and the URL rules (https, loopback http in test mode, SSRF) in one pass.
 */
export class CreateWebhookEndpointDto {
  @ApiProperty({ format: 'uri', maxLength: 2048, description: 'https URL (http only for a loopback host with a test key)' })
  @IsDefined() @IsString() @MaxLength(2048)
  url!: string;

  @ApiProperty({ type: 'array', items: { type: 'string', enum: [...WEBHOOK_EVENT_KINDS] }, minItems: 1 })
  @IsDefined() @IsArray() @ArrayMaxSize(64)
  events!: string[];
}

export class DeliveriesQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 25 }) @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(100) limit?: number;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(512) cursor?: string;
}
