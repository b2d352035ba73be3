import type { EventStatus, ListEventsQuery } from '@loyalty/contracts';
import { Page, decodeCursor, encodeCursor, notFound, validation } from '@loyalty/platform';
import { EventQueueRepository } from '../queue/event-queue.repository';
import { toEventStatus } from './event-status.view';

export const DEFAULT_EVENTS_PAGE = 25;
export const MAX_EVENTS_PAGE = 100;

/** GET /v1/events/{id} and GET /v1/events: EventStatus by id, and the newest-first list with filters. */
export class ReadEventsService {
  constructor(private readonly repo: EventQueueRepository) {}

  async get(tenant: string, id: string): Promise<EventStatus> {
    const row = typeof id === 'string' ? await this.repo.get(tenant, id) : null;
    if (!row) throw notFound('event');
    return toEventStatus(row);
  }

  async list(tenant: string, q: ListEventsQuery = {}): Promise<Page<EventStatus>> {
    const limit = q.limit ?? DEFAULT_EVENTS_PAGE;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_EVENTS_PAGE) {
      throw validation([{ path: '/limit', message: `limit must be an integer from 1 to ${MAX_EVENTS_PAGE}` }]);
    }
    const after = decodeCursor(q.cursor);
    let beforeSeq: string | null = null;
    if (after) {
      if (typeof after[0] !== 'string' || !/^\d{1,19}$/.test(after[0])) {
        throw validation([{ path: '/cursor', message: 'cursor is not valid' }]);
      }
      beforeSeq = after[0];
    }
    const rows = await this.repo.list(tenant, { status: q.status, order_ref: q.order_ref, type: q.type, beforeSeq, limit: limit + 1 });
    const page = rows.slice(0, limit);
    return {
      data: page.map(toEventStatus),
      pagination: { cursor: rows.length > limit ? encodeCursor([page[page.length - 1].seq]) : null },
    };
  }
}
