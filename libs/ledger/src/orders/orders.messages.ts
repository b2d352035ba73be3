import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PATTERNS, ProcessEventRequest, ProcessEventsRequest, TenantScoped } from '@loyalty/contracts';
import { reply } from '@loyalty/messaging';
import { EntryReviewService } from './entry-review.service';
import { OrdersService } from './orders.service';

const P = PATTERNS.ledger;

/** Bus adapter of order processing and entry review: one line per pattern. */
@Controller()
export class OrdersMessages {
  constructor(private readonly orders: OrdersService, private readonly review: EntryReviewService) {}

  @MessagePattern(P.processEvent)
  process(@Payload() p: ProcessEventRequest) { return reply(() => this.orders.process(p)); }

  @MessagePattern(P.processEvents)
  processMany(@Payload() p: ProcessEventsRequest) { return reply(async () => ({ results: await this.orders.processBatch(p.events) })); }

  @MessagePattern(P.approveEntry)
  approve(@Payload() p: TenantScoped & { id: string }) { return reply(() => this.review.review(p.tenant, p.id, 'approve', p.actor ?? null)); }

  @MessagePattern(P.rejectEntry)
  reject(@Payload() p: TenantScoped & { id: string }) { return reply(() => this.review.review(p.tenant, p.id, 'reject', p.actor ?? null)); }
}
