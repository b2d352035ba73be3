import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiExtraModels, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { PATTERNS } from '@loyalty/contracts';
import type { BatchEventResult, EventAccepted, EventStatus, SubmitEventsReply } from '@loyalty/contracts';
import type { Page } from '@loyalty/platform';
import { RequireScopes } from '../auth/auth.decorators';
import { Bus } from '../http/bus';
import { GatewayRequest, headerOf } from '../http/request-context';
import {
  CustomerEventDto, EventBatchDto, ListEventsQueryDto, OrderAmountEventDto, OrderCancelledEventDto, OrderRefundedEventDto,
} from './events.dto';
import { parseSubmission } from './events.validation';

const P = PATTERNS.ingest;

/** Commerce events in (scope `ingest`), their status out (scope `read`). Processing is asynchronous. */
@ApiTags('events')
@ApiBearerAuth()
@ApiExtraModels(CustomerEventDto, OrderAmountEventDto, OrderCancelledEventDto, OrderRefundedEventDto, EventBatchDto)
@Controller('v1/events')
export class EventsController {
  constructor(private readonly bus: Bus) {}

  /**
   * 202 with EventAccepted (single) or BatchEventResult[] (batch); 200 with `replayed: true` when a
   * single event's key is already known. The body is validated here, per event type, because its
   * shape depends on `type` (the global pipe sees `unknown` and leaves it alone).
   */
  @Post()
  @HttpCode(202)
  @RequireScopes('ingest')
  @ApiResponse({ status: 202, description: 'Accepted for asynchronous processing: EventAccepted (single) or BatchEventResult[] (batch)' })
  @ApiResponse({ status: 200, description: "A single event whose idempotency key is known: the original's EventAccepted with replayed: true" })
  @ApiResponse({ status: 422, description: 'Validation failed (JSON-pointer paths such as /events/3/gross_cents); nothing was accepted' })
  @ApiResponse({ status: 429, description: 'Rate limited, or the backlog is full (reason: backlog); nothing was accepted; see Retry-After' })
  @ApiBody({
    schema: {
      oneOf: [CustomerEventDto, OrderAmountEventDto, OrderCancelledEventDto, OrderRefundedEventDto, EventBatchDto]
        .map((c) => ({ $ref: getSchemaPath(c) })),
    },
  })
  async submit(@Req() req: GatewayRequest, @Res({ passthrough: true }) res: FastifyReply, @Body() body: unknown) {
    const parsed = parseSubmission(body, headerOf(req, 'idempotency-key'));
    const { results } = await this.bus.request<SubmitEventsReply>(req, P.submit, { events: parsed.events });
    if (parsed.mode === 'single') {
      const accepted: EventAccepted = results[0];
      res.status(accepted.replayed ? 200 : 202);
      return { data: accepted };
    }
    res.status(202);
    const data: BatchEventResult[] = results.map((r, index) => ({
      index, accepted: true, id: r.id, status: r.status, replayed: r.replayed, errors: [],
    }));
    return { data };
  }

  @Get()
  @RequireScopes('read')
  list(@Req() req: GatewayRequest, @Query() query: ListEventsQueryDto): Promise<Page<EventStatus>> {
    return this.bus.request<Page<EventStatus>>(req, P.list, { query });
  }

  @Get(':id')
  @RequireScopes('read')
  async get(@Req() req: GatewayRequest, @Param('id') id: string) {
    return { data: await this.bus.request<EventStatus>(req, P.get, { id }) };
  }
}
