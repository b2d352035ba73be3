import type { Type } from '@nestjs/common';

/** Service modules beyond the ledger (ingest, redemption, …), one import per line. */
export const SERVICE_MODULES: Type<unknown>[] = [];
