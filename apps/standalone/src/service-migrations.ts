import type { Migration } from '@loyalty/platform';

/** Schemas of the service modules beyond the ledger, one spread per service. */
export const SERVICE_MIGRATIONS: Migration[] = [];
