import { INestApplication } from '@nestjs/common';
import express, { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppConfig, ProblemData, pointer, renderProblem, validation, withRequestId } from '@loyalty/platform';
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
  // Everything from here on (Nest's pipeline, the bus, the logger) runs as part of the request: its
  // log lines carry request_id and the bus forwards it. Entered after the body is read, whose
  // stream callbacks would not keep the async context.
  app.use((req: Request, _res: Response, next: NextFunction) => withRequestId((req as GatewayRequest).requestId, next));
  answerUnparsableRequests(app.getHttpServer() as Server, config.baseUrl);
  app.getHttpAdapter().getInstance().disable('x-powered-by');
  app.getHttpAdapter().getInstance().set('etag', false);
};

/**
 * Requests Node's HTTP parser refuses before any middleware runs (a URL or headers over 16 KiB, a
 * broken request line) are answered with a problem too, not Node's bare status line. The slug list
 * is closed (decisions §2): oversized headers are a 413 `payload-too-large`, anything else a 400.
 */
const answerUnparsableRequests = (server: Server, baseUrl: string): void => {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const p: ProblemData = err.code === 'HPE_HEADER_OVERFLOW'
      ? { slug: 'payload-too-large', detail: 'The request line and headers are larger than the server accepts (16 KiB)' }
      : { slug: 'malformed-json', detail: 'The request is not valid HTTP' };
    const body = JSON.stringify(renderProblem(p, baseUrl));
    const status = p.slug === 'payload-too-large' ? '413 Payload Too Large' : '400 Bad Request';
    socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
};
