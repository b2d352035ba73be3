import {
  MemberAggregate, Quote, decideConfirmReservation, decideOpenReservation, decideReleaseReservation, quoteRedemption, reservationByCause,
} from '@loyalty/domain-member';
import { newId, notFound, problem } from '@loyalty/platform';
import { ReservationView, reservationView } from '@loyalty/domain-redemption';
import { CommandBus } from '@loyalty/messaging';
import { IdempotencyClaim, KeyedReply } from '@loyalty/contracts';
import { ProgramStore } from '@loyalty/programs';
import { MemberSpending, keyClaim, refusedReusedKey, settled } from '../member-spending';
import { RedemptionRows, ReservationRow } from '../projections/redemption-rows';
import { resolveMember, spendingSettings } from '../spending-settings';

export interface QuoteInput { member_id: string; eligible_total_cents: number; payment_method?: string | null }
export interface ReserveInput { member_id: string; amount_cents: number; cart_ref?: string | null; eligible_total_cents?: number | null; payment_method?: string | null }



/** Checkout: quotes (nothing held), reservations (points held), confirm (debit) and release. */
export class ReservationsService {
  constructor(
    private readonly spending: MemberSpending,
    private readonly rows: RedemptionRows,
    private readonly programs: ProgramStore,
    private readonly bus: CommandBus,
  ) {}

  /** POST /v1/redemption-quotes */
  async quote(tenant: string, input: QuoteInput): Promise<Quote> {
    const memberId = await resolveMember(this.bus, tenant, input.member_id);
    const [settings, s] = await Promise.all([spendingSettings(this.programs, tenant), this.spending.load(tenant, memberId)]);
    if (!s.exists) throw notFound('member');
    return quoteRedemption(s, settings.rules, input.eligible_total_cents, input.payment_method ?? null);
  }

  /**
   * POST /v1/redemption-reservations. As with redemptions, the Idempotency-Key is recorded on the
   * member stream, so a retry finds the reservation it opened and answers as the first call did
   * (`replayed`). With `claim` (the gateway left the key to this command) the append also claims
   * the key for the programme, with the request's fingerprint: the key already held for another
   * member or another request is a 409 `idempotency-key-reused`, decided in the append's own
   * transaction.
   */
  async reserve(tenant: string, input: ReserveInput, opts: { idempotencyKey?: string; claim?: IdempotencyClaim }): Promise<KeyedReply<ReservationView>> {
    const memberId = await resolveMember(this.bus, tenant, input.member_id);
    const settings = await spendingSettings(this.programs, tenant);
    const reservationId = newId('RS');
    const cause = opts.idempotencyKey ? `reserve:${opts.idempotencyKey}` : null;
    const claim = keyClaim(tenant, opts.claim);
    const cartRef = input.cart_ref ?? null;
    const at = settings.now.toISOString();
    const expiresAt = new Date(settings.now.getTime() + settings.reservationTtlSeconds * 1000).toISOString();
    const decided = this.spending.decide(tenant, memberId, (s) => {
      const prior = cause ? reservationByCause(s, cause) : null;
      if (prior) return { events: [], result: prior.id };
      return {
        events: decideOpenReservation(s, settings.rules, {
          reservation_id: reservationId, amount_cents: input.amount_cents, cart_ref: cartRef,
          eligible_total_cents: input.eligible_total_cents ?? null, payment_method: input.payment_method ?? null,
          expires_at: expiresAt, cause, fingerprint: opts.claim?.fingerprint, at,
        }),
        result: reservationId,
        claim,
      };
    }, (s, id) => {
      const r = s.reservations.get(id)!;
      this.rows.rememberOwner(tenant, id, memberId);
      if (id === reservationId) return { view: reservationView(r, memberId), replay: false };
      // the same key for another request: by its fingerprint when the first call recorded one, else by what the reservation holds
      const fingerprint = opts.claim?.fingerprint;
      if (r.fingerprint && fingerprint ? r.fingerprint !== fingerprint : r.amount_cents !== input.amount_cents || r.cart_ref !== cartRef) {
        throw problem('idempotency-key-reused', 'This Idempotency-Key was used for a different reservation');
      }
      // the response the first call gave
      return { view: { ...reservationView(r, memberId), status: 'open' as const, order_ref: null, ledger_entry_id: null }, replay: true };
    });
    const out = await decided.catch(refusedReusedKey);
    return { result: out.view, replayed: out.replay };
  }

  /**
   * POST /v1/redemption-reservations/{id}/confirm: the held points are debited. A reservation
   * resolved past the member state's retention (issue 13) is answered from the read model: the same
   * terminal call again is a 200, any other a 409.
   */
  async confirm(tenant: string, id: string, orderRef: string): Promise<ReservationView> {
    const memberId = await this.ownerOf(tenant, id);
    const at = (await this.programs.now(tenant)).toISOString();
    const entryId = newId('LE');
    let row: ReservationRow | null = null;
    return this.spending.decide(tenant, memberId, async (s) => {
      if (s.reservations.has(id)) return { events: decideConfirmReservation(s, { reservation_id: id, order_ref: orderRef, entry_id: entryId, at }), result: id };
      row ??= await this.rows.reservation(tenant, id);
      return { events: settled('reservation', row, row.status === 'confirmed' && row.order_ref === orderRef), result: id };
    }, (s) => this.viewOf(s, id, memberId, row));
  }

  /** POST /v1/redemption-reservations/{id}/release (a long-resolved one: from the read model, as confirm) */
  async release(tenant: string, id: string): Promise<ReservationView> {
    const memberId = await this.ownerOf(tenant, id);
    const at = (await this.programs.now(tenant)).toISOString();
    let row: ReservationRow | null = null;
    return this.spending.decide(tenant, memberId, async (s) => {
      if (s.reservations.has(id)) return { events: decideReleaseReservation(s, { reservation_id: id, at }), result: id };
      row ??= await this.rows.reservation(tenant, id);
      return { events: settled('reservation', row, row.status === 'released'), result: id };
    }, (s) => this.viewOf(s, id, memberId, row));
  }

  /** GET /v1/redemption-reservations/{id} */
  async get(tenant: string, id: string): Promise<ReservationView> {
    const memberId = await this.ownerOf(tenant, id);
    const s = await this.spending.load(tenant, memberId);
    return this.viewOf(s, id, memberId, s.reservations.has(id) ? null : await this.rows.reservation(tenant, id));
  }

  /** The member holding a reservation: remembered by this process, else its read model row. */
  private async ownerOf(tenant: string, id: string): Promise<string> {
    const owner = await this.rows.ownerOf(tenant, 'reservations', id);
    if (!owner) throw notFound('reservation');
    return owner;
  }

  /** The member state's reservation, or (resolved past the retention) the read model's row. */
  private viewOf(s: MemberAggregate, id: string, memberId: string, row: ReservationRow | null): ReservationView {
    const r = s.reservations.get(id);
    if (r) return reservationView(r, memberId);
    if (!row) throw notFound('reservation');
    return {
      id: row.id, status: row.status, member_id: row.member_id, amount_cents: Number(row.amount_cents), cart_ref: row.cart_ref, order_ref: row.order_ref,
      ledger_entry_id: row.ledger_entry_id, expires_at: row.expires_at.toISOString(), created_at: row.created_at.toISOString(),
    };
  }
}
