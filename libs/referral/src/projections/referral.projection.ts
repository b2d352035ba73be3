import { Pool, PoolClient } from 'pg';
import { ReferralEvent, ReferralOrder, ReferralStatus, parseMemberStreamId, parseOrderStreamId, parseReferralStreamId } from '@loyalty/contracts';
import { EventStore, Projection, RecordedEvent } from '@loyalty/event-store';
import { pgArray, prepared } from '@loyalty/platform';

/** The ledger's member and order events this service reads (their published shape; only the fields used here). */
type MemberCreated = { member_id: string; referral_code: string };
type OrderStep = { member_id: string; gross_cents: number | null; at: string };

const REFERRAL_EVENTS: ReferralEvent['type'][] = [
  'ReferralCreated', 'ReferralOrderMatched', 'ReferralQualified', 'ReferralApproved', 'ReferralRejected', 'ReferralRewarded',
];
const HANDLED = ['MemberCreated', 'MemberErased', 'OrderPaid', 'OrderCancelled', ...REFERRAL_EVENTS];

/**
 * A batch's new referral codes and paid orders, prepared, their values as array literals (pgArray):
 * an ingest batch writes hundreds of paid orders, and the pg driver's own array serialisation escaped
 * every element again, the statement parsed and planned on each call (the two writes were 1.9 % of the
 * service's main thread in the ingest profile, waiting included; an A/B: CPU per event −2 %).
 */
const WRITE_CODES_SQL = prepared('referral_write_codes',
  'insert into referral.codes (tenant, code, member_id) select * from unnest($1::text[], $2::text[], $3::text[]) on conflict do nothing');
const WRITE_PAID_SQL = prepared('referral_write_paid',
  `insert into referral.paid_orders (tenant, order_ref, member_id, gross_cents, paid_at)
   select * from unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::timestamptz[]) on conflict do nothing`);

/** A paid order of a member, as the qualification reacts to it. */
export interface PaidOrderSeen { tenant: string; member_id: string; order: ReferralOrder }

/** The status a referral event leaves the referral in (null: unchanged). */
const statusAfter = (e: ReferralEvent): ReferralStatus | null => {
  switch (e.type) {
    case 'ReferralCreated': return e.data.status;
    case 'ReferralOrderMatched': return null;
    case 'ReferralQualified': return 'qualified';
    case 'ReferralApproved': return 'pending';
    case 'ReferralRejected': return 'rejected';
    case 'ReferralRewarded': return 'rewarded';
    default: {
      const never: never = e;
      throw new TypeError(`unknown referral event ${JSON.stringify(never)}`);
    }
  }
};

/**
 * The referral service's read models, in one runner: `referral.codes` (code → advocate, from
 * MemberCreated; erasure removes it), `referral.paid_orders` (each member's paid orders, from the
 * order streams) and `referral.referrals` (one row per referral for stats, lookups by id, the
 * advocate's daily count and the reward sweep).
 *
 * Referral rows move only forward (`revision` guard), so the runner re-applying events that a
 * command already projected itself (ReferralDecisions.decide) changes nothing, and a rebuild gives
 * the same rows. `onOrderPaid`, given only by the running service, is the qualification reacting
 * to a paid order inside this transaction: its checkpoint makes the reaction at-least-once, and
 * the reaction is idempotent.
 */
export class ReferralProjection implements Projection {
  readonly name = 'referral.read-models';
  readonly filter = { streamPrefixes: ['member-', 'order-', 'referral-'], eventTypes: HANDLED };
  readonly tables = ['referral.codes', 'referral.paid_orders', 'referral.referrals'];

  constructor(private readonly onOrderPaid?: (tx: PoolClient, seen: PaidOrderSeen) => Promise<void>) {}

  /** Paid orders of this batch not written yet: written in one statement, before any reaction reads them. */
  private paid: { tenant: string; member_id: string; order: ReferralOrder }[] = [];
  /** `tenant|friend` of the batch's payers that have (or get, in this batch) a referral: only their orders need the reaction. */
  private referred = new Set<string>();
  /** Codes of the batch's new members not written yet: written in one statement before anything reads or deletes codes. */
  private codes: { tenant: string; code: string; member_id: string }[] = [];

  /** Reads ahead which of the batch's payers are anyone's referred friend (one query instead of one per order). */
  async beforeBatch(tx: PoolClient, events: readonly RecordedEvent[]): Promise<void> {
    this.paid = [];
    this.codes = [];
    this.referred.clear();
    if (!this.onOrderPaid) return;
    const payers = events.filter((e) => e.type === 'OrderPaid').flatMap((e) => {
      const m = parseOrderStreamId(e.streamId);
      const d = e.data as OrderStep;
      return m && d.member_id ? [{ tenant: m.tenant, friend: d.member_id }] : [];
    });
    if (!payers.length) return;
    const { rows } = await tx.query<{ tenant: string; friend_id: string }>(
      `select distinct r.tenant, r.friend_id from unnest($1::text[], $2::text[]) as p(tenant, friend)
         join referral.referrals r on r.tenant = p.tenant and r.friend_id = p.friend`,
      [payers.map((p) => p.tenant), payers.map((p) => p.friend)]);
    for (const r of rows) this.referred.add(`${r.tenant}|${r.friend_id}`);
  }

