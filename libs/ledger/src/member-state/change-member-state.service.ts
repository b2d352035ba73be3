import type { MemberView } from '@loyalty/contracts';
import { decideStateChange } from '@loyalty/domain-member';
import { MembersService } from '../members/members.service';

/** Admin plane: suspend, reinstate, pause, resume (decisions §4). */
export class ChangeMemberStateService {
  constructor(private readonly members: MembersService) {}

  async changeState(tenant: string, raw: string, cmd: 'suspend' | 'reinstate' | 'pause' | 'resume', at: string): Promise<MemberView> {
    const memberId = await this.members.resolveId(tenant, raw);
    await this.members.decide(tenant, memberId, (s) => ({ events: decideStateChange(s, cmd, at), result: null }));
    return this.members.view(tenant, memberId);
  }
}
