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

describe('redactUrl against encodings (issue 8)', () => {
  it('hides percent-encoded member ids and identifiers in the path', () => {
    expect(redactUrl('/v1/members/phone%3A%2B14155550100')).toBe('/v1/members/phone:[redacted]');
    expect(redactUrl('/v1/members/%70hone%3a%2B1415')).toBe('/v1/members/phone:[redacted]');
    expect(redactUrl('/v1/members/r%65f:cust_42/ledger')).toBe('/v1/members/ref:[redacted]/ledger');
    expect(redactUrl('/v1/members/phone%253A%252B14155550100')).toBe('/v1/members/phone:[redacted]'); // double-encoded
    expect(redactUrl('/v1/members/ada%40example.com')).toBe('/v1/members/[redacted]');
    expect(redactUrl('/v1/nope/%2B14155550100')).toBe('/v1/nope/[redacted]');
  });

  it('hides sensitive query values whatever the encoding of the name, and query-string secrets', () => {
    expect(redactUrl('/v1/members?%65mail=ada%40example.com')).toBe('/v1/members?%65mail=[redacted]');
    expect(redactUrl('/v1/members?EMAIL=ada@example.com&limit=2')).toBe('/v1/members?EMAIL=[redacted]&limit=2');
    expect(redactUrl('/v1/members?email[$ne]=x')).toBe('/v1/members?email[$ne]=[redacted]');
    expect(redactUrl('/v1/ping?api_key=svc_live_abc&token=t0k&x=1')).toBe('/v1/ping?api_key=[redacted]&token=[redacted]&x=1');
    expect(redactUrl('/v1/events?note=ada%2540example.com')).toBe('/v1/events?note=[redacted]'); // looks like an email once decoded
    expect(redactUrl('/v1/events?order_ref=o-1&status=failed')).toBe('/v1/events?order_ref=o-1&status=failed');
  });
});
