import type { Response } from 'express';
import { ProblemData, renderProblem } from '@loyalty/platform';

/** Writes an RFC 9457 problem. The one place a problem becomes HTTP. */
export const sendProblem = (res: Response, p: ProblemData, baseUrl: string): void => {
  const body = renderProblem(p, baseUrl);
  for (const [k, v] of Object.entries(p.headers ?? {})) res.setHeader(k, v);
  res.status(body.status).type('application/problem+json').send(JSON.stringify(body));
};
