import { Pool } from 'pg';
import type { MemberView } from '@loyalty/contracts';
import type { Position } from '@loyalty/event-store';
import { cloneMember, decideErase } from '@loyalty/domain-member';
import { newId } from '@loyalty/platform';
import { MembersService } from '../members/members.service';
import { PiiVault } from '../pii/pii.vault';

export class EraseMemberService {
  /** `settle`: waits until the ledger's read models have applied a position (read-your-writes). */
  constructor(
    private readonly members: MembersService, private readonly pool: Pool, private readonly vault: PiiVault,
    private readonly settle: (position: Position) => Promise<void> = async () => undefined,
  ) {}

  /**
   * DELETE /v1/members/{id}: releases open reservations, voids open vouchers, forfeits the
   * balance (`expire`, reason `erasure`), erases identifiers and destroys the member's key.
   */
  async erase(tenant: string, raw: string, at: string): Promise<MemberView> {
    const memberId = await this.members.resolveId(tenant, raw);
    const erasure = { member_id: memberId, at, entryIds: () => newId('LE') };
    const out = await this.members.decide(tenant, memberId, (s) => ({ events: decideErase(s, erasure), result: null }));
    // the reply is the state this decision produced: the cached state is folded further by later
    // commands (a sweep may anonymise the member as soon as its due item is written, grace 0)
    const erased = cloneMember(out.state);
    // The read models apply the erasure (the members row loses its identifiers) before the key goes:
    // a projection batch still writing the member's earlier, decrypted row cannot land after the scrub below.
    if (out.append) await this.settle(out.append.position).catch(() => undefined);
    await this.pool.query('delete from ledger.identities where tenant = $1 and member_id = $2', [tenant, memberId]);
    await this.vault.destroy(tenant, memberId);
    // the projection row keeps no PII once the key is gone
    await this.pool.query('update ledger.members set email = null, phone = null, external_ref = null where tenant = $1 and member_id = $2', [tenant, memberId]);
    return this.members.view(tenant, memberId, erased);
  }
}
