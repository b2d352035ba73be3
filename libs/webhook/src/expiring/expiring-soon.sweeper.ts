import { Pool } from 'pg';
import { inTransaction } from '@loyalty/platform';
import { EndpointsRepository } from '../endpoints/endpoints.repository';
import { DeliveryQueue } from '../delivery/delivery.queue';
import { ProgramInfoSource, webhookBody } from '../events/webhook-events.projection';

const BATCH = 500;
const MS_PER_DAY = 86_400_000;

/**
 * `reward.expiring_soon` (decisions §8): once per lot, when its unspent points expire within the
 * programme's `expiry_warning_days` of the programme clock (so a sandbox test clock moves it at
 * once). Looks at webhook.lot_watch, the dated lots the event projection keeps; rows are claimed
 * with SKIP LOCKED and recorded in webhook.lot_notices in the same transaction as their deliveries,
 * so several replicas can sweep together and a lot is announced once. Lots already past their expiry are left to the
 * ledger's expiry (an "expiring soon" after the fact would mislead).
 */
export class ExpiringSoonSweeper {
  constructor(
    private readonly pool: Pool,
    private readonly endpoints: EndpointsRepository,
    private readonly queue: DeliveryQueue,
    private readonly program: ProgramInfoSource,
    private readonly now: (tenant: string) => Promise<Date>,
    private readonly onQueued: () => void = () => undefined,
  ) {}

  async sweepAll(): Promise<number> {
    // only tenants someone listens to: a lot nobody was told about can still be announced to an endpoint added later
    const { rows } = await this.pool.query<{ tenant: string }>(
      `select distinct e.tenant from webhook.endpoints e
       where e.status = 'active' and e.deleted_at is null and 'reward.expiring_soon' = any(e.events)
         and exists (select 1 from webhook.lot_watch w where w.tenant = e.tenant)`);
    let n = 0;
    for (const r of rows) n += await this.sweep(r.tenant);
    return n;
  }

  /** Announces the due lots of one tenant now; returns how many lots were announced. */
  async sweep(tenant: string): Promise<number> {
    const now = await this.now(tenant);
    const program = await this.program(tenant);
    const horizon = new Date(now.getTime() + program.expiryWarningDays * MS_PER_DAY);
    let total = 0;
    for (;;) {
      const done = await inTransaction(this.pool, async (tx) => {
        const { rows } = await tx.query<{ member_id: string; lot_id: string; remaining_cents: string; expires_at: Date }>(
          `select w.member_id, w.lot_id, w.remaining_cents, w.expires_at from webhook.lot_watch w
           where w.tenant = $1 and w.remaining_cents > 0 and w.expires_at > $2 and w.expires_at <= $3
             and not exists (select 1 from webhook.lot_notices n where n.tenant = w.tenant and n.member_id = w.member_id and n.lot_id = w.lot_id)
           order by w.expires_at limit ${BATCH} for update of w skip locked`, [tenant, now, horizon]);
        if (!rows.length) return 0;
        const subscribers = (await this.endpoints.subscribers(tx, tenant)).filter((s) => s.events.includes('reward.expiring_soon'));
        if (!subscribers.length) return 0; // nobody to tell: the lots stay unannounced
        const at = now.toISOString();
        let queued = 0;
        for (const r of rows) {
          const data = {
            member_id: r.member_id,
            ledger_entry_id: r.lot_id,
            amount_cents: Number(r.remaining_cents),
            currency: program.currency,
            expires_at: r.expires_at.toISOString(),
          };
          for (const s of subscribers) {
            const added = await this.queue.enqueue(tx, {
              tenant, endpointId: s.id, sourceKey: `reward.expiring_soon:${r.member_id}:${r.lot_id}`, subject: r.member_id,
              kind: 'reward.expiring_soon', body: (id) => webhookBody(id, 'reward.expiring_soon', at, tenant, data),
            });
            if (added) queued++;
          }
        }
        await tx.query(
          `insert into webhook.lot_notices (tenant, member_id, lot_id)
           select $1, member_id, lot_id from unnest($2::text[], $3::text[]) as t(member_id, lot_id)
           on conflict do nothing`,
          [tenant, rows.map((r) => r.member_id), rows.map((r) => r.lot_id)]);
        if (queued) this.onQueued();
        return rows.length;
      });
      total += done;
      if (done < BATCH) return total;
    }
  }
}
