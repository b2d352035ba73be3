import { Pool } from 'pg';
import { Queryable, inTransaction, newId } from '@loyalty/platform';
import { retryDelayMs } from './retry-schedule';
import type { SendResult } from './http-sender';

/** A delivery the worker holds (status `sending` under a lease), with what it needs to send it. */
export interface ClaimedDelivery {
  tenant: string;
  id: string;
  endpoint_id: string;
  kind: string;
  payload: string;
  attempts: number;
  url: string;
  secret: string;
}

export interface NewDelivery {
  tenant: string;
  endpointId: string;
  /** unique per cause and endpoint: a replayed event creates nothing new */
  sourceKey: string;
  /** deliveries of one subject to one endpoint go out in order, one at a time */
  subject: string;
  kind: string;
  /** the body, given the delivery id (the body's `id` is the delivery id) */
  body: (deliveryId: string) => string;
}

export interface DeliveryPolicy { retrySchedule: number[]; disableAfter: number; random?: () => number }

export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  kind: string;
  status: string;
  attempts: number;
  next_attempt_at: Date;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
}

/**
 * webhook.deliveries as a durable queue in PostgreSQL. Workers of any number of processes claim
 * with FOR UPDATE SKIP LOCKED under a lease; a crashed worker's deliveries come back when the lease
 * lapses (at least once). The delivery id, and so `webhook-id`, never changes across retries.
 */
export class DeliveryQueue {
  constructor(private readonly pool: Pool) {}

  /** Adds a delivery unless one exists for the same cause and endpoint; true when added. */
  async enqueue(db: Queryable, d: NewDelivery): Promise<boolean> {
    const id = newId('WD');
    const { rowCount } = await db.query(
      `insert into webhook.deliveries (tenant, id, endpoint_id, source_key, subject, kind, payload)
       values ($1,$2,$3,$4,$5,$6,$7) on conflict (tenant, endpoint_id, source_key) do nothing`,
      [d.tenant, id, d.endpointId, d.sourceKey, d.subject, d.kind, d.body(id)]);
    return (rowCount ?? 0) > 0;
  }

  /**
   * Claims up to `n` due deliveries of active endpoints, skipping `excluded` endpoints (open
   * circuit breakers). Per endpoint and subject only the oldest due delivery is claimable and only
   * while none of that pair is being sent, so one member's notices arrive in order.
   */
  async claim(n: number, leaseMs: number, excluded: string[]): Promise<ClaimedDelivery[]> {
    if (n <= 0) return [];
    const { rows } = await this.pool.query<ClaimedDelivery>(
      `with due as (
         select d.tenant, d.id, d.endpoint_id, d.subject, d.seq from webhook.deliveries d
         where d.status = 'pending' and d.next_attempt_at <= now() and not (d.endpoint_id = any($3::text[]))
         order by d.seq
         limit greatest($1::int * 8, 64)
       ), firsts as (
         select distinct on (tenant, endpoint_id, subject) tenant, id, endpoint_id, subject, seq from due
         order by tenant, endpoint_id, subject, seq
       ), ready as (
         select f.tenant, f.id, f.seq from firsts f
         join webhook.endpoints e on e.tenant = f.tenant and e.id = f.endpoint_id and e.status = 'active' and e.deleted_at is null
         where not exists (
           select 1 from webhook.deliveries s
           where s.tenant = f.tenant and s.endpoint_id = f.endpoint_id and s.subject = f.subject and s.status = 'sending')
       ), picked as (
         select d.tenant, d.id from webhook.deliveries d join ready r on r.tenant = d.tenant and r.id = d.id
         where d.status = 'pending'
         order by r.seq limit $1
         for update of d skip locked
       )
       update webhook.deliveries d
          set status = 'sending', locked_until = now() + make_interval(secs => $2::float8 / 1000)
         from picked, webhook.endpoints e
        where d.tenant = picked.tenant and d.id = picked.id and e.tenant = d.tenant and e.id = d.endpoint_id
       returning d.tenant, d.id, d.endpoint_id, d.kind, d.payload, d.attempts, e.url, e.secret`,
      [n, leaseMs, excluded]);
    return rows;
  }

  /** Hands a claimed delivery back without an attempt (its endpoint's breaker is open). */
  async release(d: ClaimedDelivery, delayMs: number): Promise<void> {
    await this.pool.query(
      `update webhook.deliveries set status = 'pending', locked_until = null, next_attempt_at = now() + make_interval(secs => $3::float8 / 1000)
       where tenant = $1 and id = $2 and status = 'sending'`, [d.tenant, d.id, delayMs]);
  }

  /** Deliveries whose worker vanished mid-send go back to the queue (they may arrive twice: at least once). */
  async recoverLapsed(): Promise<number> {
    const { rowCount } = await this.pool.query(
      `update webhook.deliveries set status = 'pending', locked_until = null, next_attempt_at = now()
       where status = 'sending' and locked_until < now()`);
    return rowCount ?? 0;
  }

