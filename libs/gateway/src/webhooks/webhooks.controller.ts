import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { PATTERNS, WebhookEndpointView, WebhookTestResult } from '@loyalty/contracts';
import { RequireScopes } from '../auth/auth.decorators';
import { Idempotent } from '../idempotency/idempotency.interceptor';
import { Bus } from '../http/bus';
import { GatewayRequest } from '../http/request-context';
import { CreateWebhookEndpointDto, DeliveriesQuery } from './webhooks.dto';

const P = PATTERNS.webhook;

/** Webhook endpoints (interface-spec "Webhook endpoints", decisions §3 and §8). */
@ApiTags('webhooks')
@ApiBearerAuth()
@Controller('v1/webhook_endpoints')
export class WebhooksController {
  constructor(private readonly bus: Bus) {}

  @Get()
  @RequireScopes('read', 'webhooks')
  async list(@Req() req: GatewayRequest) {
    return { data: await this.bus.request<WebhookEndpointView[]>(req, P.list), pagination: { cursor: null } };
  }

  /** 201: the endpoint plus its signing secret, shown this once. */
  @Post()
  @RequireScopes('webhooks')
  @Idempotent()
  async create(@Req() req: GatewayRequest, @Body() body: CreateWebhookEndpointDto) {
    return { data: await this.bus.request<WebhookEndpointView>(req, P.create, { body }) };
  }

  @Get(':id')
  @RequireScopes('read', 'webhooks')
  async get(@Req() req: GatewayRequest, @Param('id') id: string) {
    return { data: await this.bus.request<WebhookEndpointView>(req, P.get, { id }) };
  }

  @Delete(':id')
  @HttpCode(204)
  @RequireScopes('webhooks')
  async delete(@Req() req: GatewayRequest, @Param('id') id: string): Promise<void> {
    await this.bus.request(req, P.delete, { id });
  }

  /** Sends a signed `webhook.test` delivery now: 200 `{delivery_id, status_code, ok, duration_ms}` whatever the receiver said. */
  @Post(':id/test')
  @HttpCode(200)
  @RequireScopes('webhooks')
  async test(@Req() req: GatewayRequest, @Param('id') id: string) {
    return { data: await this.bus.request<WebhookTestResult>(req, P.test, { id }) };
  }

  /** The endpoint's recent deliveries, newest first (status, attempts, last answer). */
  @Get(':id/deliveries')
  @RequireScopes('read', 'webhooks')
  deliveries(@Req() req: GatewayRequest, @Param('id') id: string, @Query() query: DeliveriesQuery) {
    return this.bus.request(req, P.deliveries, { id, query });
  }
}
