import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PATTERNS } from '@loyalty/contracts';
import { WireHead, wipeTenantRows } from '@loyalty/event-store';
import { reply } from '@loyalty/messaging';
import { CreateEndpointInput, EndpointsService } from './endpoints/endpoints.service';
import { ExpiringSoonSweeper } from './expiring/expiring-soon.sweeper';
import { WEBHOOK_TENANT_TABLES } from './webhook.migrations';
import { WebhookContext } from './webhook.context';

type T = { tenant: string; actor?: string };
const P = PATTERNS.webhook;

/** The webhook service's bus adapter: one line per pattern. */
@Controller()
export class WebhookMessages {
  constructor(private readonly ctx: WebhookContext, private readonly endpoints: EndpointsService, private readonly sweeper: ExpiringSoonSweeper) {}

  @MessagePattern(P.list)
  list(@Payload() p: T) { return reply(() => this.endpoints.list(p.tenant)); }

  @MessagePattern(P.get)
  get(@Payload() p: T & { id: string }) { return reply(() => this.endpoints.get(p.tenant, p.id)); }

  @MessagePattern(P.create)
  create(@Payload() p: T & { body: CreateEndpointInput }) { return reply(() => this.endpoints.create(p.tenant, p.body)); }

  @MessagePattern(P.delete)
  delete(@Payload() p: T & { id: string }) { return reply(() => this.endpoints.delete(p.tenant, p.id)); }

  @MessagePattern(P.test)
  test(@Payload() p: T & { id: string }) { return reply(() => this.endpoints.test(p.tenant, p.id)); }

  @MessagePattern(P.deliveries)
  deliveries(@Payload() p: T & { id: string; query: { limit?: number; cursor?: string } }) {
    return reply(() => this.endpoints.deliveries(p.tenant, p.id, p.query ?? {}));
  }

  /** Expiring-soon notices now (the admin plane calls it right after a sandbox test clock moves). */
  @MessagePattern(P.sweep)
  sweep(@Payload() p: T) { return reply(async () => ({ lots: await this.sweeper.sweep(p.tenant) })); }

  /** The admin plane wiped a sandbox (the ledger deleted its streams): this service deletes its rows of it. */
  @MessagePattern(P.wipe)
  wipe(@Payload() p: T & { head?: WireHead | null }) {
    return reply(async () => ({ rows: await wipeTenantRows(this.ctx.store, this.ctx.pool, this.ctx.runner ? [this.ctx.runner] : [], WEBHOOK_TENANT_TABLES, p.tenant, p.head) }));
  }
}
