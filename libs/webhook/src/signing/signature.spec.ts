import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret } from '@loyalty/platform';
import { signatureHeaders } from './signature';

describe('webhook signatures (Standard Webhooks)', () => {
  const secret = newWebhookSecret();
  const body = JSON.stringify({ id: 'WD-01J0000000000000000000000', type: 'balance.updated', created_at: '2025-01-01T00:00:00.000Z', livemode: false, data: { x: 1 } });

  it('produces headers that the standardwebhooks verifier accepts', () => {
    const h = signatureHeaders(secret, 'WD-01J0000000000000000000000', body, new Date());
    expect(h['webhook-id']).toBe('WD-01J0000000000000000000000');
    expect(h['webhook-timestamp']).toMatch(/^\d{10}$/);
    expect(new Webhook(secret).verify(body, { ...h })).toEqual(JSON.parse(body));
  });

  it('is v1, base64 HMAC-SHA256 of "id.timestamp.body" keyed by the decoded secret bytes', () => {
    const at = new Date('2025-03-04T05:06:07.890Z');
    const h = signatureHeaders(secret, 'WD-X', body, at);
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    expect(key).toHaveLength(32);
    const expected = createHmac('sha256', key).update(`WD-X.${Math.floor(at.getTime() / 1000)}.${body}`).digest('base64');
    expect(h['webhook-timestamp']).toBe(String(Math.floor(at.getTime() / 1000)));
    expect(h['webhook-signature']).toBe(`v1,${expected}`);
  });

  it('fails verification for a changed body, another secret or another id', () => {
    const h = signatureHeaders(secret, 'WD-Y', body, new Date());
    expect(() => new Webhook(secret).verify(body.replace('"x":1', '"x":2'), { ...h })).toThrow();
    expect(() => new Webhook(newWebhookSecret()).verify(body, { ...h })).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...h, 'webhook-id': 'WD-Z' })).toThrow();
  });
});
