import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Inject, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { pathOf } from '@loyalty/runtime';
import { AppConfig, ProblemData, ProblemError, ProblemSlug, isUnavailable, unavailable, withRequestId } from '@loyalty/platform';
import { APP_CONFIG } from '../tokens';
import { GatewayRequest } from './request-context';
import { sendProblem } from './problem-response';
import { RejectedCallLog } from './rejected-call.log';
import { redactUrl } from './redact';

const slugForStatus = (status: number): ProblemSlug =>
  status === 400 ? 'malformed-json' : status === 401 ? 'unauthenticated' : status === 403 ? 'insufficient-scope'
    : status === 404 ? 'not-found' : status === 405 ? 'method-not-allowed' : status === 409 ? 'conflict' : status === 413 ? 'payload-too-large'
      : status === 422 ? 'validation' : status === 429 ? 'rate-limited' : status === 503 ? 'unavailable' : 'internal';

/** Maps every error to a problem: domain ProblemErrors as they are, Nest HTTP errors by status, the rest 500. */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  private readonly log = new Logger('ProblemFilter');
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig, private readonly rejected: RejectedCallLog) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    this.handle(exception, host.switchToHttp().getRequest<GatewayRequest>(), host.switchToHttp().getResponse<FastifyReply>());
  }

  /** The filter's work for a request (Nest's exception layer above, the lean routes' executor in lean-routes.ts). */
  handle(exception: unknown, req: GatewayRequest, res: FastifyReply): void {
    let p: ProblemData;
    if (exception instanceof ProblemError) p = exception.problem;
    else if (exception instanceof HttpException) {
      const status = exception.getStatus();
      if (status === 400 && /^Failed to decode param/.test(exception.message)) {
        // an undecodable id names nothing (like any unknown id form): 404, not a body error
        p = { slug: 'not-found', detail: 'No resource has this name' };
      } else {
        p = { slug: slugForStatus(status), detail: status === 404 ? `no route for ${req.method} ${redactUrl(pathOf(req))}` : exception.message };
      }
    } else if (isUnavailable(exception)) {
      // the database is restarting or unreachable: a retry will do (not a defect: no error log)
      withRequestId(req.requestId, () => this.log.warn(`dependency unavailable (request ${req.requestId}): ${(exception as Error).message}`));
      p = unavailable().problem;
    } else {
      // the logger redacts the line (emails, phones, values quoted by PostgreSQL); never the error's `detail`
      withRequestId(req.requestId, () => this.log.error(`unhandled error (request ${req.requestId}): ${exception instanceof Error ? exception.message : String(exception)}`, exception instanceof Error ? exception.stack : undefined));
      p = { slug: 'internal', detail: 'An unexpected error occurred; retry with the same idempotency key' };
    }
    if (res.sent || res.raw.headersSent) return;
    sendProblem(res, p, this.config.baseUrl);
    this.rejected.record(req, res.statusCode, p);
  }
}
