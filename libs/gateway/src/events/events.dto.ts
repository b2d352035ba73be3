import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize, IsArray, IsBoolean, IsEmail, IsIn, IsInt, IsNotEmpty, IsNumber, IsObject, IsOptional, IsString, Max, MaxLength, Min,
  ValidateBy, ValidateNested, ValidationOptions, buildMessage,
} from 'class-validator';
import { EVENT_STATUSES, INBOUND_EVENT_TYPES, ORDER_AMOUNT_EVENT_TYPES } from '@loyalty/contracts';

/** Amounts are JSON numbers checked with Number.isSafeInteger (style §8): no floats, no 1e300. */
export const IsSafeInteger = (options?: ValidationOptions): PropertyDecorator =>
  ValidateBy({
    name: 'isSafeInteger',
    validator: {
      validate: (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v),
      defaultMessage: buildMessage((each) => `${each}$property must be an integer (minor units)`, options),
    },
  }, options);

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;
/** An ISO 8601 date-time with a time zone (`2025-01-31T12:00:00Z`, `…+05:30`). */
export const IsDateTime = (options?: ValidationOptions): PropertyDecorator =>
  ValidateBy({
    name: 'isDateTime',
    validator: {
      validate: (v: unknown) => typeof v === 'string' && DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)),
      defaultMessage: buildMessage((each) => `${each}$property must be an ISO 8601 date-time with a time zone`, options),
    },
  }, options);

export class CustomerIdentifiersDto {
  @ApiPropertyOptional({ format: 'email', maxLength: 254 }) @IsOptional() @IsEmail() @MaxLength(254) email?: string;
  @ApiPropertyOptional({ maxLength: 32 }) @IsOptional() @IsString() @MaxLength(32) phone?: string;
  @ApiPropertyOptional({ maxLength: 128 }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) external_ref?: string;
}

export class OrderLineDto {
  @ApiProperty({ minimum: 0 }) @IsSafeInteger() @Min(0) amount_cents!: number;
  @ApiPropertyOptional({ maxLength: 128 }) @IsOptional() @IsString() @MaxLength(128) product_ref?: string;
  @ApiPropertyOptional({ minimum: 1, default: 1 }) @IsOptional() @IsSafeInteger() @Min(1) quantity?: number;
  @ApiPropertyOptional({ default: false }) @IsOptional() @IsBoolean() gift_card?: boolean;
  @ApiPropertyOptional({ type: [String], maxItems: 32, description: 'Category tags for tag-based rules, each at most 64 characters' })
  @IsOptional() @IsArray() @ArrayMaxSize(32) @IsString({ each: true }) @MaxLength(64, { each: true }) tags?: string[];
}

/** Fields every inbound event has. */
export class InboundEventBaseDto {
  @ApiProperty({ enum: INBOUND_EVENT_TYPES }) @IsIn(INBOUND_EVENT_TYPES) type!: string;
  @ApiPropertyOptional({ maxLength: 128, description: 'Your id of the event: its idempotency key when there is no Idempotency-Key header (always, in a batch)' })
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) id?: string;
  @ApiPropertyOptional({ format: 'date-time' }) @IsOptional() @IsDateTime() occurred_at?: string;
}

/** customer.created, customer.updated */
export class CustomerEventDto extends InboundEventBaseDto {
  @ApiProperty({ format: 'email', maxLength: 254 }) @IsEmail() @MaxLength(254) email!: string;
  @ApiPropertyOptional({ maxLength: 32 }) @IsOptional() @IsString() @MaxLength(32) phone?: string;
  @ApiPropertyOptional({ maxLength: 128 }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) external_ref?: string;
}

