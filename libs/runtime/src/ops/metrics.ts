import type { NextFunction, Request, Response } from 'express';
import { METRICS } from '@loyalty/platform';

export { metricsRegistry } from '@loyalty/platform';

/** Records every request's duration under its route pattern (never the raw path: ids would explode the label set). */
export const metricsMiddleware = (req: Request, res: Response, next: NextFunction): void => {
  const end = METRICS.httpDuration.startTimer();
  res.on('finish', () => {
    const route = (req.route?.path as string | undefined) ?? 'unmatched';
    end({ method: req.method, route, status: String(res.statusCode) });
  });
  next();
};
