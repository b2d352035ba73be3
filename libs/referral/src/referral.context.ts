import { Pool, PoolClient } from 'pg';
import { MemberView, PATTERNS, ReferralEvent, referralStreamId } from '@loyalty/contracts';
import { CommandHandler, EventStore, Position, ProjectionRunner } from '@loyalty/event-store';
import { CommandBus } from '@loyalty/messaging';
import { AppConfig, deterministicUuid, inTransaction, notFound, problem } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { ReferralRuleError, ReferralState, referralEvolver } from '@loyalty/domain-referral';
import { applyReferralEvent } from './projections/referral.projection';

/** Maps the referral domain's refusals to API problems, in one place. */
export const toProblem = (e: unknown): unknown => {
  if (!(e instanceof ReferralRuleError)) return e;
  if (e.code === 'not-found') return notFound('referral');
  return problem(e.code, e.message);
};

/** What the referral service's use cases share: injected once by the module. */
export class ReferralContext {
  runner: ProjectionRunner | null = null;

  constructor(
    readonly config: AppConfig,
    readonly pool: Pool,
    readonly store: EventStore,
    readonly handler: CommandHandler,
    readonly programs: ProgramStore,
    readonly bus: CommandBus,
  ) {}

  async now(tenant: string): Promise<string> { return (await this.programs.now(tenant)).toISOString(); }

  /** A member as the ledger shows it (any accepted id form); 404 for unknown, deleted or anonymised members. */
  async member(tenant: string, raw: string): Promise<MemberView> {
    const m = await this.bus.request<MemberView>(PATTERNS.ledger.get, { tenant, id: raw }, raw);
    if (m.state === 'deleted' || m.state === 'anonymised') throw notFound('member');
    return m;
  }

  async load(tenant: string, friendId: string): Promise<ReferralState> {
    return (await this.handler.load(referralStreamId(tenant, friendId), referralEvolver)).state;
  }

  /**
   * Runs a decision on a referral stream (load → decide → append with the expected revision →
   * retry on conflict). Each event kind happens at most once per referral, so its id is derived
   * from the stream and kind: a retry anywhere appends nothing twice. The command's own events go
   * into the read model before this returns (read-your-writes without waiting for the runner), in
   * `tx` when the caller is a projection's transaction.
   */
  async decide(tenant: string, friendId: string, decide: (s: ReferralState) => ReferralEvent[], tx?: PoolClient): Promise<ReferralState> {
    const streamId = referralStreamId(tenant, friendId);
    let appended: ReferralEvent[] = [];
    try {
      const out = await this.handler.handle(streamId, referralEvolver, (s) => {
        appended = decide(s);
        return { events: appended.map((e) => ({ ...e, id: deterministicUuid(`${streamId}|${e.type}`) })), result: null };
      });
      const state = out.state;
      if (out.append && appended.length) {
        const first = out.append.nextRevision - BigInt(appended.length) + 1n;
        const project = async (db: Pick<PoolClient, 'query'>) => {
          for (const [i, e] of appended.entries()) await applyReferralEvent(db, streamId, first + BigInt(i), e);
        };
        if (tx) await project(tx);
        else await inTransaction(this.pool, project);
      }
      return state;
    } catch (e) {
      throw toProblem(e);
    }
  }

  /** Waits until the read models have applied every event committed so far (orders and codes of other services). */
  async settleHead(): Promise<void> {
    if (!this.runner) return;
    // PostgreSQL: the newest committed event, even one above the subscribers' watermark (an order
    // the ledger just completed while another transaction is open must count)
    const store = this.store as EventStore & { committedHead?: () => Promise<Position>; poke?: () => void };
    const head = store.committedHead ? await store.committedHead() : await store.headPosition();
    store.poke?.();
    await this.runner.waitFor(head);
  }
}
