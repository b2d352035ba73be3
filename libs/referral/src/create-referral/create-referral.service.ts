import { ReferralView } from '@loyalty/contracts';
import { problemOf } from '@loyalty/event-store';
import { KeyedMutex, ProblemError, newId, notFound } from '@loyalty/platform';
import { ReferralRuleError, decideCreate, holdReasons, normaliseReferralCode, toReferralView } from '@loyalty/domain-referral';
import { QualificationService } from '../qualification/qualification.service';
import { Pool } from 'pg';
import { CommandBus } from '@loyalty/messaging';
import { ProgramStore } from '@loyalty/programs';
import { ReferralDecisions, ReferralReadModels, ledgerMember, programmeNow } from '../referral-decisions';

export interface CreateReferralInput { code: string; friend_member_id: string }

const DAY_MS = 86_400_000;

/** `phone:%2B…` in a body, written the way a path needs it, is read as `phone:+…`. */
const decodedMemberRef = (raw: string): string => {
  if (!raw.startsWith('phone:') || !raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
};

/**
 * POST /v1/referrals (decisions §7): the advocate is found by their referral code, the friend by
 * any accepted member id form. 404 unknown code or friend; 422 `rule-ineligible` for a
 * self-referral or a friend who already has a paid order; 409 `conflict` when the friend was
 * referred before (one referral per friend, ever). Fraud checks put it on `held`.
 */
export class CreateReferralService {
  /** one advocate's referrals are decided one at a time in this process (the daily count) */
  private readonly advocates = new KeyedMutex();

  constructor(
    private readonly decisions: ReferralDecisions,
    private readonly readModels: ReferralReadModels,
    private readonly programs: ProgramStore,
    private readonly bus: CommandBus,
    private readonly pool: Pool,
    private readonly qualification: QualificationService,
  ) {}

  async create(tenant: string, input: CreateReferralInput): Promise<ReferralView> {
    const advocateId = await this.advocateByCode(tenant, input.code);
    // an advocate erased since (or unknown to the ledger) has no code any more
    const advocate = await ledgerMember(this.bus, tenant, advocateId).catch((e: unknown) => {
      throw ProblemError.is(e) && e.problem.slug === 'not-found' ? notFound('referral code') : e;
    });
    const friend = await ledgerMember(this.bus, tenant, decodedMemberRef(input.friend_member_id));
    if (advocate.id === friend.id) throw problemOf(new ReferralRuleError('rule-ineligible', 'A member cannot refer themselves'));

    const state = await this.advocates.run(`${tenant}|${advocate.id}`, async () => {
      const before = await this.decisions.load(tenant, friend.id);
      if (before.exists) throw problemOf(new ReferralRuleError('conflict', `Member ${friend.id} has already been referred (${before.id})`));
      // every order processed so far is in the read model before asking whether the friend is a customer
      await this.readModels.catchUp();
      const hasPaid = await this.hasPaidOrder(tenant, friend.id);
      const [program, at] = await Promise.all([this.programs.forTenant(tenant), programmeNow(this.programs, tenant)]);
      const { rows } = await this.pool.query<{ n: string }>(
        'select count(*) as n from referral.referrals where tenant = $1 and advocate_id = $2 and created_at > $3',
        [tenant, advocate.id, new Date(Date.parse(at) - DAY_MS).toISOString()]);
      const reasons = holdReasons({
        advocate: { email: advocate.email, phone: advocate.phone },
        friend: { email: friend.email, phone: friend.phone },
        recentByAdvocate: Number(rows[0].n),
        dailyLimit: program.settings.referral_daily_limit ?? 10,
      });
      const referralId = newId('RF');
      return this.decisions.decide(tenant, friend.id, (s) => decideCreate(s, {
        referral_id: referralId, code: advocate.referral_code, advocate_id: advocate.id, friend_id: friend.id,
        hold_reasons: reasons, friend_has_paid_order: hasPaid, at,
      }));
    });

    // An order paid while this referral was being created may have been seen by the qualification
    // before the referral existed: apply the friend's paid orders now (idempotent).
    await this.readModels.catchUp();
    let latest = state;
    for (const order of await this.paidOrders(tenant, friend.id)) latest = await this.qualification.qualify({ tenant, member_id: friend.id, order });
    if (latest.status === 'qualified') latest = await this.qualification.reward(tenant, friend.id).catch(() => latest);
    return toReferralView(latest);
  }

  /** The member whose referral code this is; a miss looks again once the read model has caught up (a member enrolled a moment ago). */
  private async advocateByCode(tenant: string, raw: string): Promise<string> {
    const code = normaliseReferralCode(raw);
    if (!code) throw notFound('referral code');
    const find = async () => (await this.pool.query<{ member_id: string }>(
      'select member_id from referral.codes where tenant = $1 and code = $2', [tenant, code])).rows[0]?.member_id ?? null;
    let id = await find();
    if (!id) {
      await this.readModels.catchUp();
      id = await find();
    }
    if (!id) throw notFound('referral code');
    return id;
  }

  private async hasPaidOrder(tenant: string, memberId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      'select 1 from referral.paid_orders where tenant = $1 and member_id = $2 and not cancelled limit 1', [tenant, memberId]);
    return (rowCount ?? 0) > 0;
  }

  private async paidOrders(tenant: string, memberId: string) {
    const { rows } = await this.pool.query<{ order_ref: string; gross_cents: string; paid_at: Date }>(
      'select order_ref, gross_cents, paid_at from referral.paid_orders where tenant = $1 and member_id = $2 and not cancelled order by paid_at, order_ref',
      [tenant, memberId]);
    return rows.map((r) => ({ order_ref: r.order_ref, gross_cents: Number(r.gross_cents), paid_at: r.paid_at.toISOString() }));
  }
}
