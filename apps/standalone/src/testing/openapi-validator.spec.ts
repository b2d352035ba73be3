import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OpenApiResponseValidator } from './openapi-validator';

const document = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', '..', 'libs', 'sdk', 'openapi.json'), 'utf8'));
const member = document.paths['/v1/members/{id}'].get.responses['200'].content['application/json'].example.data;
const headers = (extra: Record<string, string> = {}) => new Headers({ 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r1', 'x-ratelimit-limit': '50', 'x-ratelimit-remaining': '49', ...extra });

describe('OpenApiResponseValidator (the e2e tier relies on it refusing what the document does not say)', () => {
  const v = new OpenApiResponseValidator(document);
  const check = (body: unknown, status = 200, h = headers()) => () => v.check('GET', '/v1/members/{id}', { status, headers: h, body });

  it('accepts a response the document describes', () => {
    expect(check({ data: member })).not.toThrow();
    expect(v.seen.get('GET /v1/members/{id}')).toEqual(new Set([200]));
  });

  it('refuses an undocumented field, a missing field, a float amount and a wrong enum', () => {
    expect(check({ data: { ...member, secret_field: 1 } })).toThrow(/must NOT have additional properties/);
    const { created_at: _gone, ...withoutCreatedAt } = member;
    expect(check({ data: withoutCreatedAt })).toThrow(/created_at/);
    expect(check({ data: { ...member, balances: { ...member.balances, available_cents: 12.5 } } })).toThrow(/must be integer/);
    expect(check({ data: { ...member, state: 'gold' } })).toThrow(/allowed values/);
    expect(check(member)).toThrow(/data/);
  });

  it('refuses an undocumented status, a wrong content type and a missing required header', () => {
    expect(check({ data: member }, 418)).toThrow(/status not documented/);
    expect(check({ data: member }, 200, headers({ 'content-type': 'text/html' }))).toThrow(/content type text\/html/);
    const noRate = headers();
    noRate.delete('x-ratelimit-remaining');
    expect(check({ data: member }, 200, noRate)).toThrow(/X-RateLimit-Remaining/);
  });

  it('checks problems against the Problem schema', () => {
    const problem = { type: 'https://loyalty.test/docs/api/errors#not-found', title: 'Not found', status: 404, detail: 'member not found' };
    const ph = headers({ 'content-type': 'application/problem+json' });
    expect(() => v.check('GET', '/v1/members/{id}', { status: 404, headers: ph, body: problem })).not.toThrow();
    expect(() => v.check('GET', '/v1/members/{id}', { status: 404, headers: ph, body: { ...problem, status: '404' } })).toThrow(/must be integer/);
  });
});
