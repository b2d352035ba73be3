import { redactUrl } from './redact';

describe('redactUrl', () => {
  it('hides ref: and phone: member ids in any position', () => {
    expect(redactUrl('/v1/members/ref:cust-42')).toBe('/v1/members/ref:[redacted]');
    expect(redactUrl('/v1/members/phone:%2B14155550100/ledger?limit=0')).toBe('/v1/members/phone:[redacted]/ledger?limit=0');
    expect(redactUrl('/v1/members/REF:x/adjust')).toBe('/v1/members/REF:[redacted]/adjust');
  });

  it('hides identifier query filters and keeps the rest', () => {
    expect(redactUrl('/v1/members?limit=0&email=a%40b.c&state=active')).toBe('/v1/members?limit=0&email=[redacted]&state=active');
    expect(redactUrl('/v1/members?email=a@b.c')).toBe('/v1/members?email=[redacted]');
  });

  it('leaves public ids and plain paths alone', () => {
    expect(redactUrl('/v1/members/M-01HZX3K9Q4W8T6V2N5B7C1D0EF/ledger?cursor=abc')).toBe('/v1/members/M-01HZX3K9Q4W8T6V2N5B7C1D0EF/ledger?cursor=abc');
    expect(redactUrl('/v1/ping')).toBe('/v1/ping');
  });
});
