import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { pathOf } from '@loyalty/runtime';
import { AppConfig, problem } from '@loyalty/platform';
import { APP_CONFIG } from '../tokens';
import { GatewayRequest, Scope, headerOf } from '../http/request-context';
import { ApiKeysService } from './api-keys.service';
import { ADMIN_KEY, PUBLIC_KEY, SCOPES_KEY } from './auth.decorators';
import { RateLimiter } from '../rate-limit/rate-limiter';
import { MAX_BATCH_EVENTS } from '../events/events.validation';

const bearer = (req: GatewayRequest): string | null => {
  const h = headerOf(req, 'authorization');
  const m = h?.match(/^Bearer\s+(\S+)\s*$/i);
  return m ? m[1] : null;
};
const sha = (s: string) => createHash('sha256').update(s).digest();

/** What a route asks of its caller, read once from its decorators (`accessOf`). */
export interface RouteAccess { isPublic: boolean; isAdmin: boolean; scopes: Scope[] | undefined }

/** Authentication, the rate limit and scopes, in that order, for every route. */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly adminHash: Buffer;

  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysService,
    private readonly limiter: RateLimiter,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.adminHash = sha(config.adminToken);
  }

  /** A route's access rules from its decorators (the handler's over its controller's). */
  accessOf(targets: [Function, Function]): RouteAccess {
    return {
      isPublic: this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, targets) === true,
      isAdmin: this.reflector.getAllAndOverride<boolean>(ADMIN_KEY, targets) === true,
      scopes: this.reflector.getAllAndOverride<Scope[] | undefined>(SCOPES_KEY, targets),
    };
  }

  canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<GatewayRequest>();
    const res = context.switchToHttp().getResponse<FastifyReply>();
    return this.authorize(req, res, this.accessOf([context.getHandler(), context.getClass()]));
  }

  /** The guard's work for a route whose rules are known (Nest's pipeline above, the lean routes' executor in lean-routes.ts). */
  async authorize(req: GatewayRequest, res: FastifyReply, access: RouteAccess): Promise<boolean> {
    if (access.isPublic) return true;
    const token = bearer(req);
    if (access.isAdmin) {
      if (!token || !timingSafeEqual(sha(token), this.adminHash)) throw problem('unauthenticated', 'A valid admin token is required');
      req.admin = true;
      return true;
    }
    if (!token) throw problem('unauthenticated', 'Missing API key: send Authorization: Bearer <key>');
    const auth = await this.keys.verify(token);
    if (!auth) throw problem('unauthenticated', 'Unknown, revoked or expired API key');
    req.auth = auth;

    // every authenticated call counts against the key and carries the rate-limit headers, a refused scope included
    const cost = Math.min(this.costOf(req), auth.rate.burst);
    const r = await this.limiter.take(auth.keyId, auth.rate, cost);
    res.header('X-RateLimit-Limit', String(auth.rate.burst));
    res.header('X-RateLimit-Remaining', String(Math.max(0, Math.floor(r.remaining))));
    if (!r.allowed) {
      const retryAfter = Math.max(1, Math.ceil(r.retryAfterSeconds));
      throw problem('rate-limited', `Rate limit of ${auth.rate.perSecond}/s (burst ${auth.rate.burst}) exceeded`, {
        extra: { retry_after: retryAfter }, headers: { 'Retry-After': String(retryAfter) },
      });
    }

    const needed = access.scopes;
    if (needed?.length && !needed.some((s) => auth.scopes.includes(s))) {
      throw problem('insufficient-scope', `This endpoint needs the ${needed.join(' or ')} scope`);
    }
    return true;
  }

  /**
   * A batch of n events costs ceil(n/10) tokens, at most the key's burst (a batch the bucket can
   * never hold would be refused 429 forever); every other call, an oversized batch included
   * (the controller refuses it with a 422), costs one.
   */
  private costOf(req: GatewayRequest): number {
    const body = req.body as { events?: unknown } | undefined;
    if (req.method === 'POST' && pathOf(req) === '/v1/events' && body && Array.isArray(body.events) && body.events.length <= MAX_BATCH_EVENTS) {
      return Math.max(1, Math.ceil(body.events.length / 10));
    }
    return 1;
  }
}
