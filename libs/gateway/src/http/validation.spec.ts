import 'reflect-metadata';
import { ProblemError } from '@loyalty/platform';
import { PutRulesDto, PutTiersDto } from '../admin/admin.dto';
import { AdjustDto, EnrolMemberDto, ListMembersQuery } from '../members/members.dto';
import { validationPipe } from './validation';

/** Runs the global pipe on a body as Nest does and returns the problem's errors (or the value). */
const run = async (metatype: new () => unknown, value: unknown, type: 'body' | 'query' = 'body') => {
  try {
    return { value: await validationPipe().transform(value, { type, metatype }) };
  } catch (e) {
    if (!(e instanceof ProblemError)) throw e;
    return { status: e.status, slug: e.problem.slug, errors: e.problem.errors };
  }
};

describe('validation pipe → problem errors', () => {
  it('refuses unknown fields with a JSON pointer to them', async () => {
    const r = await run(EnrolMemberDto, { email: 'a@example.com', foo: 1 });
    expect(r).toMatchObject({ status: 422, slug: 'validation', errors: [{ path: '/foo', message: 'unknown field foo' }] });
  });

  it('gives one error per field, saying so when the field is missing', async () => {
    const r = await run(AdjustDto, { amount_cents: 10 });
    expect(r.errors).toEqual([{ path: '/reason_code', message: 'reason_code is required' }]);
    const z = await run(AdjustDto, { amount_cents: 0, reason_code: 'x' });
    expect(z.errors).toEqual([{ path: '/amount_cents', message: expect.stringContaining('0') }]);
    const both = await run(AdjustDto, {});
    expect(both.errors?.map((e) => e.path)).toEqual(['/amount_cents', '/reason_code']);
  });

  it('points into nested arrays of objects', async () => {
    const r = await run(PutRulesDto, { rules: [{ type: 'nope' }, { type: 'base', earn_rate_pct: 'x', junk: 1 }] });
    expect(r.errors?.map((e) => e.path).sort()).toEqual(['/rules/0/type', '/rules/1/earn_rate_pct', '/rules/1/junk']);
    const t = await run(PutTiersDto, { tiers: [{ name: 'Gold', level: 1, criteria: [{ metric: 'spend', threshold: -1 }] }] });
    expect(t.errors?.map((e) => e.path)).toEqual(['/tiers/0/criteria/0/threshold']);
  });

  it('converts and bounds query numbers', async () => {
    expect(await run(ListMembersQuery, { limit: '5' }, 'query')).toEqual({ value: expect.objectContaining({ limit: 5 }) });
    expect((await run(ListMembersQuery, { limit: '0' }, 'query')).errors?.map((e) => e.path)).toEqual(['/limit']);
    expect((await run(ListMembersQuery, { limit: '101' }, 'query')).errors?.map((e) => e.path)).toEqual(['/limit']);
  });

  it('escapes JSON-pointer special characters in keys', async () => {
    const r = await run(EnrolMemberDto, { email: 'a@example.com', 'a/b~c': 1 });
    expect(r.errors?.map((e) => e.path)).toEqual(['/a~1b~0c']);
  });
});
