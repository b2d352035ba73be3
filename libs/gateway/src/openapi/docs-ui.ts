import { INestApplication } from '@nestjs/common';
import type { OpenAPIObject } from '@nestjs/swagger';
import { apiReference } from '@scalar/nestjs-api-reference';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { fastifyOf, isFreshForExpress, sendNotModified } from '@loyalty/runtime';
import { errorCatalogueHtml } from './error-catalogue';

// the static-file sender behind Express's res.sendFile (same package), so the bundle keeps its
// caching headers, ranges and conditional answers
const send = require('send') as (req: FastifyRequest['raw'], path: string, options: { maxAge: string; etag: boolean }) => NodeJS.EventEmitter & { pipe(res: FastifyReply['raw']): void };

/** Where the pinned Scalar bundle (package @scalar/api-reference, exact version in package.json) is served from. */
export const DOCS_BUNDLE_PATH = '/docs/assets/api-reference.js';

const HTML = 'text/html; charset=utf-8';

/** An answer Express wrote with `send`: 304 to a fresh request (isFreshForExpress), else the text. */
const sendAsExpress = (reply: FastifyReply, type: string, text: string): void => {
  if (isFreshForExpress(reply)) sendNotModified(reply);
  else reply.type(type).send(text);
};

/**
 * The API reference at /docs, the error catalogue at /docs/api/errors and the document at
 * /openapi.json. Everything /docs needs is served by this process (the bundle from node_modules,
 * no CDN, no web fonts), so the page works offline and behind a firewall.
 */
export const serveApiDocs = (app: INestApplication, document: OpenAPIObject): void => {
  const http = fastifyOf(app);
  const bundle = require.resolve('@scalar/api-reference/browser/standalone.js');
  const catalogue = errorCatalogueHtml();
  const openapi = JSON.stringify(document);
  // the page Scalar's (Express) handler sends, taken once
  let reference = '';
  (apiReference({
    spec: { url: '/openapi.json' },
    cdn: DOCS_BUNDLE_PATH,
    withDefaultFonts: false,
    hideClientButton: true,
    metaData: { title: 'Loyalty programme API' },
  } as never) as unknown as (req: unknown, res: { send(html: string): void }) => void)({}, { send: (html) => { reference = html; } });
  // `metricsRoute`: the label these routes had under Express (the path list they were declared with)
  http.get('/openapi.json', (_req, reply) => { sendAsExpress(reply, 'application/json; charset=utf-8', openapi); });
  http.get(DOCS_BUNDLE_PATH, (req, reply) => {
    // as Express's res.sendFile(bundle, { maxAge: '1d' }) with the app's ETag setting (off); the
    // file is written on the raw response, and a refused range or precondition goes to the
    // exception filter, as it did through Express's next(err)
    const file = send(req.raw, encodeURI(bundle), { maxAge: '1d', etag: false });
    file.on('headers', (res: FastifyReply['raw']) => res.setHeader('Content-Type', 'text/javascript; charset=utf-8'));
    file.on('error', (err: Error) => { reply.send(err); });
    file.pipe(reply.raw);
  });
  http.get('/docs/api/errors', { config: { metricsRoute: '/docs/api/errors,/docs/api/errors/' } }, (_req, reply) => { sendAsExpress(reply, HTML, catalogue); });
  http.get('/docs', { config: { metricsRoute: '/docs,/docs/' } }, (_req, reply) => { sendAsExpress(reply, HTML, reference); });
};
