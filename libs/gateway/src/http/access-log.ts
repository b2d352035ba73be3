import { Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { GatewayRequest } from './request-context';
import { redactUrl } from './redact';

const log = new Logger('http');

/**
 * One structured line per request, written when the response finishes: request id, route, status,
 * duration and the calling key's id. Never the Authorization header, the body, or personal
 * identifiers in the URL (see redactUrl).
 */
export const accessLog = (req: Request, res: Response, next: NextFunction): void => {
  const started = process.hrtime.bigint();
  res.on('finish', () => {
    const r = req as GatewayRequest;
    log.log({
      msg: 'http request',
      request_id: r.requestId,
      method: req.method,
      path: redactUrl(req.originalUrl).slice(0, 512),
      status: res.statusCode,
      duration_ms: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
      key_id: r.auth?.keyId ?? null,
      program_id: r.auth?.programId ?? null,
      mode: r.auth?.mode ?? null,
      admin: r.admin ?? false,
    });
  });
  next();
};
