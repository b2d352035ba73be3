import type { Reservation, Voucher } from '@loyalty/domain-member';

/** Redemption (interface-spec "Redemption", decisions §6) plus its owner. */
export interface RedemptionView {
  id: string;
  status: Voucher['status'];
  mode: Voucher['mode'];
  amount_cents: number;
  code: string;
  order_ref: string | null;
  ledger_entry_id: string;
  expires_at: string | null;
  created_at: string;
  member_id: string;
}

/** Reservation record (decisions §6). */
export interface ReservationView {
  id: string;
  status: Reservation['status'];
  member_id: string;
  amount_cents: number;
  cart_ref: string | null;
  order_ref: string | null;
  ledger_entry_id: string | null;
  expires_at: string;
  created_at: string;
}

export const redemptionView = (v: Voucher, memberId: string): RedemptionView => ({
  id: v.id, status: v.status, mode: v.mode, amount_cents: v.amount_cents, code: v.code, order_ref: v.order_ref,
  ledger_entry_id: v.entry_id, expires_at: v.expires_at, created_at: v.created_at, member_id: memberId,
});

export const reservationView = (r: Reservation, memberId: string): ReservationView => ({
  id: r.id, status: r.status, member_id: memberId, amount_cents: r.amount_cents, cart_ref: r.cart_ref, order_ref: r.order_ref,
  ledger_entry_id: r.entry_id, expires_at: r.expires_at, created_at: r.created_at,
});
