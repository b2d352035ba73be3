import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PATTERNS, TenantScoped } from '@loyalty/contracts';
import { reply } from '@loyalty/messaging';
import { SweepService } from './sweep.service';

/** `ledger.sweep {tenant}`: runs every due time-based behaviour of the tenant now (the test clock calls it after a move). */
@Controller()
export class SweepMessages {
  constructor(private readonly sweeps: SweepService) {}

  @MessagePattern(PATTERNS.ledger.sweep)
  sweep(@Payload() p: TenantScoped) {
    return reply(async () => this.sweeps.sweepTenant(p.tenant, true));
  }
}
