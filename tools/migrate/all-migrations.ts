import { GATEWAY_MIGRATIONS } from '@loyalty/gateway';
import { INGEST_MIGRATIONS } from '@loyalty/ingest';
import { LEDGER_MIGRATIONS } from '@loyalty/ledger';
import type { MigrationClass } from '@loyalty/platform';
import { REDEMPTION_MIGRATIONS } from '@loyalty/redemption';
import { REFERRAL_MIGRATIONS } from '@loyalty/referral';
import { processMigrations } from '@loyalty/runtime';
import { WEBHOOK_MIGRATIONS } from '@loyalty/webhook';

/**
 * Every schema migration of the service: the ones each process needs (event store, projections,
 * snapshots, programmes) and each service lib's list, the same set the standalone app applies.
 * A new lib with a schema adds its `<LIB>_MIGRATIONS` here and to its app.
 */
export const ALL_MIGRATIONS: MigrationClass[] = processMigrations([
  ...GATEWAY_MIGRATIONS,
  ...LEDGER_MIGRATIONS,
  ...INGEST_MIGRATIONS,
  ...REDEMPTION_MIGRATIONS,
  ...WEBHOOK_MIGRATIONS,
  ...REFERRAL_MIGRATIONS,
]);
