import { redactText } from './redact';

describe('redactText (log lines)', () => {
  it('hides values PostgreSQL quotes in its errors', () => {
    expect(redactText('invalid input syntax for type bigint: "ada@example.com"')).toBe('invalid input syntax for type bigint: "[redacted]"');
    expect(redactText('duplicate key value violates unique constraint "identities_pkey" Key (tenant, kind, value)=(P_live, email, ada@example.com) already exists'))
      .toBe('duplicate key value violates unique constraint "identities_pkey" Key (tenant, kind, value)=([redacted]) already exists');
    expect(redactText('value "99999999999" is out of range for type integer')).toBe('value "[redacted]" is out of range for type integer');
  });

  it('hides emails, E.164 numbers, person-naming member ids and secrets in any text', () => {
    expect(redactText('customer unmatched: phone +14155550100 for ada@example.com')).toBe('customer unmatched: phone [phone] for [email]');
    expect(redactText('GET /v1/members/phone%3A%2B14155550100?api_key=s3cret&limit=1 failed')).toBe('GET /v1/members/phone%3A[redacted]?api_key=[redacted]&limit=1 failed');
    expect(redactText('ledger.member.list failed: Internal server error')).toBe('ledger.member.list failed: Internal server error');
    expect(redactText('request 2026-11-26T06:55:00.000Z took 12 ms')).toBe('request 2026-11-26T06:55:00.000Z took 12 ms');
  });
});
