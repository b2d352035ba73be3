import {
  Quote, decideConfirmReservation, decideOpenReservation, decideReleaseReservation, quoteRedemption, reservationByCause,
} from '@loyalty/domain-member';
import { newId, notFound, problem } from '@loyalty/platform';
import { ReservationView, reservationView } from '../redemption.views';
import { SpendingContext } from '../spending.context';

export interface QuoteInput { member_id: string; eligible_total_cents: number; payment_method?: string | null }
export interface ReserveInput { member_id: string; amount_cents: number; cart_ref?: string | null; eligible_total_cents?: number | null; payment_method?: string | null }

/** Checkout: quotes (nothing held), reservations (points held), confirm (debit) and release. */
export class ReservationsService {
  constructor(private readonly ctx: SpendingContext) {}

  /** POST /v1/redemption-quotes */
  async quote(tenant: string, input: QuoteInput): Promise<Quote> {
    const memberId = await this.ctx.resolveMember(tenant, input.member_id);
    const [settings, s] = await Promise.all([this.ctx.settings(tenant), this.ctx.load(tenant, memberId)]);
    if (!s.exists) throw notFound('member');
    return quoteRedemption(s, settings.rules, input.eligible_total_cents, input.payment_method ?? null);
  }

  /**
   * POST /v1/redemption-reservations. As with redemptions, the Idempotency-Key is recorded on the
   * member stream, so a retry finds the reservation it opened and answers as the first call did.
   */
  async reserve(tenant: string, input: ReserveInput, opts: { idempotencyKey?: string }): Promise<ReservationView> {
    const memberId = await this.ctx.resolveMember(tenant, input.member_id);
    const settings = await this.ctx.settings(tenant);
    const reservationId = newId('RS');
    const cause = opts.idempotencyKey ? `reserve:${opts.idempotencyKey}` : null;
    const cartRef = input.cart_ref ?? null;
    const at = settings.now.toISOString();
    const expiresAt = new Date(settings.now.getTime() + settings.reservationTtlSeconds * 1000).toISOString();
    const out = await this.ctx.decide(tenant, memberId, (s) => {
      const prior = cause ? reservationByCause(s, cause) : null;
      if (prior) return { events: [], result: prior.id };
      return {
        events: decideOpenReservation(s, settings.rules, {
          reservation_id: reservationId, amount_cents: input.amount_cents, cart_ref: cartRef,
          eligible_total_cents: input.eligible_total_cents ?? null, payment_method: input.payment_method ?? null,
          expires_at: expiresAt, cause, at,
        }),
        result: reservationId,
      };
    }, (s, id) => {
      const r = s.reservations.get(id)!;
      this.ctx.rememberOwner(tenant, id, memberId);
      if (id === reservationId) return { view: reservationView(r, memberId), replay: false };
      if (r.amount_cents !== input.amount_cents || r.cart_ref !== cartRef) {
        throw problem('idempotency-key-reused', 'This Idempotency-Key was used for a different reservation');
      }
      // the response the first call gave
      return { view: { ...reservationView(r, memberId), status: 'open' as const, order_ref: null, ledger_entry_id: null }, replay: true };
    });
    if (out.replay) await this.ctx.projectRecorded(tenant, memberId, out.view.id);
    return out.view;
  }

  /** POST /v1/redemption-reservations/{id}/confirm: the held points are debited. */
  async confirm(tenant: string, id: string, orderRef: string): Promise<ReservationView> {
    const memberId = await this.ownerOf(tenant, id);
    const at = (await this.ctx.programs.now(tenant)).toISOString();
    return this.ctx.decide(tenant, memberId,
      (s) => ({ events: decideConfirmReservation(s, { reservation_id: id, order_ref: orderRef, entry_id: newId('LE'), at }), result: id }),
      (s) => reservationView(s.reservations.get(id)!, memberId));
  }

  /** POST /v1/redemption-reservations/{id}/release */
  async release(tenant: string, id: string): Promise<ReservationView> {
    const memberId = await this.ownerOf(tenant, id);
    const at = (await this.ctx.programs.now(tenant)).toISOString();
    return this.ctx.decide(tenant, memberId,
      (s) => ({ events: decideReleaseReservation(s, { reservation_id: id, at }), result: id }),
      (s) => reservationView(s.reservations.get(id)!, memberId));
  }

  /** GET /v1/redemption-reservations/{id} */
  async get(tenant: string, id: string): Promise<ReservationView> {
    const memberId = await this.ownerOf(tenant, id);
    const r = (await this.ctx.load(tenant, memberId)).reservations.get(id);
    if (!r) throw notFound('reservation');
    return reservationView(r, memberId);
  }

  private async ownerOf(tenant: string, id: string): Promise<string> {
    const owner = await this.ctx.ownerOf(tenant, 'reservations', id);
    if (!owner) throw notFound('reservation');
    return owner;
  }
}
