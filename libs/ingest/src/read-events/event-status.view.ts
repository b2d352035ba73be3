import type { EventAccepted, EventStatus } from '@loyalty/contracts';
import type { EventRow } from '../queue/event-queue.repository';

/** EventStatus as the API shows it (GET /v1/events/{id} and the list). */
export const toEventStatus = (r: EventRow): EventStatus => ({
  id: r.id,
  type: r.type,
  status: r.status,
  error: r.error,
  ledger_entry_ids: r.ledger_entry_ids ?? [],
  received_at: r.received_at.toISOString(),
  processed_at: r.processed_at ? r.processed_at.toISOString() : null,
  order_ref: r.order_ref,
  idempotency_key: r.idempotency_key,
});

export const toEventAccepted = (r: Pick<EventRow, 'id' | 'type' | 'status'>, replayed: boolean): EventAccepted => ({ id: r.id, type: r.type, status: r.status, replayed });
