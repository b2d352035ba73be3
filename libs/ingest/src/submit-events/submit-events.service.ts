import type { EventAccepted, InboundEvent, SubmitEventsReply, SubmitEventsRequest } from '@loyalty/contracts';
import { isInboundEventType } from '@loyalty/contracts';
import { FieldError, currentCarrier, newId, problem, validation } from '@loyalty/platform';
import { EventQueueRepository, EventRow, InsertedEventRow, NewEventRow } from '../queue/event-queue.repository';
import { toEventAccepted } from '../read-events/event-status.view';
import { idempotencyKeyFor, isCustomerEvent, orderRefOf, partitionKeyFor } from './idempotency-key';

/** Seconds a refused client is told to wait when the backlog is full. */
export const BACKLOG_RETRY_AFTER_SECONDS = 10;

export interface SubmitEventsOptions {
  /** More waiting (queued or running) events than this for a tenant → 429 `backlog`. */
  backlogLimit: number;
  /** The programme clock (sandbox test clocks included): what `received_at` says. */
  now: (tenant: string) => Promise<Date>;
  /** Called after new events were queued, so the worker in this process starts at once. */
  onQueued?: () => void;
}

/**
 * POST /v1/events behind the gateway: dedupes by idempotency key (header → event id → derived),
 * refuses the whole request when the tenant's backlog is full, queues the rest durably.
 */
export class SubmitEventsService {
  constructor(private readonly repo: EventQueueRepository, private readonly options: SubmitEventsOptions) {}

  /** `carrier`: the submitting request's trace context and id, stored with the events; taken when called (request-context: edges mode). */
  async submit(tenant: string, items: SubmitEventsRequest['events'], carrier = currentCarrier()): Promise<SubmitEventsReply> {
    if (!Array.isArray(items) || items.length === 0) throw validation([{ path: '/events', message: 'at least one event is required' }]);
    items.forEach((item, i) => assertProcessable(item?.event, items.length > 1 ? `/events/${i}` : ''));
    const keys = items.map((item) => idempotencyKeyFor(item.event, item.idempotency_key));

    // One row per distinct key: the first event with a key wins, later ones in the request replay it.
    const firstIndex = new Map<string, number>();
    keys.forEach((k, i) => { if (!firstIndex.has(k)) firstIndex.set(k, i); });
    const known = byKey(await this.repo.findByKeys(tenant, [...firstIndex.keys()]));
    const fresh = [...firstIndex.entries()].filter(([k]) => !known.has(k));

    const inserted = new Map<string, InsertedEventRow>();
    if (fresh.length > 0) {
      // Checked before anything is written: a refused request leaves nothing behind, so resending is safe.
      if (await this.repo.backlogExceeds(tenant, this.options.backlogLimit)) throw backlogFull(this.options.backlogLimit);
      const rows: NewEventRow[] = fresh.map(([key, i]) => {
        const event = items[i].event;
        return { id: newId('EV'), idempotency_key: key, type: event.type, order_ref: orderRefOf(event), partition_key: partitionKeyFor(event), payload: event };
      });
      for (const r of await this.repo.insert(tenant, rows, await this.options.now(tenant), carrier)) inserted.set(r.idempotency_key, r);
      if (inserted.size > 0) this.options.onQueued?.();
      // Keys a concurrent request inserted first: theirs is the original.
      const lost = fresh.map(([k]) => k).filter((k) => !inserted.has(k));
      for (const [k, r] of byKey(await this.repo.findByKeys(tenant, lost))) known.set(k, r);
    }

    const results: EventAccepted[] = keys.map((k, i) => {
      const mine = inserted.get(k);
      if (mine) return toEventAccepted(mine, firstIndex.get(k) !== i);
      const original = known.get(k);
      if (!original) throw problem('internal', `event with idempotency key ${k} was neither inserted nor found`);
      return toEventAccepted(original, true);
    });
    return { results };
  }
}

const byKey = (rows: EventRow[]): Map<string, EventRow> => new Map(rows.map((r) => [r.idempotency_key, r]));

export const backlogFull = (limit: number) =>
  problem('backlog', `More than ${limit} events are waiting to be processed for this programme; nothing in this request was accepted. Retry after ${BACKLOG_RETRY_AFTER_SECONDS} seconds.`, {
    extra: { reason: 'backlog', retry_after: BACKLOG_RETRY_AFTER_SECONDS },
    headers: { 'Retry-After': String(BACKLOG_RETRY_AFTER_SECONDS) },
  });

/**
 * The gateway validates events fully; this only guards what the queue itself relies on (a known
 * type and the fields its keys are made of), for callers that reach the bus some other way.
 */
const assertProcessable = (event: InboundEvent | undefined, at: string): void => {
  const errors: FieldError[] = [];
  const e = event as unknown as Record<string, unknown> | undefined;
  if (!e || typeof e !== 'object') errors.push({ path: at || '/', message: 'event must be an object' });
  else if (!isInboundEventType(e.type)) errors.push({ path: `${at}/type`, message: 'type is not a known event type' });
  else if (isCustomerEvent(event!)) {
    if (typeof e.email !== 'string' || !e.email) errors.push({ path: `${at}/email`, message: 'email is required' });
  } else {
    if (typeof e.order_ref !== 'string' || !e.order_ref) errors.push({ path: `${at}/order_ref`, message: 'order_ref is required' });
    if (e.type === 'order.refunded' && (typeof e.refund_ref !== 'string' || !e.refund_ref)) errors.push({ path: `${at}/refund_ref`, message: 'refund_ref is required' });
  }
  if (errors.length) throw validation(errors);
};
