import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { PATTERNS } from '@loyalty/contracts';
import { AdminOnly } from '../auth/auth.decorators';
import { Bus } from '../http/bus';

/**
 * Admin review of earns waiting for a person (timing `manual`, decisions §10): the entry id alone
 * names the entry. 200 with the entry (status `posted` or `rejected`); 404 unknown; 409
 * `invalid-state` when it is not under review. Repeating the same decision is an idempotent 200.
 */
@ApiTags('admin')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/v1/ledger-entries')
export class LedgerAdminController {
  constructor(private readonly bus: Bus) {}

  @Post(':id/approve')
  @HttpCode(200)
  async approve(@Param('id') id: string) {
    return { data: await this.bus.requestAs('*', PATTERNS.ledger.approveEntry, { id }, id) };
  }

  @Post(':id/reject')
  @HttpCode(200)
  async reject(@Param('id') id: string) {
    return { data: await this.bus.requestAs('*', PATTERNS.ledger.rejectEntry, { id }, id) };
  }
}
