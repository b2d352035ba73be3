import { Logger } from '@nestjs/common';
import { Pool, PoolClient } from 'pg';
import { PATTERNS, ReferralCreditReply, ReferralCreditRequest } from '@loyalty/contracts';
import { ReferralState, decideOrderPaid, decideRewarded, referralTerms, rewardCause } from '@loyalty/domain-referral';
import { PaidOrderSeen } from '../projections/referral.projection';
import { CommandBus } from '@loyalty/messaging';
import { ProgramStore } from '@loyalty/programs';
import { ReferralDecisions, programmeNow } from '../referral-decisions';

/**
 * Qualification and rewards (decisions §7): the friend's paid order qualifies the referral, then
 * the ledger credits the advocate (and the friend, if the rule says) with `earn` entries, rule
 * `referral`; then the referral is `rewarded`.
 *
 * Qualifying reacts to OrderPaid inside the read-model runner's transaction (at-least-once by its
 * checkpoint; the decision is idempotent). Crediting talks to the ledger over the bus, so it never
 * runs inside that transaction: it starts right after, and the periodic sweep retries whatever is
 * still `qualified` (a crash, or an advocate who cannot earn now, e.g. paused). Credits are keyed
 * by cause on the member's ledger, so a retry never pays twice.
 */
export class QualificationService {
  private readonly log = new Logger('ReferralQualification');
  private readonly inFlight = new Map<string, Promise<ReferralState>>();

  constructor(
    private readonly decisions: ReferralDecisions,
    private readonly programs: ProgramStore,
    private readonly bus: CommandBus,
    private readonly pool: Pool,
  ) {}

  /** The read-model runner saw a paid order (`tx` is its transaction). */
  async onOrderPaid(tx: PoolClient, seen: PaidOrderSeen): Promise<void> {
    const { rowCount } = await tx.query(
      `select 1 from referral.referrals where tenant = $1 and friend_id = $2 and status in ('pending', 'held')`, [seen.tenant, seen.member_id]);
    if (!rowCount) return;
    const state = await this.qualify(seen, tx);
    if (state.status === 'qualified') this.rewardSoon(seen.tenant, seen.member_id);
  }

  /** Applies a paid order of the friend to their referral (idempotent). */
  async qualify(seen: PaidOrderSeen, tx?: PoolClient): Promise<ReferralState> {
    const [program, at] = await Promise.all([this.programs.forTenant(seen.tenant), programmeNow(this.programs, seen.tenant)]);
    return this.decisions.decide(seen.tenant, seen.member_id, (s) => decideOrderPaid(s, { order: seen.order, terms: referralTerms(program.rules, at), at }), tx);
  }

  /** Starts the reward outside the caller's transaction; a failure is left to the sweep. */
  rewardSoon(tenant: string, friendId: string): void {
    setImmediate(() => {
      this.reward(tenant, friendId).catch((e: unknown) => this.log.warn(`reward of the referral of ${friendId} failed, the sweep retries: ${(e as Error).message}`));
    });
  }

  /** Credits a qualified referral's rewards and marks it `rewarded`; anything else is returned as it is. */
  reward(tenant: string, friendId: string): Promise<ReferralState> {
    const key = `${tenant}|${friendId}`;
    const running = this.inFlight.get(key);
    if (running) return running;
    const p = this.rewardOnce(tenant, friendId).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, p);
    return p;
  }

  private async rewardOnce(tenant: string, friendId: string): Promise<ReferralState> {
    const s = await this.decisions.load(tenant, friendId);
    if (s.status !== 'qualified' || !s.terms) return s;
    const manual = s.terms.timing === 'manual';
    const credit = async (memberId: string, role: 'advocate' | 'friend', amount: number): Promise<string | null> => {
      if (amount <= 0) return null;
      const req: ReferralCreditRequest = {
        tenant, actor: 'referral', member_id: memberId, cause: rewardCause(s.id, role), amount_cents: amount, expiry_months: s.terms!.expiry_months, manual,
      };
      return (await this.bus.request<ReferralCreditReply>(PATTERNS.ledger.referral, req, memberId)).ledger_entry_id;
    };
    const advocate = await credit(s.advocate_id, 'advocate', s.terms.amount_cents);
    const friend = await credit(s.friend_id, 'friend', s.terms.friend_amount_cents);
    const at = await programmeNow(this.programs, tenant);
    return this.decisions.decide(tenant, friendId, (st) => decideRewarded(st, { advocate_entry_id: advocate, friend_entry_id: friend, at }));
  }

  /** Rewards what is still `qualified` (oldest first); returns how many became `rewarded`. */
  async sweep(tenant?: string, limit = 200): Promise<number> {
    const { rows } = await this.pool.query<{ tenant: string; friend_id: string }>(
      `select tenant, friend_id from referral.referrals where status = 'qualified' and ($1::text is null or tenant = $1)
       order by updated_at limit $2`, [tenant ?? null, limit]);
    let rewarded = 0;
    for (const r of rows) {
      try {
        if ((await this.reward(r.tenant, r.friend_id)).status === 'rewarded') rewarded++;
      } catch (e) {
        this.log.debug(`referral of ${r.friend_id} stays qualified: ${(e as Error).message}`);
      }
    }
    return rewarded;
  }
}
