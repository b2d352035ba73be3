import {
  MemberAggregate, Voucher, decideConfirmRedemption, decideIssueRedemption, decideVoidRedemption, redemptionByCause,
} from '@loyalty/domain-member';
import { newId, notFound, problem } from '@loyalty/platform';
import { crashPoint } from '@loyalty/runtime';
import { RedemptionView, redemptionView } from '@loyalty/domain-redemption';
import { IdempotencyClaim, KeyedReply } from '@loyalty/contracts';
import { Pool } from 'pg';
import { CommandBus } from '@loyalty/messaging';
import { ProgramStore } from '@loyalty/programs';
import { MemberSpending, keyClaim, refusedReusedKey, settled } from '../member-spending';
import { RedemptionRows } from '../projections/redemption-rows';
import { resolveMember, spendingSettings } from '../spending-settings';
import { VoucherCodes } from './voucher-codes';

export interface CreateRedemptionInput { amount_cents: number; mode?: 'voucher' | 'direct'; order_ref?: string | null }

/** The response a redemption's creation gave: as created, whatever happened to it since. */
const asCreated = (s: MemberAggregate, v: Voucher, memberId: string): RedemptionView => ({
  ...redemptionView(v, memberId),
  status: v.mode === 'direct' ? 'used' : 'created',
  order_ref: s.entries.get(v.entry_id)?.order_ref ?? null,
});

/** A row of redemption.redemptions. */
interface RedemptionRow {
  id: string; member_id: string; code: string; mode: Voucher['mode']; status: Voucher['status']; amount_cents: string;
  order_ref: string | null; ledger_entry_id: string; expires_at: Date | null; created_at: Date;
}

const rowView = (r: RedemptionRow): RedemptionView => ({
  id: r.id, status: r.status, mode: r.mode, amount_cents: Number(r.amount_cents), code: r.code, order_ref: r.order_ref,
  ledger_entry_id: r.ledger_entry_id, expires_at: r.expires_at?.toISOString() ?? null, created_at: r.created_at.toISOString(), member_id: r.member_id,
});



/** Vouchers and direct redemptions: create (debit at once), confirm, void, look-ups. */
export class VouchersService {
  constructor(
    private readonly spending: MemberSpending,
    private readonly rows: RedemptionRows,
    private readonly programs: ProgramStore,
    private readonly bus: CommandBus,
    private readonly pool: Pool,
  ) {
    this.codes = new VoucherCodes(pool);
  }

  /** Fresh voucher codes, checked ahead of use. */
  private readonly codes: VoucherCodes;

  /**
   * POST /v1/members/{id}/redemptions. The caller's Idempotency-Key is recorded as the redeem
   * entry's cause on the member stream, so a retry after a crash between the append and the
   * reply finds the redemption it made instead of debiting again, and answers as the first call.
   */
  async create(tenant: string, rawMemberId: string, input: CreateRedemptionInput, opts: { idempotencyKey?: string; claim?: IdempotencyClaim; actor?: string }): Promise<KeyedReply<RedemptionView>> {
    // independent of one another: the member's id, the programme's settings and a free voucher code, at once
    const [memberId, settings, code] = await Promise.all([
      resolveMember(this.bus, tenant, rawMemberId), spendingSettings(this.programs, tenant), this.codes.next(tenant),
    ]);
    const mode = input.mode ?? 'voucher';
    const orderRef = input.order_ref ?? null;
    const redemptionId = newId('RD');
    const entryId = newId('LE');
    const cause = `redeem:${opts.idempotencyKey ?? redemptionId}`;
    // the gateway left the key to this command: claimed with the append, with the request's fingerprint (see ReservationsService.reserve)
    const claim = keyClaim(tenant, opts.claim);
    const at = settings.now.toISOString();
    const expiresAt = mode === 'voucher' ? new Date(settings.now.getTime() + settings.voucherTtlSeconds * 1000).toISOString() : null;
    const decided = this.spending.decide(tenant, memberId, (s) => {
      const prior = redemptionByCause(s, cause);
      if (prior) return { events: [], result: prior.id };
      return {
        events: decideIssueRedemption(s, settings.rules, {
          redemption_id: redemptionId, entry_id: entryId, code, mode, amount_cents: input.amount_cents, order_ref: orderRef,
          expires_at: expiresAt, cause, fingerprint: opts.claim?.fingerprint, actor: opts.actor ?? null, at,
        }),
        result: redemptionId,
        claim,
      };
    }, (s, id) => {
      crashPoint('redemption.create:after-append'); // test-only hook (after the append, before the reply), inert unless LOYALTY_CRASH_POINT names it
      const v = s.vouchers.get(id)!;
      this.rows.rememberOwner(tenant, id, memberId);
      if (id === redemptionId) return { view: redemptionView(v, memberId), replay: false };
      const original = asCreated(s, v, memberId);
      // the same key for another request: by its fingerprint when the first call recorded one, else by what the redemption holds
      const fingerprint = opts.claim?.fingerprint;
      if (v.fingerprint && fingerprint
        ? v.fingerprint !== fingerprint
        : original.amount_cents !== input.amount_cents || original.mode !== mode || (orderRef !== null && original.order_ref !== orderRef)) {
        throw problem('idempotency-key-reused', 'This Idempotency-Key was used for a different redemption');
      }
      return { view: original, replay: true };
    });
    const out = await decided.catch(refusedReusedKey);
    return { result: out.view, replayed: out.replay };
  }

