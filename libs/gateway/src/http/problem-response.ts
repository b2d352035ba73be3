import type { FastifyReply } from 'fastify';
import { ProblemData, renderProblem } from '@loyalty/platform';

/** The Content-Type of every problem, as Express wrote it (`type('application/problem+json')` then `send` added the charset). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

/** Writes an RFC 9457 problem. The one place a problem becomes HTTP. */
export const sendProblem = (reply: FastifyReply, p: ProblemData, baseUrl: string): void => {
  const body = renderProblem(p, baseUrl);
  for (const [k, v] of Object.entries(p.headers ?? {})) reply.header(k, v);
  reply.code(body.status).header('content-type', PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
};
