import { Pool } from 'pg';
import { IsNull } from 'typeorm';
import type { WebhookEndpointView, WebhookEventKind } from '@loyalty/contracts';
import { Queryable, configOrm } from '@loyalty/platform';
import { WebhookEndpoint } from './webhook-endpoint.entity';

export type EndpointRow = WebhookEndpoint;

/** An active endpoint as the event projection sees it. */
export interface Subscriber { id: string; events: WebhookEventKind[]; created_at: Date }

export const endpointView = (r: EndpointRow): WebhookEndpointView => ({
  id: r.id,
  url: r.url,
  events: r.events,
  status: r.status,
  failure_count: r.failure_count,
  disabled_at: r.disabled_at ? r.disabled_at.toISOString() : null,
  created_at: r.created_at.toISOString(),
});

/**
 * webhook.endpoints: registration, listing and soft deletion (deliveries keep their history), through
 * the `WebhookEndpoint` entity; the fan-out read stays SQL inside the projection's transaction.
 */
export class EndpointsRepository {
  constructor(private readonly pool: Pool) {}

  private async endpoints() {
    return (await configOrm(this.pool)).getRepository(WebhookEndpoint);
  }

  async insert(tenant: string, e: { id: string; url: string; events: WebhookEventKind[]; secret: string }): Promise<EndpointRow> {
    const repo = await this.endpoints();
    const { raw } = await repo.createQueryBuilder().insert().values({ tenant, id: e.id, url: e.url, events: e.events, secret: e.secret }).returning('*').execute();
    return repo.create((raw as WebhookEndpoint[])[0]);
  }

  async list(tenant: string): Promise<EndpointRow[]> {
    return (await this.endpoints()).find({ where: { tenant, deleted_at: IsNull() }, order: { created_at: 'ASC', id: 'ASC' } });
  }

  async find(tenant: string, id: string): Promise<EndpointRow | null> {
    return (await this.endpoints()).findOneBy({ tenant, id, deleted_at: IsNull() });
  }

  /** Deletes (softly) and cancels what was still queued for it; false when there was nothing to delete. */
  async delete(tenant: string, id: string): Promise<boolean> {
    return (await configOrm(this.pool)).transaction(async (m) => {
      const gone = await m.update(WebhookEndpoint, { tenant, id, deleted_at: IsNull() }, { deleted_at: () => 'now()' });
      if (!gone.affected) return false;
      await m.query(
        `update webhook.deliveries set status = 'cancelled', last_error = 'endpoint deleted'
         where tenant = $1 and endpoint_id = $2 and status = 'pending'`, [tenant, id]);
      return true;
    });
  }

  /** Active endpoints of a tenant, for fan-out (read in the projection's transaction). */
  async subscribers(db: Queryable, tenant: string): Promise<Subscriber[]> {
    const { rows } = await db.query<Subscriber>(
      `select id, events, created_at from webhook.endpoints where tenant = $1 and status = 'active' and deleted_at is null`, [tenant]);
    return rows;
  }
}
