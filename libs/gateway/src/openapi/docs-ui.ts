import { INestApplication } from '@nestjs/common';
import type { OpenAPIObject } from '@nestjs/swagger';
import { apiReference } from '@scalar/nestjs-api-reference';
import type { Request, Response } from 'express';
import { errorCatalogueHtml } from './error-catalogue';

/** Where the pinned Scalar bundle (package @scalar/api-reference, exact version in package.json) is served from. */
export const DOCS_BUNDLE_PATH = '/docs/assets/api-reference.js';

/**
 * The API reference at /docs, the error catalogue at /docs/api/errors and the document at
 * /openapi.json. Everything /docs needs is served by this process (the bundle from node_modules,
 * no CDN, no web fonts), so the page works offline and behind a firewall.
 */
export const serveApiDocs = (app: INestApplication, document: OpenAPIObject): void => {
  const http = app.getHttpAdapter().getInstance();
  const bundle = require.resolve('@scalar/api-reference/browser/standalone.js');
  const catalogue = errorCatalogueHtml();
  const reference = apiReference({
    spec: { url: '/openapi.json' },
    cdn: DOCS_BUNDLE_PATH,
    withDefaultFonts: false,
    hideClientButton: true,
    metaData: { title: 'Loyalty programme API' },
  } as never);
  http.get('/openapi.json', (_req: Request, res: Response) => res.json(document));
  http.get(DOCS_BUNDLE_PATH, (_req: Request, res: Response) => res.sendFile(bundle, { maxAge: '1d', headers: { 'Content-Type': 'text/javascript; charset=utf-8' } }));
  http.get(['/docs/api/errors', '/docs/api/errors/'], (_req: Request, res: Response) => res.type('html').send(catalogue));
  http.get(['/docs', '/docs/'], reference);
};
