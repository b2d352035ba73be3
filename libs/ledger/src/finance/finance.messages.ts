import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PATTERNS } from '@loyalty/contracts';
import { reply } from '@loyalty/messaging';
import { FinanceService } from './finance.service';

type T = { tenant: string; actor?: string };
const P = PATTERNS.ledger;

/** Closing the books over the bus (decisions §9a): one line per pattern. */
@Controller()
export class FinanceMessages {
  constructor(private readonly finance: FinanceService) {}

  @MessagePattern(P.liabilityAsOf)
  liability(@Payload() p: T & { as_of?: unknown }) { return reply(() => this.finance.liabilityAt(p.tenant, p.as_of)); }

  @MessagePattern(P.rollForward)
  rollForward(@Payload() p: T & { query: { from?: unknown; to?: unknown } }) { return reply(() => this.finance.rollForward(p.tenant, p.query ?? {})); }

  @MessagePattern(P.financeEntries)
  entries(@Payload() p: T & { query: Record<string, unknown> }) { return reply(() => this.finance.entries(p.tenant, p.query ?? {})); }
}
