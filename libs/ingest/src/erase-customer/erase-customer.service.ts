import { createHash } from 'node:crypto';
import { Pool } from 'pg';
import type { EraseCustomerRequest } from '@loyalty/contracts';

/** Payload fields that identify the customer; what is left (order ref, amounts, lines) names no one. */
const PII_FIELDS = ['email', 'phone', 'customer_ref', 'external_ref', 'customer'];

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Erasure reaches the events API (issue 8): the stored inbound payloads of an erased customer
 * lose their identifiers, idempotency keys that contain one (customer events are keyed
 * `<type>:<email>:<hash>`, and a caller may build its own keys from an email) are replaced by
 * their SHA-256, and error texts that quote one are scrubbed. Events of that customer still
 * waiting in the queue fail with a neutral reason instead of re-creating the person. Order refs,
 * amounts and statuses stay: they are the merchant's records, not personal data.
 */
export class EraseCustomerService {
  constructor(private readonly pool: Pool) {}

  async erase(req: EraseCustomerRequest): Promise<{ scrubbed_events: number }> {
    const email = req.email ? req.email.trim().toLowerCase() : null;
    const phoneDigits = req.phone ? req.phone.replace(/\D/g, '') || null : null;
    const ref = req.external_ref || null;
    if (!email && !phoneDigits && !ref) return { scrubbed_events: 0 };
    const { rows } = await this.pool.query<{ id: string; idempotency_key: string; error: string | null }>(
      `select id, idempotency_key, error from ingest.events
        where tenant = $1 and (
          lower(payload->>'email') = $2 or lower(payload->'customer'->>'email') = $2 or strpos(lower(idempotency_key), $2) > 0
          or regexp_replace(coalesce(payload->>'phone', ''), '\\D', '', 'g') = $3
          or regexp_replace(coalesce(payload->'customer'->>'phone', ''), '\\D', '', 'g') = $3
          or payload->>'customer_ref' = $4 or payload->>'external_ref' = $4 or payload->'customer'->>'external_ref' = $4)`,
      [req.tenant, email, phoneDigits, ref]);
    if (!rows.length) return { scrubbed_events: 0 };
    const needles = [email, req.phone, phoneDigits && phoneDigits.length >= 7 ? phoneDigits : null, ref].filter((x): x is string => !!x);
    const pattern = new RegExp(needles.map(escapeRegExp).join('|'), 'gi');
    const contains = (s: string) => { pattern.lastIndex = 0; return pattern.test(s); };
    const keys = rows.map((r) => (contains(r.idempotency_key) ? `erased:${createHash('sha256').update(r.idempotency_key).digest('hex')}` : r.idempotency_key));
    const errors = rows.map((r) => (r.error === null ? null : r.error.replace(pattern, '[erased]')));
    await this.pool.query(
      `update ingest.events e set
          payload = e.payload - $5::text[],
          idempotency_key = u.key,
          error = case when e.status = 'queued' and e.locked_until is null then 'customer erased before the event was processed' else u.error end,
          status = case when e.status = 'queued' and e.locked_until is null then 'failed' else e.status end,
          processed_at = case when e.status = 'queued' and e.locked_until is null then now() else e.processed_at end,
          -- a running (leased) event keeps its partition until it finishes
          partition_key = case when e.status in ('queued', 'running') and e.locked_until is not null then e.partition_key else 'erased:' || e.id end
        from unnest($2::text[], $3::text[], $4::text[]) as u(id, key, error)
        where e.tenant = $1 and e.id = u.id`,
      [req.tenant, rows.map((r) => r.id), keys, errors, PII_FIELDS]);
    return { scrubbed_events: rows.length };
  }
}
