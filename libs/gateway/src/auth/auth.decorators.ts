import { SetMetadata } from '@nestjs/common';
import type { Scope } from '../http/request-context';

export const SCOPES_KEY = 'loyalty:scopes';
export { PUBLIC_ROUTE as PUBLIC_KEY } from '@loyalty/platform';
import { PUBLIC_ROUTE } from '@loyalty/platform';
export const ADMIN_KEY = 'loyalty:admin';

/** The key needs at least one of these scopes. Without the decorator any valid key passes. */
export const RequireScopes = (...scopes: Scope[]) => SetMetadata(SCOPES_KEY, scopes);
/** No authentication (health, docs). */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);
/** Admin plane: the LOYALTY_ADMIN_TOKEN bearer. */
export const AdminOnly = () => SetMetadata(ADMIN_KEY, true);
