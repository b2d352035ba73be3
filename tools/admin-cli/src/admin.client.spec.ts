import { joinUrl, problemMessage, resultOf } from './admin.client';

describe('admin client helpers', () => {
  it('keeps a base path when joining URLs', () => {
    expect(joinUrl('https://loyalty.example.com/', '/admin/v1/programs')).toBe('https://loyalty.example.com/admin/v1/programs');
    expect(joinUrl('http://h:3000/base//', '/admin/v1/x')).toBe('http://h:3000/base/admin/v1/x');
  });

  it('prints the data of {data}, else the whole body, and the status for an empty body', () => {
    expect(resultOf({ status: 200, body: { data: { id: 'P-1' } } })).toEqual({ id: 'P-1' });
    expect(resultOf({ status: 200, body: { data: [], pagination: { cursor: null } } })).toEqual({ data: [], pagination: { cursor: null } });
    expect(resultOf({ status: 204, body: null })).toEqual({ status: 204 });
  });

  it('formats a problem with title, status, slug, detail and each validation error', () => {
    expect(problemMessage(422, {
      type: 'https://loyalty.test/docs/api/errors#validation', title: 'Validation failed', status: 422, detail: 'the body is invalid',
      errors: [{ path: '/rules/0/type', message: 'type must be one of base, campaign' }, { path: '', message: 'bad' }],
    })).toBe('Validation failed (422 validation): the body is invalid\n  /rules/0/type: type must be one of base, campaign\n  /: bad');
    expect(problemMessage(429, { title: 'Too many requests', retry_after: 3 })).toBe('Too many requests (429)\n  retry after 3 s');
  });

  it('formats a non-problem error body', () => {
    expect(problemMessage(502, '<html>Bad gateway</html>')).toBe('HTTP 502: <html>Bad gateway</html>');
    expect(problemMessage(500, null)).toBe('HTTP 500');
  });
});
