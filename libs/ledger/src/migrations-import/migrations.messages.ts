import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PATTERNS, TenantScoped } from '@loyalty/contracts';
import { reply } from '@loyalty/messaging';
import { MigrationEntryInput, MigrationsService } from './migrations.service';

/** Migration import and batch reversal (admin plane, decisions §10). */
@Controller()
export class MigrationsMessages {
  constructor(private readonly migrations: MigrationsService) {}

  @MessagePattern(PATTERNS.ledger.migrate)
  import(@Payload() p: TenantScoped & { entries: MigrationEntryInput[]; idempotency_key?: string | null }) {
    return reply(() => this.migrations.import(p.tenant, p.entries, p.idempotency_key));
  }

  /** The admin names only the batch; its programme partition comes from the batch. */
  @MessagePattern(PATTERNS.ledger.reverseMigration)
  reverse(@Payload() p: TenantScoped & { batch_id: string }) {
    return reply(() => this.migrations.reverse(p.batch_id));
  }
}