  /**
   * Records one attempt and its consequences in one transaction: the attempt log, the delivery
   * (delivered, retried after the schedule's next step with jitter, or failed), and the endpoint's
   * health (`failure_count` counts consecutive failed attempts and returns to 0 on success; at
   * `disableAfter`, or at once on 410 Gone, the endpoint is disabled and its queue cancelled).
   */
  async complete(d: ClaimedDelivery, r: SendResult, policy: DeliveryPolicy): Promise<{ status: string; endpointDisabled: boolean }> {
    return inTransaction(this.pool, async (tx) => {
      const attempt = d.attempts + 1;
      await this.logAttempt(tx, d.tenant, d.id, attempt, r);
      const gone = r.status_code === 410;
      const { rows: held } = await tx.query<{ status: string }>(
        'select status from webhook.endpoints where tenant = $1 and id = $2 for update', [d.tenant, d.endpoint_id]);
      const { rows: ep } = await tx.query<{ status: string }>(
        `update webhook.endpoints set
           failure_count = case when $3::boolean then 0 else failure_count + 1 end,
           status = case when status = 'active' and not $3::boolean and ($4::boolean or failure_count + 1 >= $5::int) then 'disabled' else status end,
           disabled_at = case when status = 'active' and not $3::boolean and ($4::boolean or failure_count + 1 >= $5::int) then now() else disabled_at end
         where tenant = $1 and id = $2
         returning status`,
        [d.tenant, d.endpoint_id, r.ok, gone, policy.disableAfter]);
      const disabledNow = held[0]?.status === 'active' && ep[0]?.status === 'disabled';
      const disabled = ep[0]?.status === 'disabled';
      let status: string;
      let delay: number | null = null;
      if (r.ok) status = 'delivered';
      else {
        delay = gone || disabled ? null : retryDelayMs(attempt, policy.retrySchedule, policy.random);
        status = delay === null ? 'failed' : 'pending';
      }
      await tx.query(
        `update webhook.deliveries set status = $3, attempts = $4, last_status_code = $5, last_error = $6, locked_until = null,
           delivered_at = case when $3 = 'delivered' then now() else delivered_at end,
           next_attempt_at = case when $7::float8 is null then next_attempt_at else now() + make_interval(secs => $7::float8 / 1000) end
         where tenant = $1 and id = $2`,
        [d.tenant, d.id, status, attempt, r.status_code, r.error, delay]);
      if (disabledNow) {
        await tx.query(
          `update webhook.deliveries set status = 'cancelled', last_error = 'endpoint disabled'
           where tenant = $1 and endpoint_id = $2 and status = 'pending'`, [d.tenant, d.endpoint_id]);
      }
      return { status, endpointDisabled: disabledNow };
    });
  }

  async logAttempt(db: Queryable, tenant: string, deliveryId: string, attempt: number, r: SendResult): Promise<void> {
    await db.query(
      `insert into webhook.attempts (tenant, delivery_id, attempt, status_code, ok, error, response_excerpt, duration_ms)
       values ($1,$2,$3,$4,$5,$6,$7,$8) on conflict do nothing`,
      [tenant, deliveryId, attempt, r.status_code, r.ok, r.error, r.response_excerpt?.replace(/\u0000/g, '') ?? null, r.duration_ms]);
  }

  /** A one-off delivery sent outside the queue (the /test call): recorded with its single attempt. */
  async recordImmediate(tenant: string, d: { id: string; endpointId: string; kind: string; payload: string }, r: SendResult): Promise<void> {
    await inTransaction(this.pool, async (tx) => {
      await tx.query(
        `insert into webhook.deliveries (tenant, id, endpoint_id, source_key, subject, kind, payload, status, attempts, last_status_code, last_error, delivered_at)
         values ($1,$2,$3,$4,$3,$5,$6,$7,1,$8,$9, case when $7 = 'delivered' then now() end)`,
        [tenant, d.id, d.endpointId, `test:${d.id}`, d.kind, d.payload, r.ok ? 'delivered' : 'failed', r.status_code, r.error]);
      await this.logAttempt(tx, tenant, d.id, 1, r);
    });
  }

  /** Recent deliveries of an endpoint, newest first. */
  async recent(tenant: string, endpointId: string, limit: number, beforeSeq: string | null): Promise<(DeliveryRow & { seq: string })[]> {
    const { rows } = await this.pool.query<DeliveryRow & { seq: string }>(
      `select id, seq::text, endpoint_id, kind, status, attempts, next_attempt_at, last_status_code, last_error, delivered_at, created_at
       from webhook.deliveries where tenant = $1 and endpoint_id = $2 and ($4::bigint is null or seq < $4::bigint)
       order by seq desc limit $3`, [tenant, endpointId, limit, beforeSeq]);
    return rows;
  }
}
