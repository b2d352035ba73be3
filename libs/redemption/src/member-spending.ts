import { IDEMPOTENCY_RETENTION_SECONDS, IdempotencyClaim, idempotencyClaimName, memberStreamId } from '@loyalty/contracts';
import { AppendClaim, ClaimTakenError, CommandHandler, Decision, decideOn } from '@loyalty/event-store';
import { problem } from '@loyalty/platform';
import { MemberAggregate, MemberEvent, MemberRuleError, memberEvolver } from '@loyalty/domain-member';

/** The redemption service's decisions on the member stream (its rows follow through their runner: RedemptionRows). */
export class MemberSpending {
  constructor(private readonly handler: CommandHandler) {}

  async load(tenant: string, memberId: string): Promise<MemberAggregate> {
    return (await this.handler.load(memberStreamId(tenant, memberId), memberEvolver)).state;
  }

  /**
   * Runs a decision on the member stream (load → decide → append with the expected revision →
   * retry on conflict) and builds the reply from the state it produced, before anything else awaits.
   */
  async decide<R, V>(tenant: string, memberId: string, decide: (s: MemberAggregate) => Decision<MemberEvent, R> | Promise<Decision<MemberEvent, R>>, view: (s: MemberAggregate, result: R) => V): Promise<V> {
    const streamId = memberStreamId(tenant, memberId);
    const out = await decideOn(this.handler, streamId, memberEvolver, decide);
    // the cached state is folded further by later commands: read it before anything else awaits
    return view(out.state, out.result);
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

/**
 * The append claim of a command that keeps its Idempotency-Key (the gateway left the key to it, with
 * the request's fingerprint), held as long as keys are kept; none without.
 */
export const keyClaim = (tenant: string, claim: IdempotencyClaim | undefined): AppendClaim | undefined =>
  claim && { name: idempotencyClaimName(tenant, claim.key), fingerprint: claim.fingerprint, ttlSeconds: IDEMPOTENCY_RETENTION_SECONDS };

/** The key held for another member or another request: the API's 409 `idempotency-key-reused`; any other error unchanged. */
export const refusedReusedKey = (e: unknown): never => {
  if (e instanceof ClaimTakenError) throw problem('idempotency-key-reused', 'This Idempotency-Key was used with a different request');
  throw e;
};