  async afterBatch(tx: PoolClient): Promise<void> {
    await this.writeCodes(tx);
    await this.writePaid(tx);
  }

  private async writeCodes(tx: PoolClient): Promise<void> {
    const rows = this.codes;
    this.codes = [];
    if (!rows.length) return;
    await tx.query(WRITE_CODES_SQL([pgArray(rows.map((r) => r.tenant)), pgArray(rows.map((r) => r.code)), pgArray(rows.map((r) => r.member_id))]));
  }

  private async writePaid(tx: PoolClient): Promise<void> {
    const rows = this.paid;
    this.paid = [];
    if (!rows.length) return;
    await tx.query(WRITE_PAID_SQL([pgArray(rows.map((r) => r.tenant)), pgArray(rows.map((r) => r.order.order_ref)), pgArray(rows.map((r) => r.member_id)),
      pgArray(rows.map((r) => r.order.gross_cents)), pgArray(rows.map((r) => r.order.paid_at))]));
  }

  async apply(tx: PoolClient, event: RecordedEvent): Promise<void> {
    switch (event.type) {
      case 'MemberCreated': {
        const m = parseMemberStreamId(event.streamId);
        const d = event.data as MemberCreated;
        if (!m || !d.referral_code) return;
        this.codes.push({ tenant: m.tenant, code: d.referral_code, member_id: m.memberId });
        return;
      }
      case 'MemberErased': {
        // an erased member's code no longer resolves (like their email and phone)
        const m = parseMemberStreamId(event.streamId);
        await this.writeCodes(tx);
        if (m) await tx.query('delete from referral.codes where tenant = $1 and member_id = $2', [m.tenant, m.memberId]);
        return;
      }
      case 'OrderPaid': {
        const m = parseOrderStreamId(event.streamId);
        const d = event.data as OrderStep;
        if (!m || !d.member_id) return;
        const order: ReferralOrder = { order_ref: m.orderRef, gross_cents: d.gross_cents ?? 0, paid_at: d.at };
        this.paid.push({ tenant: m.tenant, member_id: d.member_id, order });
        // a payer nobody referred needs no reaction (it would find no pending or held referral)
        if (this.onOrderPaid && this.referred.has(`${m.tenant}|${d.member_id}`)) {
          await this.writeCodes(tx);
          await this.writePaid(tx);
          await this.onOrderPaid(tx, { tenant: m.tenant, member_id: d.member_id, order });
        }
        return;
      }
      case 'OrderCancelled': {
        const m = parseOrderStreamId(event.streamId);
        await this.writePaid(tx);
        if (m) await tx.query('update referral.paid_orders set cancelled = true where tenant = $1 and order_ref = $2', [m.tenant, m.orderRef]);
        return;
      }
      default:
        if (event.type === 'ReferralCreated') {
          const d = event.data as { friend_id?: string };
          const ids = parseReferralStreamId(event.streamId);
          if (ids && d.friend_id) this.referred.add(`${ids.tenant}|${d.friend_id}`);
        }
        if ((REFERRAL_EVENTS as string[]).includes(event.type)) await applyReferralEvent(tx, event.streamId, event.revision, { type: event.type, data: event.data } as ReferralEvent);
    }
  }
}

/** One referral event onto its row; a row never moves back to an older revision. */
export const applyReferralEvent = async (tx: Pick<PoolClient, 'query'>, streamId: string, revision: bigint, e: ReferralEvent): Promise<void> => {
  const ids = parseReferralStreamId(streamId);
  if (!ids) return;
  if (e.type === 'ReferralCreated') {
    const d = e.data;
    await tx.query(
      `insert into referral.referrals (tenant, id, friend_id, advocate_id, code, status, created_at, updated_at, revision)
       values ($1,$2,$3,$4,$5,$6,$7,$7,$8) on conflict do nothing`,
      [ids.tenant, d.referral_id, d.friend_id, d.advocate_id, d.code, d.status, d.at, revision.toString()]);
    return;
  }
  await tx.query(
    `update referral.referrals set status = coalesce($3, status), updated_at = $4, revision = $5
     where tenant = $1 and friend_id = $2 and revision < $5`,
    [ids.tenant, ids.friendId, statusAfter(e), e.data.at, revision.toString()]);
};

/** Every read model of the referral service (the rebuild tool's convention: `<SERVICE>_PROJECTIONS(deps)`); no reactions. */
export const REFERRAL_PROJECTIONS = (_deps: { pool: Pool; store: EventStore }): Projection[] => [new ReferralProjection()];
