import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { INBOUND_EVENT_TYPES, InboundEvent, SubmitEventsRequest, isInboundEventType } from '@loyalty/contracts';
import { FieldError, pointer, validation } from '@loyalty/platform';
import { FAST_VALIDATION } from '../http/fast-validation';
import { flattenValidationErrors } from '../http/validation';
import { EVENT_DTO_BY_TYPE } from './events.dto';

export const MAX_BATCH_EVENTS = 100;
export const MAX_EVENT_IDEMPOTENCY_KEY = 128;

export type EventCheck = { ok: true; event: InboundEvent } | { ok: false; errors: FieldError[] };

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Drops null and undefined members (an optional field sent as null is as good as absent). */
const compact = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(compact);
  if (isPlainObject(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) out[k] = compact(x);
    return out;
  }
  return v;
};

/**
 * Validates one inbound event with the DTO class of its `type` (unknown fields refused) and
 * returns it normalised: nulls dropped, line defaults (`quantity` 1, `gift_card` false) filled in.
 * `at` is the JSON-pointer prefix of the event in the body (`/events/3` in a batch, empty for a single event).
 */
export const checkInboundEvent = (raw: unknown, at: (string | number)[] = []): EventCheck => {
  if (!isPlainObject(raw)) return { ok: false, errors: [{ path: pointer(...at), message: 'an event must be a JSON object' }] };
  if (raw.type === undefined || raw.type === null) return { ok: false, errors: [{ path: pointer(...at, 'type'), message: 'type is required' }] };
  if (!isInboundEventType(raw.type)) {
    return { ok: false, errors: [{ path: pointer(...at, 'type'), message: `type must be one of: ${INBOUND_EVENT_TYPES.join(', ')}` }] };
  }
  // an order line must be an object: the DTO's nested validation lets a number or null through
  // (it was accepted with 202 and failed in the worker)
  if (Array.isArray(raw.lines)) {
    const bad = raw.lines.flatMap((l, i) => (isPlainObject(l) ? [] : [{ path: pointer(...at, 'lines', i), message: 'an order line must be a JSON object' }]));
    if (bad.length > 0) return { ok: false, errors: bad };
  }
  const dto = EVENT_DTO_BY_TYPE[raw.type];
  // class-validator only when the fast check cannot vouch for the event (its errors are the library's own)
  if (!FAST_VALIDATION.isCertainlyValid(dto, raw)) {
    const errors = validateSync(plainToInstance(dto, raw), { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true });
    if (errors.length > 0) return { ok: false, errors: flattenValidationErrors(errors, at) };
  }
  const event = compact(raw) as Record<string, unknown>;
  if (Array.isArray(event.lines)) {
    event.lines = (event.lines as Record<string, unknown>[]).map((l) => ({ ...l, quantity: l.quantity ?? 1, gift_card: l.gift_card ?? false }));
  }
  return { ok: true, event: event as unknown as InboundEvent };
};

export interface ParsedSubmission {
  mode: 'single' | 'batch';
  events: SubmitEventsRequest['events'];
}

/**
 * POST /v1/events body: one event, or `{ events: [...] }` with 1 to 100 events. Every problem is a
 * 422 `validation` with JSON-pointer paths (`/gross_cents`, `/events/3/gross_cents`); a batch with
 * any invalid event is refused whole, with the errors of every invalid event (nothing is queued).
 * The `Idempotency-Key` header (at most 128 characters) applies to a single event only: on a batch
 * it is a 422, because one key cannot name many events (each event's `id` is its key).
 */
export const parseSubmission = (body: unknown, idempotencyKey: string | undefined): ParsedSubmission => {
  if (!isPlainObject(body)) {
    throw validation([{ path: '', message: 'the body must be an event object or { "events": [ … ] }' }]);
  }
  const isBatch = 'events' in body && !('type' in body);
  if (idempotencyKey !== undefined) {
    if (isBatch) {
      throw validation([{ path: '/headers/idempotency-key', message: 'Idempotency-Key applies to a single event; in a batch give each event its own id' }]);
    }
    if (idempotencyKey.length === 0 || idempotencyKey.length > MAX_EVENT_IDEMPOTENCY_KEY) {
      throw validation([{ path: '/headers/idempotency-key', message: `Idempotency-Key must be 1 to ${MAX_EVENT_IDEMPOTENCY_KEY} characters` }]);
    }
  }
  if (!isBatch) {
    const r = checkInboundEvent(body);
    if (!r.ok) throw validation(r.errors);
    return { mode: 'single', events: [{ event: r.event, ...(idempotencyKey !== undefined ? { idempotency_key: idempotencyKey } : {}) }] };
  }

  const errors: FieldError[] = Object.keys(body).filter((k) => k !== 'events').map((k) => ({ path: pointer(k), message: `unknown field ${k}` }));
  const list = body.events;
  if (!Array.isArray(list)) throw validation([...errors, { path: '/events', message: `events must be an array of 1 to ${MAX_BATCH_EVENTS} events` }]);
  if (list.length < 1 || list.length > MAX_BATCH_EVENTS) {
    throw validation([...errors, { path: '/events', message: `events must hold 1 to ${MAX_BATCH_EVENTS} events, got ${list.length}` }]);
  }
  const events: SubmitEventsRequest['events'] = [];
  list.forEach((raw, i) => {
    const r = checkInboundEvent(raw, ['events', i]);
    if (r.ok) events.push({ event: r.event });
    else errors.push(...r.errors);
  });
  if (errors.length > 0) throw validation(errors, 'One or more events are invalid; nothing was accepted');
  return { mode: 'batch', events };
};
