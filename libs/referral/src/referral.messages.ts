import { Controller, Inject } from '@nestjs/common';
import { Pool } from 'pg';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PATTERNS, TenantScoped } from '@loyalty/contracts';
import { CommandHandler, WireHead, wipeTenantRows } from '@loyalty/event-store';
import { COMMAND_HANDLER, PG_POOL } from '@loyalty/platform';
import { reply } from '@loyalty/messaging';
import { CreateReferralInput, CreateReferralService } from './create-referral/create-referral.service';
import { ReferralDetailsService } from './referral-details/referral-details.service';
import { ReferralReadModels } from './referral-decisions';
import { REFERRAL_TENANT_TABLES } from './referral.migrations';
import { ReviewReferralService } from './review-referral/review-referral.service';

const P = PATTERNS.referral;

/** The referral service's bus adapter: one line per pattern. */
@Controller()
export class ReferralMessages {
  constructor(
    private readonly readModels: ReferralReadModels,
    @Inject(COMMAND_HANDLER) private readonly handler: CommandHandler,
    @Inject(PG_POOL) private readonly pool: Pool,
    private readonly creating: CreateReferralService,
    private readonly reading: ReferralDetailsService,
    private readonly reviewing: ReviewReferralService,
  ) {}

  @MessagePattern(P.create)
  create(@Payload() p: TenantScoped & { body: CreateReferralInput }) { return reply(() => this.creating.create(p.tenant, p.body)); }

  @MessagePattern(P.get)
  get(@Payload() p: TenantScoped & { id: string }) { return reply(() => this.reading.get(p.tenant, p.id)); }

  @MessagePattern(P.details)
  details(@Payload() p: TenantScoped & { id: string }) { return reply(() => this.reading.details(p.tenant, p.id)); }

  @MessagePattern(P.approve)
  approve(@Payload() p: TenantScoped & { id: string }) { return reply(() => this.reviewing.review(p.id, 'approve', p.actor ?? null)); }

  @MessagePattern(P.reject)
  reject(@Payload() p: TenantScoped & { id: string }) { return reply(() => this.reviewing.review(p.id, 'reject', p.actor ?? null)); }

  /**
   * The admin plane wiped a sandbox: its referral streams are gone, so no cached state of them may
   * survive, and rows this service's runner wrote from events it had read before the delete (its
   * batches gather for a moment) are swept up once it has caught up.
   */
  @MessagePattern(P.wipe)
  wipe(@Payload() p: TenantScoped & { head?: WireHead | null }) {
    return reply(async () => {
      this.handler.forget();
      return { forgotten: true, rows: await wipeTenantRows(this.readModels.store, this.pool, this.readModels.runners, REFERRAL_TENANT_TABLES, p.tenant, p.head) };
    });
  }
}
