import type { IncomingMessage } from 'node:http';

/** The body limit of every route (body-parser's `1mb`). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** `application/json`, optionally with the UTF-8 charset (any case, optionally quoted). */
const JSON_UTF8 = /^application\/json[ \t]*(?:;[ \t]*charset[ \t]*=[ \t]*(?:utf-8|"utf-8")[ \t]*)?$/i;
const DECIMAL = /^[0-9]{1,7}$/;

/** What went wrong reading a body, as body-parser types it (`entity.parse.failed` and the rest answer 400 malformed-json). */
export interface BodyError { type: string }

/**
 * The common body read without body-parser's machinery: a request with a Content-Length of 1 byte
 * to 1 MiB, no Content-Encoding or Transfer-Encoding, and no Content-Type or a JSON one in UTF-8.
 * Returns false for every other request (the caller reads it with body-parser, which decides the
 * charsets, encodings, chunked and empty bodies and the limit as before).
 *
 * Same result as body-parser's `json({ strict: false })` for the requests it takes: the bytes
 * decoded as UTF-8 (invalid sequences become U+FFFD, as iconv-lite's decoder, Node's StringDecoder,
 * makes them), one leading byte-order mark dropped (iconv-lite strips it), an empty text is `{}`,
 * anything else `JSON.parse`d; fewer bytes than the Content-Length (the client went away) is an error.
 * body-parser was about 2 % of an enrolment's CPU (type-is, content-type, iconv-lite, raw-body, debug).
 */
export const readPlainJsonBody = (raw: IncomingMessage, done: (err: BodyError | null, body?: unknown) => void): boolean => {
  const h = raw.headers;
  if (h['content-encoding'] !== undefined || h['transfer-encoding'] !== undefined) return false;
  const type = h['content-type'];
  if (type !== undefined && !JSON_UTF8.test(type)) return false;
  const declared = h['content-length'];
  if (declared === undefined || !DECIMAL.test(declared)) return false;
  const length = Number(declared);
  if (length === 0 || length > BODY_LIMIT_BYTES) return false;
  // a body someone already read goes to body-parser, which knows what to do with it (one that has
  // arrived but is unread is still emitted to the listeners below)
  if (raw.readableEnded) return false;

  const chunks: Buffer[] = [];
  let received = 0;
  let settled = false;
  const settle = (err: BodyError | null, body?: unknown): void => {
    if (settled) return;
    settled = true;
    raw.removeListener('data', onData);
    raw.removeListener('end', onEnd);
    raw.removeListener('error', onError);
    raw.removeListener('close', onClose);
    done(err, body);
  };
  const onData = (chunk: Buffer): void => {
    received += chunk.length;
    if (received > length) return settle({ type: 'request.size.invalid' });
    chunks.push(chunk);
  };
  const onEnd = (): void => {
    if (received !== length) return settle({ type: 'request.size.invalid' });
    let text = (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received)).toString('utf8');
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    if (text.length === 0) return settle(null, {});
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return settle({ type: 'entity.parse.failed' });
    }
    settle(null, body);
  };
  const onError = (): void => settle({ type: 'request.aborted' });
  const onClose = (): void => { if (!raw.readableEnded) settle({ type: 'request.aborted' }); };
  raw.on('data', onData);
  raw.on('end', onEnd);
  raw.on('error', onError);
  raw.on('close', onClose);
  return true;
};