  /**
   * POST /v1/redemptions/{id}/confirm. A redemption resolved long ago (past the member state's
   * retention, issue 13) is answered from the read model: the same terminal call again is a 200,
   * any other a 409, as decisions §6 says.
   */
  async confirm(tenant: string, id: string, orderRef: string): Promise<RedemptionView> {
    const memberId = await this.ownerOf(tenant, id);
    const at = (await this.programs.now(tenant)).toISOString();
    let row: RedemptionRow | null = null;
    return this.spending.decide(tenant, memberId, async (s) => {
      if (s.vouchers.has(id)) return { events: decideConfirmRedemption(s, { redemption_id: id, order_ref: orderRef, at }), result: id };
      row ??= await this.row(tenant, id);
      return { events: settled('redemption', row, row.status === 'used' && row.order_ref === orderRef), result: id };
    }, (s) => this.viewOf(s, id, memberId, row));
  }

  /** POST /v1/redemptions/{id}/void (a long-resolved one: from the read model, as confirm) */
  async void(tenant: string, id: string): Promise<RedemptionView> {
    const memberId = await this.ownerOf(tenant, id);
    const at = (await this.programs.now(tenant)).toISOString();
    const reverseEntryId = newId('LE');
    let row: RedemptionRow | null = null;
    return this.spending.decide(tenant, memberId, async (s) => {
      if (s.vouchers.has(id)) return { events: decideVoidRedemption(s, { redemption_id: id, reverse_entry_id: reverseEntryId, at }), result: id };
      row ??= await this.row(tenant, id);
      return { events: settled('redemption', row, row.status === 'restored'), result: id };
    }, (s) => this.viewOf(s, id, memberId, row));
  }

  /** GET /v1/redemptions/{id} */
  async get(tenant: string, id: string): Promise<RedemptionView> {
    const memberId = await this.ownerOf(tenant, id);
    const s = await this.spending.load(tenant, memberId);
    return this.viewOf(s, id, memberId, s.vouchers.has(id) ? null : await this.row(tenant, id));
  }

  /** The member state's voucher, or (resolved past the retention) the read model's row. */
  private viewOf(s: MemberAggregate, id: string, memberId: string, row: RedemptionRow | null): RedemptionView {
    const v = s.vouchers.get(id);
    if (v) return redemptionView(v, memberId);
    if (!row) throw notFound('redemption');
    return rowView(row);
  }

  private async row(tenant: string, id: string): Promise<RedemptionRow> {
    const { rows } = await this.pool.query<RedemptionRow>(
      `select id, member_id, code, mode, status, amount_cents, order_ref, ledger_entry_id, expires_at, created_at
         from redemption.redemptions where tenant = $1 and id = $2`, [tenant, id]);
    if (!rows.length) throw notFound('redemption');
    return rows[0];
  }

  /** GET /v1/redemptions?code=: the redemption, its owner and whether it can still be used now. */
  async byCode(tenant: string, code: string): Promise<RedemptionView & { valid: boolean }> {
    const found = await this.rows.byCode(tenant, code.trim().toUpperCase());
    if (!found) throw notFound('voucher code');
    const [s, now] = await Promise.all([this.spending.load(tenant, found.member_id), this.programs.now(tenant)]);
    const v = s.vouchers.get(found.id);
    // resolved past the member state's retention: the read model's row, no longer valid
    if (!v) return { ...rowView(await this.row(tenant, found.id)), valid: false };
    const valid = v.status === 'created' && (v.expires_at === null || now.getTime() < Date.parse(v.expires_at));
    return { ...redemptionView(v, found.member_id), valid };
  }

  /** The member holding a redemption: remembered by this process, else its read model row. */
  private async ownerOf(tenant: string, id: string): Promise<string> {
    const owner = await this.rows.ownerOf(tenant, 'redemptions', id);
    if (!owner) throw notFound('redemption');
    return owner;
  }
}
