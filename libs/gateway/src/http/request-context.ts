import type { FastifyRequest } from 'fastify';
import type { Mode } from '@loyalty/platform';

export type Scope = 'ingest' | 'read' | 'act' | 'webhooks';
export const SCOPES: Scope[] = ['ingest', 'read', 'act', 'webhooks'];

export interface AuthContext { keyId: string; programId: string; mode: Mode; tenant: string; scopes: Scope[]; rate: { burst: number; perSecond: number } }

/** The Fastify request with what the gateway adds: its id (configure-http.ts) and the caller (AuthGuard). */
export interface GatewayRequest extends FastifyRequest {
  requestId: string;
  auth?: AuthContext;
  admin?: boolean;
  /**
   * The Idempotency-Key of a route whose command claims it itself (`@Idempotent({ claimedByCommand: true })`),
   * and the request's fingerprint: the handler passes both to the command (IdempotencyInterceptor).
   */
  idempotency?: { key: string; fingerprint: string };
}

/** A request header's value as Express's `req.header(name)` gave it (Node joins repeated headers). */
export const headerOf = (req: FastifyRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
};
