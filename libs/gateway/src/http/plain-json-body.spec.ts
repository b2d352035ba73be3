import fc from 'fast-check';
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { BODY_LIMIT_BYTES, readPlainJsonBody } from './plain-json-body';

const bodyParser = require('body-parser') as { json(o: object): (req: IncomingMessage, res: null, next: (err?: { type?: string }) => void) => void };
const viaBodyParser = bodyParser.json({ limit: BODY_LIMIT_BYTES, type: () => true, strict: false });

type Outcome = { ok: true; body: string } | { ok: false; tooLarge: boolean };

/** A request stream with headers, its body sent in the given chunks, then ended. */
const request = (headers: Record<string, string>, chunks: Buffer[]): IncomingMessage => {
  const s = new PassThrough() as unknown as IncomingMessage & PassThrough;
  (s as { headers: Record<string, string> }).headers = headers;
  setImmediate(() => {
    for (const c of chunks) s.write(c);
    s.end();
  });
  return s;
};

const outcome = (read: (req: IncomingMessage & { body?: unknown }, done: (err: { type?: string } | null | undefined) => void) => void, headers: Record<string, string>, chunks: Buffer[]): Promise<Outcome> =>
  new Promise((resolve) => {
    const req = request(headers, chunks) as IncomingMessage & { body?: unknown };
    read(req, (err) => resolve(err ? { ok: false, tooLarge: err.type === 'entity.too.large' } : { ok: true, body: JSON.stringify(req.body) }));
  });

/** As configure-http uses it: the body goes where body-parser puts it. */
const fast = (req: IncomingMessage & { body?: unknown }, done: (err: { type?: string } | null) => void): void => {
  if (!readPlainJsonBody(req, (err, body) => { if (!err) req.body = body; done(err); })) throw new Error('not taken');
};
const parser = (req: IncomingMessage, done: (err: { type?: string } | undefined) => void): void => viaBodyParser(req, null, done);

const split = (b: Buffer, cuts: number[]): Buffer[] => {
  const at = [...new Set(cuts.map((c) => c % (b.length + 1)))].sort((x, y) => x - y);
  const out: Buffer[] = [];
  let from = 0;
  for (const c of at) { out.push(b.subarray(from, c)); from = c; }
  out.push(b.subarray(from));
  return out.filter((c) => c.length > 0);
};

const bodies = fc.oneof(
  fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? 'null', 'utf8')),
  fc.string({ unit: 'binary' }).map((s) => Buffer.from(s, 'utf8')),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((a) => Buffer.from(a)),
  fc.constantFrom('{"email":"a@b.test"}', '  {"a":1}  ', '{"a":', '[1,2', '"x"', 'null', ' ', '{"__proto__":{"x":1}}').map((s) => Buffer.from(s, 'utf8')),
);

describe('readPlainJsonBody', () => {
  it('reads every body it takes exactly as body-parser json({ strict: false }) does: decoding, BOM, empty text, malformed JSON, chunking', async () => {
    await fc.assert(fc.asyncProperty(
      bodies, fc.boolean(), fc.constantFrom(undefined, 'application/json', 'application/json; charset=UTF-8', 'Application/JSON;charset="utf-8"'), fc.array(fc.nat(), { maxLength: 3 }),
      async (body, bom, type, cuts) => {
        const bytes = bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body]) : body;
        fc.pre(bytes.length > 0);
        const headers: Record<string, string> = { 'content-length': String(bytes.length), ...(type ? { 'content-type': type } : {}) };
        const chunks = split(bytes, cuts);
        expect(await outcome(fast, headers, chunks)).toEqual(await outcome(parser, headers, chunks));
      }), { numRuns: 400 });
  });

  it('fails a body shorter than its Content-Length, as body-parser does', async () => {
    const headers = { 'content-length': '20', 'content-type': 'application/json' };
    const chunks = [Buffer.from('{"a":1}')];
    expect(await outcome(fast, headers, chunks)).toEqual({ ok: false, tooLarge: false });
    expect(await outcome(parser, headers, chunks)).toEqual({ ok: false, tooLarge: false });
  });

  it.each([
    ['a Content-Encoding', { 'content-length': '2', 'content-encoding': 'gzip' }],
    ['chunked transfer', { 'transfer-encoding': 'chunked' }],
    ['another charset', { 'content-length': '2', 'content-type': 'application/json; charset=utf-16le' }],
    ['another media type', { 'content-length': '2', 'content-type': 'text/plain' }],
    ['no Content-Length', { 'content-type': 'application/json' }],
    ['an empty body', { 'content-length': '0' }],
    ['a body over the limit', { 'content-length': String(BODY_LIMIT_BYTES + 1) }],
    ['a malformed Content-Length', { 'content-length': '1e3' }],
  ])('leaves %s to body-parser', (_name, headers) => {
    const done = jest.fn();
    expect(readPlainJsonBody(request(headers as Record<string, string>, []), done)).toBe(false);
    expect(done).not.toHaveBeenCalled();
  });
});
