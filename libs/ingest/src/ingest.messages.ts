import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PATTERNS } from '@loyalty/contracts';
import type { EraseCustomerRequest, GetEventRequest, ListEventsRequest, SubmitEventsRequest, TenantScoped } from '@loyalty/contracts';
import { messageCarrier, reply } from '@loyalty/messaging';
import { problem } from '@loyalty/platform';
import { EraseCustomerService } from './erase-customer/erase-customer.service';
import { EventQueueRepository } from './queue/event-queue.repository';
import { ReadEventsService } from './read-events/read-events.service';
import { SubmitEventsService } from './submit-events/submit-events.service';

const P = PATTERNS.ingest;

/** The ingest service's bus adapter: one line per pattern (partition key: the tenant). */
@Controller()
export class IngestMessages {
  constructor(
    private readonly submitter: SubmitEventsService,
    private readonly reader: ReadEventsService,
    private readonly repo: EventQueueRepository,
    private readonly eraser: EraseCustomerService,
  ) {}

  @MessagePattern(P.erase)
  erase(@Payload() p: EraseCustomerRequest) { return reply(() => this.eraser.erase(p)); }

  @MessagePattern(P.submit)
  submit(@Payload() p: SubmitEventsRequest) { return reply(() => this.submitter.submit(p.tenant, p.events, messageCarrier(p))); }

  @MessagePattern(P.get)
  get(@Payload() p: GetEventRequest) { return reply(() => this.reader.get(p.tenant, p.id)); }

  @MessagePattern(P.list)
  list(@Payload() p: ListEventsRequest) { return reply(() => this.reader.list(p.tenant, p.query ?? {})); }

  /** Sandbox wipe: the sandbox's events go with its members and ledgers. */
  @MessagePattern(P.wipe)
  wipe(@Payload() p: TenantScoped) {
    return reply(async () => {
      if (!p.tenant.endsWith('_test')) throw problem('validation', 'only a sandbox can be wiped');
      return { deleted_events: await this.repo.deleteTenant(p.tenant) };
    });
  }
}
