import { Pool } from 'pg';
import { PATTERNS, memberStreamId } from '@loyalty/contracts';
import { CommandHandler, Decision, EventStore, Position, ProjectionRunner } from '@loyalty/event-store';
import { MemberAggregate, MemberEvent, MemberRuleError, SpendingRules, memberEvolver, spendingRules } from '@loyalty/domain-member';
import { CommandBus } from '@loyalty/messaging';
import { AppConfig, problem } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';

/** Maps the member domain's refusals to API problems, in one place. */
export const toProblem = (e: unknown): unknown => {
  if (!(e instanceof MemberRuleError)) return e;
  return problem(e.code === 'conflict' ? 'conflict' : e.code, e.message);
};

const positiveInt = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : fallback);

export interface SpendingSettings { rules: SpendingRules; voucherTtlSeconds: number; reservationTtlSeconds: number; now: Date }

/** What the redemption service's use cases share: injected once by the module. */
export class SpendingContext {
  runner: ProjectionRunner | null = null;

  constructor(
    readonly config: AppConfig,
    readonly pool: Pool,
    readonly store: EventStore,
    readonly handler: CommandHandler,
    readonly programs: ProgramStore,
    readonly bus: CommandBus,
  ) {}

  /** Any accepted member id form (M-…, ref:…, phone:…) → the member id; the ledger owns identity. */
  async resolveMember(tenant: string, raw: string): Promise<string> {
    const r = await this.bus.request<{ member_id: string }>(PATTERNS.ledger.resolveId, { tenant, id: raw }, raw);
    return r.member_id;
  }

  /** The programme's redemption settings (decisions §6) and its clock, read together. */
  async settings(tenant: string): Promise<SpendingSettings> {
    const [program, now] = await Promise.all([this.programs.forTenant(tenant), this.programs.now(tenant)]);
    return {
      rules: spendingRules(program.settings),
      voucherTtlSeconds: positiveInt(program.settings.voucher_ttl_seconds, 259_200),
      reservationTtlSeconds: positiveInt(program.settings.reservation_ttl_seconds, 900),
      now,
    };
  }

  async load(tenant: string, memberId: string): Promise<MemberAggregate> {
    return (await this.handler.load(memberStreamId(tenant, memberId), memberEvolver)).state;
  }

  /**
   * Runs a decision on the member stream (load → decide → append with the expected revision →
   * retry on conflict), builds the reply from the state it produced, then waits until this
   * service's read model has seen the append (read-your-writes).
   */
  async decide<R, V>(tenant: string, memberId: string, decide: (s: MemberAggregate) => Decision<MemberEvent, R>, view: (s: MemberAggregate, result: R) => V): Promise<V> {
    try {
      const out = await this.handler.handle(memberStreamId(tenant, memberId), memberEvolver, decide);
      // the cached state is folded further by later commands: read it before anything else awaits
      const reply = view(out.state, out.result);
      await this.settle(out.append?.position);
      return reply;
    } catch (e) {
      throw toProblem(e);
    }
  }

  async settle(position: Position | null | undefined): Promise<void> {
    if (!position || !this.runner) return;
    (this.store as { poke?: () => void }).poke?.();
    await this.runner.waitFor(position);
  }
}
