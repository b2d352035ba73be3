import type { Type } from '@nestjs/common';
import { EventsController } from './events/events.controller';
import { LedgerTimeAdminController } from './admin/ledger-time-admin.controller';
import { LedgerAdminController } from './admin/ledger-admin.controller';
import { RedemptionsController } from './redemptions/redemptions.controller';
import { ReservationsController } from './redemptions/reservations.controller';
import { WebhooksController } from './webhooks/webhooks.controller';
import { ReferralsController } from './referrals/referrals.controller';
import { ReferralsAdminController } from './referrals/referrals-admin.controller';
import { FinanceAdminController, FinanceController } from './finance/finance.controller';

/** Controllers of further capabilities (events, redemptions, …), one import per line. */
export const FEATURE_CONTROLLERS: Type<unknown>[] = [EventsController, RedemptionsController, ReservationsController, LedgerTimeAdminController, LedgerAdminController, WebhooksController, ReferralsController, ReferralsAdminController, FinanceController, FinanceAdminController];
