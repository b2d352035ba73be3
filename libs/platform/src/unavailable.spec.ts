import { isUnavailable, unavailable } from './problem';

describe('isUnavailable: a dependency going away is a 503, a defect is not', () => {
  it.each([
    ['a server shutting down (57P01)', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })],
    ['a server starting up (57P03)', Object.assign(new Error('the database system is starting up'), { code: '57P03' })],
    ['a connection failure (class 08)', Object.assign(new Error('connection failure'), { code: '08006' })],
    ['too many connections (53300)', Object.assign(new Error('too many clients'), { code: '53300' })],
    ['a refused socket', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    ["pg's terminated connection", new Error('Connection terminated unexpectedly')],
    ["pg-pool's connect timeout", new Error('timeout exceeded when trying to connect')],
  ])('%s', (_what, e) => {
    expect(isUnavailable(e)).toBe(true);
  });

  it.each([
    ['a unique violation', Object.assign(new Error('duplicate key'), { code: '23505' })],
    ['a syntax error', Object.assign(new Error('syntax error'), { code: '42601' })],
    ['a plain error', new Error('boom')],
    ['not an error', 'Connection terminated'],
    ['nothing', null],
  ])('%s is not', (_what, e) => {
    expect(isUnavailable(e)).toBe(false);
  });

  it('answers unavailable with a Retry-After', () => {
    const p = unavailable();
    expect(p.status).toBe(503);
    expect(p.problem.slug).toBe('unavailable');
    expect(p.problem.headers).toEqual({ 'Retry-After': '1' });
  });
});
