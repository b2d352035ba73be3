import type { Request } from 'express';
import type { Mode } from '@loyalty/platform';

export type Scope = 'ingest' | 'read' | 'act' | 'webhooks';
export const SCOPES: Scope[] = ['ingest', 'read', 'act', 'webhooks'];

export interface AuthContext { keyId: string; programId: string; mode: Mode; tenant: string; scopes: Scope[]; rate: { burst: number; perSecond: number } }

export interface GatewayRequest extends Request {
  requestId: string;
  auth?: AuthContext;
  admin?: boolean;
}
