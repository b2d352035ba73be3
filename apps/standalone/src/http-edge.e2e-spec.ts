import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { InProcessBus } from '@loyalty/messaging';
import { currentRequestId } from '@loyalty/platform';
import { TestApp, startTestApp } from './testing/harness';

/**
 * The HTTP edge's framework-level behaviour, through raw sockets (exact headers and bodies): how
 * bodies are read (any Content-Type, bare scalars, empty bodies, limits), how paths and query
 * strings are matched and parsed, HEAD, unknown routes and methods, headers never sent, the docs
 * bundle's caching headers, answers to unparsable HTTP, and the request id reaching the handler's
 * async context. Written against the Express adapter and kept when the service moved to Fastify
 * (decisions §HTTP adapter): a change here is a change of the API.
 */

const BASE = 'https://loyalty.test';

interface RawResponse { status: number; head: string; headers: Record<string, string>; body: string }

/** Sends bytes on a fresh connection and reads one response (Connection: close unless given). */
const rawExchange = (port: number, bytes: Buffer | string, isHead = false): Promise<RawResponse> => new Promise((resolve, reject) => {
  const socket = connect(port, '127.0.0.1');
  let buf = Buffer.alloc(0);
  let settled = false;
  const finish = () => {
    if (settled) return;
    settled = true;
    socket.destroy();
    const text = buf.toString('latin1');
    const split = text.indexOf('\r\n\r\n');
    const head = split < 0 ? text : text.slice(0, split);
    const [statusLine, ...lines] = head.split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      if (i > 0) headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
    }
    resolve({ status: Number(statusLine.split(' ')[1]), head, headers, body: split < 0 ? '' : buf.subarray(Buffer.byteLength(text.slice(0, split + 4), 'latin1')).toString('utf8') });
  };
  const timer = setTimeout(finish, 10_000);
  socket.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    const text = buf.toString('latin1');
    const split = text.indexOf('\r\n\r\n');
    if (split < 0) return;
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, split + 2));
    if (isHead || (length && buf.length >= Buffer.byteLength(text.slice(0, split + 4), 'latin1') + Number(length[1]))) {
      clearTimeout(timer);
      finish();
    }
  });
  socket.on('end', () => { clearTimeout(timer); finish(); });
  socket.on('error', (e) => { clearTimeout(timer); if (!settled) { settled = true; reject(e); } });
  socket.write(bytes);
});

