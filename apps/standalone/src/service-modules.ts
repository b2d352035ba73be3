import type { Type } from '@nestjs/common';
import { IngestModule } from '@loyalty/ingest';
import { RedemptionModule } from '@loyalty/redemption';
import { WebhookModule } from '@loyalty/webhook';
import { ReferralModule } from '@loyalty/referral';

/** Service modules beyond the ledger (ingest, redemption, …), one import per line. */
export const SERVICE_MODULES: Type<unknown>[] = [IngestModule, RedemptionModule, WebhookModule, ReferralModule];
