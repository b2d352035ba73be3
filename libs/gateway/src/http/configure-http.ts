import { INestApplication } from '@nestjs/common';
import express, { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import { AppConfig, pointer, validation } from '@loyalty/platform';
import { GatewayRequest } from './request-context';
import { sendProblem } from './problem-response';
import { accessLog } from './access-log';
import { inspectBody, nulInUrl } from './nul-guard';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** Middleware that must run before Nest's routing: request ids, JSON bodies up to 1 MiB, malformed JSON. */
export const configureHttp = (app: INestApplication, config: AppConfig): void => {
  app.use((req: Request, res: Response, next: NextFunction) => {
    const given = req.header('x-request-id');
    const id = given && REQUEST_ID.test(given) ? given : randomUUID();
    (req as GatewayRequest).requestId = id;
    res.setHeader('X-Request-Id', id);
    next();
  });
  app.use(accessLog);
  app.use((req: Request, res: Response, next: NextFunction) => {
    const nul = nulInUrl(req.originalUrl);
    if (!nul) return next();
    if (nul.where === 'path') return sendProblem(res, { slug: 'not-found', detail: 'No resource has this name' }, config.baseUrl);
    return sendProblem(res, validation([{ path: pointer(nul.param), message: 'must not contain NUL characters' }]).problem, config.baseUrl);
  });
  const json = express.json({ limit: '1mb', type: () => true, strict: false });
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'DELETE' && !req.headers['content-length']) return next();
    json(req, res, (err?: { type?: string }) => {
      if (!err) {
        const bad = inspectBody(req.body);
        if (bad === null) return next();
        return sendProblem(res, validation([bad]).problem, config.baseUrl);
      }
      if (err.type === 'entity.too.large') return sendProblem(res, { slug: 'payload-too-large', detail: 'The body is larger than 1 MiB' }, config.baseUrl);
      return sendProblem(res, { slug: 'malformed-json', detail: 'The body is not valid JSON' }, config.baseUrl);
    });
  });
  app.getHttpAdapter().getInstance().disable('x-powered-by');
  app.getHttpAdapter().getInstance().set('etag', false);
};
