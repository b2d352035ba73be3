import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PATTERNS, TenantScoped } from '@loyalty/contracts';
import { reply } from '@loyalty/messaging';
import { SandboxWipeService } from './sandbox-wipe.service';

/** `ledger.sandbox.wipe {tenant}`: deletes a sandbox partition's data (admin plane). */
@Controller()
export class WipeMessages {
  constructor(private readonly wipes: SandboxWipeService) {}

  @MessagePattern(PATTERNS.ledger.wipe)
  wipe(@Payload() p: TenantScoped) {
    return reply(() => this.wipes.wipe(p.tenant));
  }
}
