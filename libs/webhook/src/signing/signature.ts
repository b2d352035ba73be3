import { Webhook } from 'standardwebhooks';

/** The Standard Webhooks headers of one attempt (decisions §8). */
export interface SignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * Signs `body` as Standard Webhooks does: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed
 * by the bytes of the secret after `whsec_`. The timestamp is the attempt's real (wall-clock) time,
 * never a sandbox test clock, so receivers' replay windows work.
 */
export const signatureHeaders = (secret: string, deliveryId: string, body: string, at: Date): SignatureHeaders => ({
  'webhook-id': deliveryId,
  'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
  'webhook-signature': new Webhook(secret).sign(deliveryId, at, body),
});
