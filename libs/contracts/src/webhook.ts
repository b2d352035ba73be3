/** Outbound webhooks (interface-spec "Outbound webhook event kinds", decisions §8). */
export const WEBHOOK_EVENT_KINDS = [
  'member.enrolled',
  'ledger.entry.created',
  'balance.updated',
  'tier.changed',
  'referral.qualified',
  'redemption.created',
  'redemption.confirmed',
  'redemption.voided',
  'reward.expiring_soon',
] as const;
export type WebhookEventKind = (typeof WEBHOOK_EVENT_KINDS)[number];

/** WebhookEndpoint (interface-spec "WebhookEndpoint"); the secret only on creation. */
export interface WebhookEndpointView {
  id: string;
  url: string;
  events: WebhookEventKind[];
  status: 'active' | 'disabled';
  failure_count: number;
  disabled_at: string | null;
  created_at: string;
  secret?: string;
}

/** POST /v1/webhook_endpoints/{id}/test (decisions §8). */
export interface WebhookTestResult {
  delivery_id: string;
  status_code: number | null;
  ok: boolean;
  duration_ms: number;
  error: string | null;
}
