import { Pool } from 'pg';
import type { WebhookEndpointView, WebhookEventKind } from '@loyalty/contracts';
import { Queryable, inTransaction } from '@loyalty/platform';

export interface EndpointRow {
  tenant: string;
  id: string;
  url: string;
  events: WebhookEventKind[];
  secret: string;
  status: 'active' | 'disabled';
  failure_count: number;
  disabled_at: Date | null;
  created_at: Date;
}

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

/** webhook.endpoints: registration, listing and soft deletion (deliveries keep their history). */
export class EndpointsRepository {
  constructor(private readonly pool: Pool) {}

  async insert(tenant: string, e: { id: string; url: string; events: WebhookEventKind[]; secret: string }): Promise<EndpointRow> {
    const { rows } = await this.pool.query<EndpointRow>(
      `insert into webhook.endpoints (tenant, id, url, events, secret) values ($1,$2,$3,$4,$5) returning *`,
      [tenant, e.id, e.url, e.events, e.secret]);
    return rows[0];
  }

  async list(tenant: string): Promise<EndpointRow[]> {
    const { rows } = await this.pool.query<EndpointRow>(
      'select * from webhook.endpoints where tenant = $1 and deleted_at is null order by created_at, id', [tenant]);
    return rows;
  }

  async find(tenant: string, id: string): Promise<EndpointRow | null> {
    const { rows } = await this.pool.query<EndpointRow>(
      'select * from webhook.endpoints where tenant = $1 and id = $2 and deleted_at is null', [tenant, id]);
    return rows[0] ?? null;
  }

  /** Deletes (softly) and cancels what was still queued for it; false when there was nothing to delete. */
  async delete(tenant: string, id: string): Promise<boolean> {
    return inTransaction(this.pool, async (tx) => {
      const gone = await tx.query(
        'update webhook.endpoints set deleted_at = now() where tenant = $1 and id = $2 and deleted_at is null', [tenant, id]);
      if (!gone.rowCount) return false;
      await tx.query(
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
