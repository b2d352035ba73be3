import { WEBHOOK_EVENT_KINDS, WebhookEndpointView, WebhookEventKind, WebhookTestResult } from '@loyalty/contracts';
import { FieldError, decodeCursor, encodeCursor, newId, newWebhookSecret, notFound, parseTenantKey, validation } from '@loyalty/platform';
import { DeliveryQueue } from '../delivery/delivery.queue';
import { HttpSender } from '../delivery/http-sender';
import { webhookBody } from '../events/webhook-events.projection';
import { signatureHeaders } from '../signing/signature';
import { EndpointsRepository, endpointView } from './endpoints.repository';
import { Resolver, checkEndpointUrl, systemResolver } from './url-policy';

export interface CreateEndpointInput { url?: unknown; events?: unknown }

const isKind = (k: unknown): k is WebhookEventKind => typeof k === 'string' && (WEBHOOK_EVENT_KINDS as readonly string[]).includes(k);

/** Validates a creation body; every problem at once, JSON-pointer paths (`/url`, `/events/3`). */
export const validateEndpointInput = async (
  body: CreateEndpointInput,
  mode: 'live' | 'test',
  resolve: Resolver = systemResolver,
): Promise<{ url: string; events: WebhookEventKind[] }> => {
  const errors: FieldError[] = [];
  const { url, events } = body;
  if (!Array.isArray(events)) errors.push({ path: '/events', message: events === undefined ? 'events is required' : 'events must be an array' });
  else if (events.length === 0) errors.push({ path: '/events', message: 'events must list at least one webhook event kind' });
  else {
    events.forEach((k, i) => {
      if (!isKind(k)) errors.push({ path: `/events/${i}`, message: `must be one of ${WEBHOOK_EVENT_KINDS.join(', ')}` });
    });
  }
  if (typeof url !== 'string' || url.length === 0) errors.push({ path: '/url', message: url === undefined ? 'url is required' : 'url must be a non-empty string' });
  else {
    const problemWithUrl = await checkEndpointUrl(url, mode, resolve);
    if (problemWithUrl) errors.push({ path: '/url', message: problemWithUrl });
  }
  if (errors.length) throw validation(errors);
  // an event kind listed twice is one subscription, in the order first given
  return { url: url as string, events: [...new Set(events as WebhookEventKind[])] };
};

export interface DeliveryView {
  id: string;
  type: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: string | null;
  created_at: string;
}

/** Endpoint registration, listing, deletion and the synchronous test send. */
export class EndpointsService {
  constructor(
    private readonly repo: EndpointsRepository,
    private readonly queue: DeliveryQueue,
    private readonly sender: HttpSender,
    private readonly options: { timeoutMs: number; now: (tenant: string) => Promise<Date>; resolve?: Resolver },
  ) {}

  async list(tenant: string): Promise<WebhookEndpointView[]> {
    return (await this.repo.list(tenant)).map(endpointView);
  }

  async get(tenant: string, id: string): Promise<WebhookEndpointView> {
    const row = await this.repo.find(tenant, id);
    if (!row) throw notFound('webhook endpoint');
    return endpointView(row);
  }

  /** 201 body: the endpoint plus its signing secret, which is never shown again. */
  async create(tenant: string, body: CreateEndpointInput): Promise<WebhookEndpointView> {
    const input = await validateEndpointInput(body, parseTenantKey(tenant).mode, this.options.resolve);
    const secret = newWebhookSecret();
    const row = await this.repo.insert(tenant, { id: newId('WE'), url: input.url, events: input.events, secret });
    return { ...endpointView(row), secret };
  }

  async delete(tenant: string, id: string): Promise<{ deleted: true }> {
    if (!(await this.repo.delete(tenant, id))) throw notFound('webhook endpoint');
    return { deleted: true };
  }

  /**
   * Sends a signed `webhook.test` delivery now and reports what the receiver said. It is logged
   * with the endpoint's deliveries but is never retried and leaves the endpoint's failure count
   * and status alone (a check must not disable an endpoint, nor mask real failures); a disabled
   * endpoint can be tested.
   */
  async test(tenant: string, id: string): Promise<WebhookTestResult> {
    const row = await this.repo.find(tenant, id);
    if (!row) throw notFound('webhook endpoint');
    const deliveryId = newId('WD');
    const at = (await this.options.now(tenant)).toISOString();
    const payload = webhookBody(deliveryId, 'webhook.test', at, tenant, {
      endpoint_id: row.id,
      message: 'This is a test webhook. Verify its signature with the secret you were given when the endpoint was created.',
    });
    const result = await this.sender.send({
      url: row.url,
      body: payload,
      headers: { ...signatureHeaders(row.secret, deliveryId, payload, new Date()) },
      mode: parseTenantKey(tenant).mode,
      timeoutMs: this.options.timeoutMs,
    });
    await this.queue.recordImmediate(tenant, { id: deliveryId, endpointId: row.id, kind: 'webhook.test', payload }, result);
    return { delivery_id: deliveryId, status_code: result.status_code, ok: result.ok, duration_ms: result.duration_ms, error: result.error };
  }

  /** GET /v1/webhook_endpoints/{id}/deliveries: newest first, cursor pagination. */
  async deliveries(tenant: string, id: string, query: { limit?: number; cursor?: string }): Promise<{ data: DeliveryView[]; pagination: { cursor: string | null } }> {
    if (!(await this.repo.find(tenant, id))) throw notFound('webhook endpoint');
    const limit = Math.min(100, Math.max(1, Math.trunc(Number(query.limit ?? 25)) || 25));
    const after = decodeCursor(query.cursor);
    const beforeSeq = after && typeof after[0] === 'string' && /^\d+$/.test(after[0]) ? after[0] : null;
    const rows = await this.queue.recent(tenant, id, limit + 1, beforeSeq);
    const page = rows.slice(0, limit);
    return {
      data: page.map((r) => ({
        id: r.id,
        type: r.kind,
        status: r.status,
        attempts: r.attempts,
        next_attempt_at: r.status === 'pending' ? r.next_attempt_at.toISOString() : null,
        last_status_code: r.last_status_code,
        last_error: r.last_error,
        delivered_at: r.delivered_at ? r.delivered_at.toISOString() : null,
        created_at: r.created_at.toISOString(),
      })),
      pagination: { cursor: rows.length > limit ? encodeCursor([page[page.length - 1].seq]) : null },
    };
  }
}
