import type { MigrationClass } from '@loyalty/platform';
import { INGEST_MIGRATIONS } from '@loyalty/ingest';
import { REDEMPTION_MIGRATIONS } from '@loyalty/redemption';
import { WEBHOOK_MIGRATIONS } from '@loyalty/webhook';
import { REFERRAL_MIGRATIONS } from '@loyalty/referral';

/** Schemas of the service modules beyond the ledger, one spread per service. */
export const SERVICE_MIGRATIONS: MigrationClass[] = [...INGEST_MIGRATIONS, ...REDEMPTION_MIGRATIONS, ...WEBHOOK_MIGRATIONS, ...REFERRAL_MIGRATIONS];