/** What every order event may carry: the order, its customer, its version. */
export class OrderEventBaseDto extends InboundEventBaseDto {
  @ApiProperty({ maxLength: 128 }) @IsString() @IsNotEmpty() @MaxLength(128) order_ref!: string;
  @ApiPropertyOptional({ format: 'email', maxLength: 254 }) @IsOptional() @IsEmail() @MaxLength(254) email?: string;
  @ApiPropertyOptional({ maxLength: 32 }) @IsOptional() @IsString() @MaxLength(32) phone?: string;
  @ApiPropertyOptional({ maxLength: 128, description: "The caller's own customer id" }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) customer_ref?: string;
  @ApiPropertyOptional({ type: () => CustomerIdentifiersDto })
  @IsOptional() @IsObject() @ValidateNested() @Type(() => CustomerIdentifiersDto) customer?: CustomerIdentifiersDto;
  @ApiPropertyOptional({ description: 'Only rises per order; an older version never overwrites a newer one' })
  @IsOptional() @IsNumber({ allowNaN: false, allowInfinity: false }) aggregate_version?: number;
}

/** order.placed, order.paid, order.fulfilled, order.delivered */
export class OrderAmountEventDto extends OrderEventBaseDto {
  @ApiProperty({ minimum: 0, description: 'The amount points are earned on, minor units' }) @IsSafeInteger() @Min(0) gross_cents!: number;
  @ApiPropertyOptional({ type: () => [OrderLineDto], maxItems: 500 })
  @IsOptional() @IsArray() @ArrayMaxSize(500) @ValidateNested({ each: true }) @Type(() => OrderLineDto) lines?: OrderLineDto[];
  @ApiPropertyOptional({ minimum: 0 }) @IsOptional() @IsSafeInteger() @Min(0) tax_cents?: number;
  @ApiPropertyOptional({ maxLength: 16 }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(16) currency?: string;
  @ApiPropertyOptional({ maxLength: 64 }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(64) payment_method?: string;
  @ApiPropertyOptional({ maxLength: 128, description: 'Confirms that reservation when the order lands' })
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) reservation_id?: string;
}

/** order.cancelled */
export class OrderCancelledEventDto extends OrderEventBaseDto {}

/** order.refunded */
export class OrderRefundedEventDto extends OrderEventBaseDto {
  @ApiProperty({ maxLength: 128 }) @IsString() @IsNotEmpty() @MaxLength(128) refund_ref!: string;
  @ApiProperty({ minimum: 1 }) @IsSafeInteger() @Min(1) refunded_cents!: number;
}

/** The DTO class for each inbound type. */
export const EVENT_DTO_BY_TYPE: Record<(typeof INBOUND_EVENT_TYPES)[number], new () => InboundEventBaseDto> = {
  'customer.created': CustomerEventDto,
  'customer.updated': CustomerEventDto,
  ...(Object.fromEntries(ORDER_AMOUNT_EVENT_TYPES.map((t) => [t, OrderAmountEventDto])) as Record<(typeof ORDER_AMOUNT_EVENT_TYPES)[number], typeof OrderAmountEventDto>),
  'order.cancelled': OrderCancelledEventDto,
  'order.refunded': OrderRefundedEventDto,
};

/** GET /v1/events */
export class ListEventsQueryDto {
  @ApiPropertyOptional({ enum: EVENT_STATUSES }) @IsOptional() @IsIn(EVENT_STATUSES) status?: (typeof EVENT_STATUSES)[number];
  @ApiPropertyOptional({ maxLength: 128 }) @IsOptional() @IsString() @MaxLength(128) order_ref?: string;
  @ApiPropertyOptional({ enum: INBOUND_EVENT_TYPES }) @IsOptional() @IsIn(INBOUND_EVENT_TYPES) type?: (typeof INBOUND_EVENT_TYPES)[number];
  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 25 }) @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(100) limit?: number;
  @ApiPropertyOptional() @IsOptional() @IsString() cursor?: string;
}

/** Batch body, for the OpenAPI document (the controller validates each event by its type). */
export class EventBatchDto {
  @ApiProperty({ type: 'array', minItems: 1, maxItems: 100, items: { type: 'object' }, description: 'Events of any inbound type; give each an `id`' })
  events!: Record<string, unknown>[];
}
