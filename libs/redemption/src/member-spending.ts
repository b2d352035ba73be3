import { Logger } from '@nestjs/common';
import { memberStreamId } from '@loyalty/contracts';
import { CommandHandler, Decision, decideOn } from '@loyalty/event-store';
import { MemberAggregate, MemberEvent, MemberRuleError, memberEvolver } from '@loyalty/domain-member';
import { RedemptionRows } from './projections/redemption-rows';

/** The redemption service's decisions on the member stream, with its own rows updated before each reply. */
export class MemberSpending {
  private readonly log = new Logger('MemberSpending');

  constructor(private readonly handler: CommandHandler, private readonly rows: RedemptionRows) {}

  async load(tenant: string, memberId: string): Promise<MemberAggregate> {
    return (await this.handler.load(memberStreamId(tenant, memberId), memberEvolver)).state;
  }

  /**
   * Runs a decision on the member stream (load → decide → append with the expected revision →
   * retry on conflict), builds the reply from the state it produced, and puts the command's own
   * events into this service's read model before replying (read-your-writes).
   */
  async decide<R, V>(tenant: string, memberId: string, decide: (s: MemberAggregate) => Decision<MemberEvent, R> | Promise<Decision<MemberEvent, R>>, view: (s: MemberAggregate, result: R) => V): Promise<V> {
    const streamId = memberStreamId(tenant, memberId);
    const out = await decideOn(this.handler, streamId, memberEvolver, decide);
    // the cached state is folded further by later commands: read it before anything else awaits
    const reply = view(out.state, out.result);
    // the events are stored: a failure to project them now is not the command's (the runner will)
    if (out.events.length) await this.rows.project(streamId, out.events).catch((e: unknown) => this.log.warn(`read model update deferred to the runner: ${(e as Error).message}`));
    return reply;
  }
}

/**
 * A terminal call (confirm, void, release) on a redemption or reservation the member state no
 * longer holds (resolved past the retention): the same outcome again decides nothing; any other is refused.
 */
export const settled = (kind: 'redemption' | 'reservation', row: { status: string }, same: boolean): never[] => {
  if (same) return [];
  throw new MemberRuleError('invalid-state', `${kind} is ${row.status}`);
};