describe('HTTP edge: framework-level behaviour over raw HTTP (standalone)', () => {
  let app: TestApp;
  let port: number;
  let key: string;
  let memberId: string;

  const send = (method: string, path: string, opts: { headers?: Record<string, string>; body?: Buffer | string; key?: string | null; noLength?: boolean } = {}) => {
    let head = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n`;
    const k = opts.key === undefined ? key : opts.key;
    if (k) head += `Authorization: Bearer ${k}\r\n`;
    for (const [n, v] of Object.entries(opts.headers ?? {})) head += `${n}: ${v}\r\n`;
    const body = opts.body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body, 'utf8');
    if (opts.body !== undefined && !opts.noLength) head += `Content-Length: ${body.length}\r\n`;
    return rawExchange(port, Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), body]), method === 'HEAD');
  };
  const json = (r: RawResponse) => JSON.parse(r.body) as any;
  const expectProblem = (r: RawResponse, status: number, slug: string, detail?: string) => {
    expect({ status: r.status, type: json(r).type }).toEqual({ status, type: `${BASE}/docs/api/errors#${slug}` });
    expect(r.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(r.headers['x-request-id']).toMatch(/^[\w.:-]{1,128}$/);
    expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(r.body));
    if (detail !== undefined) expect(json(r).detail).toBe(detail);
  };
  /** What an enrolment without an email answers: the body reached validation as an object (or a scalar). */
  const expectEmailRequired = (r: RawResponse) => {
    expect(r.status).toBe(422);
    expect(json(r).errors).toEqual([{ path: '/email', message: 'email is required' }]);
  };
  let n = 0;
  const email = () => `edge${++n}@example.com`;

  beforeAll(async () => {
    app = await startTestApp();
    port = Number(new URL(app.url).port);
    const p = await app.createProgram();
    const k = await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'live', scopes: ['ingest', 'read', 'act', 'webhooks'], rate_limit: { burst: 100000, per_second: 100000 } });
    key = k.body.data.key;
    const m = await app.http('POST', '/v1/members', { key, body: { email: 'edge@example.com', external_ref: 'edge-ref-1' } });
    memberId = m.body.data.id;
  });
  afterAll(async () => app.close());

  describe('request bodies', () => {
    it.each([
      ['application/json', { 'Content-Type': 'application/json' }],
      ['text/plain', { 'Content-Type': 'text/plain' }],
      ['no Content-Type', {}],
      ['a form Content-Type', { 'Content-Type': 'application/x-www-form-urlencoded' }],
      ['an invalid Content-Type', { 'Content-Type': 'foo' }],
      ['an empty Content-Type', { 'Content-Type': '' }],
      ['charset=UTF-8', { 'Content-Type': 'application/json; charset=UTF-8' }],
    ])('reads the body as JSON whatever the Content-Type: %s', async (_name, headers) => {
      const e = email();
      const r = await send('POST', '/v1/members', { headers, body: JSON.stringify({ email: e }) });
      expect(r.status).toBe(201);
      expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(json(r).data.email).toBe(e);
    });

    it('decodes a UTF-16 charset and a gzip Content-Encoding; refuses other charsets and encodings as malformed-json', async () => {
      const e1 = email();
      const utf16 = await send('POST', '/v1/members', { headers: { 'Content-Type': 'application/json; charset=utf-16le' }, body: Buffer.from(JSON.stringify({ email: e1 }), 'utf16le') });
      expect([utf16.status, json(utf16).data?.email]).toEqual([201, e1]);
      const e2 = email();
      const gz = await send('POST', '/v1/members', { headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, body: gzipSync(JSON.stringify({ email: e2 })) });
      expect([gz.status, json(gz).data?.email]).toEqual([201, e2]);
      expectProblem(await send('POST', '/v1/members', { headers: { 'Content-Type': 'application/json; charset=latin1' }, body: JSON.stringify({ email: email() }) }), 400, 'malformed-json', 'The body is not valid JSON');
      expectProblem(await send('POST', '/v1/members', { headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'foo' }, body: JSON.stringify({ email: email() }) }), 400, 'malformed-json', 'The body is not valid JSON');
    });

    it.each(['"x"', '42', 'null', 'true', '[]'])('accepts the bare JSON value %s as the body, which then fails validation', async (body) => {
      expectEmailRequired(await send('POST', '/v1/members', { headers: { 'Content-Type': 'application/json' }, body }));
    });

    it.each([
      ['Content-Length: 0 and a JSON Content-Type', { headers: { 'Content-Type': 'application/json' }, body: '' }],
      ['Content-Length: 0 and no Content-Type', { body: '' }],
      ['no Content-Length and a JSON Content-Type', { headers: { 'Content-Type': 'application/json' } }],
      ['no Content-Length and no Content-Type', {}],
      ['an empty chunked body', { headers: { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, body: '0\r\n\r\n', noLength: true }],
    ])('treats an empty POST body (%s) like {}', async (_name, opts) => {
      expectEmailRequired(await send('POST', '/v1/members', opts));
    });

    it('reads a chunked body', async () => {
      const e = email();
      const payload = JSON.stringify({ email: e });
      const r = await send('POST', '/v1/members', { headers: { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, body: `${payload.length.toString(16)}\r\n${payload}\r\n0\r\n\r\n`, noLength: true });
      expect([r.status, json(r).data?.email]).toEqual([201, e]);
    });

    it.each([
      ['only whitespace', '   '],
      ['a truncated object', '{"email":'],
      ['trailing text', '{"email":"x@example.com"} x'],
      ['a form body', 'email=x@example.com'],
    ])('answers a body that is not JSON (%s) with 400 malformed-json', async (_name, body) => {
      expectProblem(await send('POST', '/v1/members', { headers: { 'Content-Type': 'application/json' }, body }), 400, 'malformed-json', 'The body is not valid JSON');
    });

    it('takes a body of exactly 1 MiB and refuses one byte more with 413 payload-too-large', async () => {
      const of = (size: number) => { const pre = '{"email":"x@example.com","pad":"'; return pre + 'y'.repeat(size - pre.length - 2) + '"}'; };
      const exact = await send('POST', '/v1/members', { headers: { 'Content-Type': 'application/json' }, body: of(1024 * 1024) });
      expect(exact.status).toBe(422);
      expect(json(exact).errors).toEqual([{ path: '/pad', message: 'unknown field pad' }]);
      expectProblem(await send('POST', '/v1/members', { headers: { 'Content-Type': 'text/plain' }, body: of(1024 * 1024 + 1) }), 413, 'payload-too-large', 'The body is larger than 1 MiB');
    });

    it('checks the parsed body (BOM skipped, NUL, lone surrogates, __proto__, depth) before validation', async () => {
      const e = email();
      const bom = await send('POST', '/v1/members', { headers: { 'Content-Type': 'application/json' }, body: `\ufeff${JSON.stringify({ email: e })}` });
      expect([bom.status, json(bom).data?.email]).toEqual([201, e]);
      const nul = await send('POST', '/v1/members', { headers: { 'Content-Type': 'application/json' }, body: '{"email":"a\\u0000b@example.com"}' });
      expect([nul.status, json(nul).errors]).toEqual([422, [{ path: '/email', message: 'must not contain NUL characters' }]]);
      const proto = await send('POST', '/v1/members', { headers: { 'Content-Type': 'application/json' }, body: '{"__proto__":{"x":1},"email":"p@example.com"}' });
      expect([proto.status, json(proto).errors]).toEqual([422, [{ path: '/__proto__', message: 'unknown field __proto__' }]]);
      const deep = await send('POST', '/v1/members', { headers: { 'Content-Type': 'application/json' }, body: '['.repeat(40) + ']'.repeat(40) });
      expect(deep.status).toBe(422);
      expect(json(deep).errors[0].message).toBe('nesting deeper than 32 levels');
    });

    it('reads a DELETE body only when it has a Content-Length', async () => {
      const withLength = await send('DELETE', `/v1/members/${memberId}x`, { headers: { 'Content-Type': 'application/json' }, body: '{bad' });
      expectProblem(withLength, 400, 'malformed-json');
      expectProblem(await send('DELETE', `/v1/members/${memberId}x`, { headers: { 'Transfer-Encoding': 'chunked' }, body: '4\r\n{bad\r\n0\r\n\r\n', noLength: true }), 404, 'not-found', 'member not found');
      expectProblem(await send('DELETE', `/v1/members/${memberId}x`), 404, 'not-found', 'member not found');
    });

    it('ignores a GET body', async () => {
      const r = await send('GET', '/v1/ping', { headers: { 'Content-Type': 'application/json' }, body: '{bad' });
      expect(r.status).toBe(200);
    });
  });

  describe('routing', () => {
    it('matches paths case-insensitively, with or without one trailing slash, never with doubled slashes', async () => {
      for (const path of ['/healthz', '/HEALTHZ', '/healthz/', '/Healthz/?x=1']) {
        const r = await send('GET', path, { key: null });
        expect([path, r.status, r.body]).toEqual([path, 200, '{"status":"ok"}']);
      }
      expectProblem(await send('GET', '/healthz//', { key: null }), 404, 'not-found', 'no route for GET /healthz//');
      expectProblem(await send('GET', '//healthz', { key: null }), 404, 'not-found', 'no route for GET //healthz');
      const upper = await send('POST', '/V1/Members/', { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email: email() }) });
      expect(upper.status).toBe(201);
    });

    it('keeps the case of path parameters, reads them percent-decoded and of any length', async () => {
      expect((await send('GET', `/V1/MEMBERS/${memberId}`)).status).toBe(200);
      expectProblem(await send('GET', `/v1/members/${memberId.toLowerCase()}`), 404, 'not-found', 'member not found');
      expect((await send('GET', '/v1/members/ref%3Aedge-ref-1')).status).toBe(200);
      expectProblem(await send('GET', '/v1/members/ref:EDGE-REF-1'), 404, 'not-found', 'member not found');
      // a long parameter reaches the handler (not a routing 404)
      expectProblem(await send('GET', `/v1/members/ref:${'b'.repeat(300)}`), 404, 'not-found', 'member not found');
      expectProblem(await send('GET', '/v1/members/a%2Fb'), 404, 'not-found', 'member not found');
      // an undecodable parameter names nothing
      expectProblem(await send('GET', '/v1/members/%ZZ'), 404, 'not-found', 'No resource has this name');
    });

    it('answers HEAD on every GET route with the GET headers and no body', async () => {
      for (const path of ['/healthz', `/v1/members/${memberId}`, '/openapi.json', '/docs']) {
        const get = await send('GET', path);
        const head = await send('HEAD', path);
        expect([path, head.status]).toEqual([path, 200]);
        expect(head.headers['content-type']).toBe(get.headers['content-type']);
        expect(head.headers['content-length']).toBe(get.headers['content-length']);
        expect(head.body).toBe('');
      }
      const missing = await send('HEAD', '/nope', { key: null });
      expect([missing.status, missing.headers['content-type'], missing.body]).toEqual([404, 'application/problem+json; charset=utf-8', '']);
    });

    it('answers an unknown route, and a known path with another method (OPTIONS included), with a 404 not-found problem', async () => {
      expectProblem(await send('GET', '/nope', { key: null }), 404, 'not-found', 'no route for GET /nope');
      expectProblem(await send('POST', '/healthz', { key: null, body: '{}' }), 404, 'not-found', 'no route for POST /healthz');
      expectProblem(await send('DELETE', '/v1/ping'), 404, 'not-found', 'no route for DELETE /v1/ping');
      expectProblem(await send('OPTIONS', '/v1/members'), 404, 'not-found', 'no route for OPTIONS /v1/members');
      expectProblem(await send('OPTIONS', '*', { key: null }), 404, 'not-found', 'no route for OPTIONS *');
      expectProblem(await send('TRACE', '/healthz', { key: null }), 404, 'not-found', 'no route for TRACE /healthz');
    });

    it('reads the body before routing: methods no route has (TRACE, PURGE, QUERY) and paths that do not decode', async () => {
      for (const method of ['TRACE', 'PURGE', 'QUERY']) {
        expectProblem(await send(method, '/healthz', { key: null, headers: { 'Content-Type': 'application/json' }, body: '{bad' }), 400, 'malformed-json');
        expectProblem(await send(method, '/healthz', { key: null }), 404, 'not-found', `no route for ${method} /healthz`);
      }
      expectProblem(await send('POST', '/v1/members/%ZZ/x', { headers: { 'Content-Type': 'application/json' }, body: '{bad' }), 400, 'malformed-json');
      expectProblem(await send('GET', '/v1/members/%ZZ/ledger'), 404, 'not-found', 'No resource has this name');
      expectProblem(await send('GET', '/nope%ZZ', { key: null }), 404, 'not-found', 'no route for GET /nope%ZZ');
    });

    it('matches fixed path segments on the raw path: an escape there matches no route', async () => {
      expectProblem(await send('GET', `/v1/m%65mbers/${memberId}`), 404, 'not-found', `no route for GET /v1/m%65mbers/${memberId}`);
      expectProblem(await send('GET', '/health%7Az', { key: null }), 404, 'not-found', 'no route for GET /health%7Az');
    });

    it('answers an encoded NUL with 404 in the path and 422 in a query parameter, before authentication', async () => {
      expectProblem(await send('GET', '/v1/members/%00', { key: null }), 404, 'not-found', 'No resource has this name');
      const q = await send('GET', '/v1/members?email=x%00', { key: null });
      expect([q.status, json(q).errors]).toEqual([422, [{ path: '/email', message: 'must not contain NUL characters' }]]);
    });
  });

  describe('query strings (parsed like Node querystring: repeated keys become arrays, brackets are part of the name)', () => {
    it.each([
      ['/v1/members?limit=1&limit=2', '/limit', 'limit must be an integer number'],
      ['/v1/members?limit[a]=1', '/limit[a]', 'unknown field limit[a]'],
      ['/v1/members?a[b]=c', '/a[b]', 'unknown field a[b]'],
      ['/v1/members?email=a&email=b', '/email', 'email must be a string'],
      ['/v1/members?EMAIL=x', '/EMAIL', 'unknown field EMAIL'],
      ['/v1/members?limit=%ZZ', '/limit', 'limit must be an integer number'],
    ])('%s → 422 at %s', async (path, at, message) => {
      const r = await send('GET', path);
      expect(r.status).toBe(422);
      expect(json(r).errors.find((e: { path: string }) => e.path === at)?.message).toContain(message);
    });

    it('decodes + as a space and tolerates empty pairs and ; inside a value', async () => {
      expect(json(await send('GET', '/v1/members?email=edge%40example.com&&&')).data.map((m: { id: string }) => m.id)).toEqual([memberId]);
      expect(json(await send('GET', '/v1/members?email=edge+x%40example.com')).data).toEqual([]);
      expect((await send('GET', '/v1/members?limit=1;limit=2')).status).toBe(422);
      expect((await send('GET', '/v1/members?limit=1e1')).status).toBe(200);
    });
  });

  describe('headers', () => {
    it('sends neither X-Powered-By nor ETag, JSON as application/json; charset=utf-8 with its Content-Length, and keep-alive at 5 s', async () => {
      const r = await rawExchange(port, `GET /v1/members/${memberId} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
      expect(r.status).toBe(200);
      expect(r.headers['x-powered-by']).toBeUndefined();
      expect(r.headers.etag).toBeUndefined();
      expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(r.body));
      expect(r.headers.connection).toBe('keep-alive');
      expect(r.headers['keep-alive']).toBe('timeout=5');
      expect(r.headers['x-ratelimit-limit']).toBe('100000');
    });

    it('answers If-None-Match: * with 304 where Express wrote the answer with send (documents, pages, metrics, the ledger-entries page), never on plain JSON answers', async () => {
      for (const path of ['/openapi.json', '/docs', '/docs/api/errors', '/metrics', '/v1/ledger-entries']) {
        for (const method of ['GET', 'HEAD']) {
          const r = await send(method, path, { headers: { 'If-None-Match': '*' } });
          expect([method, path, r.status, r.headers['content-type'], r.headers['content-length'], r.body]).toEqual([method, path, 304, undefined, undefined, '']);
          expect(r.headers['x-request-id']).toBeTruthy();
        }
        expect((await send('GET', path, { headers: { 'If-None-Match': '*', 'Cache-Control': 'no-cache' } })).status).toBe(200);
        expect((await send('GET', path, { headers: { 'If-None-Match': '"abc"' } })).status).toBe(200);
      }
      for (const path of ['/healthz', `/v1/members/${memberId}`, '/v1/ping']) expect((await send('GET', path, { headers: { 'If-None-Match': '*' } })).status).toBe(200);
    });

    it('keeps a well-formed X-Request-Id and replaces any other with a UUID', async () => {
      expect((await send('GET', '/healthz', { key: null, headers: { 'X-Request-Id': 'given.id:1-x_y' } })).headers['x-request-id']).toBe('given.id:1-x_y');
      for (const bad of ['bad id', 'a'.repeat(129), 'x<y>']) {
        expect((await send('GET', '/healthz', { key: null, headers: { 'X-Request-Id': bad } })).headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      }
    });

    it('serves the docs bundle with caching headers, ranges and conditional requests', async () => {
      const r = await send('HEAD', '/docs/assets/api-reference.js');
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(r.headers['cache-control']).toBe('public, max-age=86400');
      expect(r.headers['accept-ranges']).toBe('bytes');
      expect(r.headers['last-modified']).toMatch(/GMT$/);
      expect(Number(r.headers['content-length'])).toBeGreaterThan(100_000);
      const range = await send('GET', '/docs/assets/api-reference.js', { headers: { Range: 'bytes=0-9' } });
      expect([range.status, range.headers['content-range'], range.body.length]).toEqual([206, `bytes 0-9/${r.headers['content-length']}`, 10]);
      const fresh = await send('GET', '/docs/assets/api-reference.js', { headers: { 'If-Modified-Since': r.headers['last-modified'] } });
      expect([fresh.status, fresh.body]).toEqual([304, '']);
      const docs = await send('GET', '/DOCS/', { key: null });
      expect([docs.status, docs.headers['content-type']]).toEqual([200, 'text/html; charset=utf-8']);
      const metrics = await send('GET', '/metrics', { key: null });
      expect([metrics.status, metrics.headers['content-type']]).toEqual([200, 'text/plain; charset=utf-8; version=0.0.4']);
    });
  });

  describe('HTTP that does not parse', () => {
    it.each([
      ['a broken request line', 'GARBAGE\r\n\r\n', 400, 'malformed-json'],
      ['an unknown method', 'FOO /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'malformed-json'],
      ['headers over 16 KiB', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 413, 'payload-too-large'],
    ])('answers %s with a problem written on the socket', async (_name, bytes, status, slug) => {
      const r = await rawExchange(port, bytes);
      expect(r.status).toBe(status);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(r.headers.connection).toBe('close');
      expect(json(r).type).toBe(`${BASE}/docs/api/errors#${slug}`);
    });
  });

  describe('request context', () => {
    it('the handler\'s bus calls (after the body is read) go as part of the request: the bus is asked inside its request id', async () => {
      // the command bus behind the gateway's Bus: what it sees as the current request is what it forwards to the service
      const seen: (string | undefined)[] = [];
      const original = InProcessBus.prototype.request;
      const spy = jest.spyOn(InProcessBus.prototype, 'request').mockImplementation(function (this: InProcessBus, ...args: Parameters<InProcessBus['request']>) {
        seen.push(currentRequestId());
        return original.apply(this, args);
      });
      try {
        expect((await send('GET', `/v1/members/${memberId}`, { headers: { 'X-Request-Id': 'ctx-get-1' } })).status).toBe(200);
        expect((await send('POST', '/v1/members', { headers: { 'X-Request-Id': 'ctx-post-1', 'Content-Type': 'application/json' }, body: JSON.stringify({ email: email() }) })).status).toBe(201);
      } finally {
        spy.mockRestore();
      }
      expect(seen).toContain('ctx-get-1');
      expect(seen).toContain('ctx-post-1');
      expect(seen.every((s) => s === 'ctx-get-1' || s === 'ctx-post-1')).toBe(true);
    });
  });
});
