import { assertNonNegativeSafeInteger, sumSafe } from './integer.math';
import { MS_PER_DAY, parseInstant } from './utc-calendar.util';

/** A quantity of points earned together, spent FIFO and expiring together. */
export interface Lot {
  id: string;
  amount_cents: number;
  remaining_cents: number;
  expires_at: string | null;
  earned_at: string;
}

export interface LotMovement {
  lot_id: string;
  amount_cents: number;
}

export interface ConsumeResult {
  /** The lots after consumption, in the order they were given. */
  lots: Lot[];
  /** What was taken from each lot, oldest first; lots left untouched are not listed. */
  consumed: LotMovement[];
  /** The part of `amount` the lots could not cover (0 when fully covered). */
  shortfall: number;
}

export interface ExpireResult {
  /** The lots after expiry, in the order they were given. */
  lots: Lot[];
  /** One entry per lot expired now, with its unspent remainder, in the order the lots were given. */
  expired: LotMovement[];
}

/**
 * FIFO order: earliest `earned_at` first (compared as instants), then `id` (code-unit order).
 * Returns a new array; the input is not modified.
 */
export function fifoOrder(lots: readonly Lot[]): Lot[] {
  const keyed = lots.map((lot) => ({ lot, at: parseInstant(lot.earned_at, `lot ${lot.id} earned_at`) }));
  keyed.sort((a, b) => a.at - b.at || (a.lot.id < b.lot.id ? -1 : a.lot.id > b.lot.id ? 1 : 0));
  return keyed.map((entry) => entry.lot);
}

function validateLots(lots: readonly Lot[]): void {
  const seen = new Set<string>();
  for (const lot of lots) {
    if (seen.has(lot.id)) {
      throw new RangeError(`duplicate lot id ${lot.id}`);
    }
    seen.add(lot.id);
    assertNonNegativeSafeInteger(lot.amount_cents, `lot ${lot.id} amount_cents`);
    assertNonNegativeSafeInteger(lot.remaining_cents, `lot ${lot.id} remaining_cents`);
    if (lot.remaining_cents > lot.amount_cents) {
      throw new RangeError(`lot ${lot.id} remaining_cents exceeds amount_cents`);
    }
  }
}

function withRemaining(lots: readonly Lot[], changes: ReadonlyMap<string, number>): Lot[] {
  return lots.map((lot) => {
    const remaining = changes.get(lot.id);
    return remaining === undefined ? lot : { ...lot, remaining_cents: remaining };
  });
}

/**
 * Spends `amount` from the lots, oldest earned first (`fifoOrder`). The lots are taken as given:
 * the caller removes or expires lots that are no longer spendable (see `expireDueLots`) first.
 * Immutable: returns new lot objects for the lots it touched.
 */
export function consumeLots(lots: readonly Lot[], amount: number): ConsumeResult {
  assertNonNegativeSafeInteger(amount, 'amount');
  validateLots(lots);
  const changes = new Map<string, number>();
  const consumed: LotMovement[] = [];
  let left = amount;
  for (const lot of fifoOrder(lots)) {
    if (left === 0) {
      break;
    }
    const take = Math.min(left, lot.remaining_cents);
    if (take > 0) {
      changes.set(lot.id, lot.remaining_cents - take);
      consumed.push({ lot_id: lot.id, amount_cents: take });
      left -= take;
    }
  }
  return { lots: withRemaining(lots, changes), consumed, shortfall: left };
}

/**
 * The inverse of `consumeLots`: gives `consumed` amounts back to the lots they came from (e.g.
 * when a voucher is voided). Throws a RangeError for an unknown lot or when a lot would hold more
 * than it was earned with. A lot that expired meanwhile gets its points back and is expired again
 * by the next `expireDueLots`.
 */
export function restoreLots(lots: readonly Lot[], consumed: readonly LotMovement[]): Lot[] {
  validateLots(lots);
  const byId = new Map(lots.map((lot) => [lot.id, lot] as const));
  const changes = new Map<string, number>();
  for (const movement of consumed) {
    const lot = byId.get(movement.lot_id);
    if (lot === undefined) {
      throw new RangeError(`cannot restore to unknown lot ${movement.lot_id}`);
    }
    assertNonNegativeSafeInteger(movement.amount_cents, `restore to lot ${lot.id}`);
    const remaining = (changes.get(lot.id) ?? lot.remaining_cents) + movement.amount_cents;
    if (remaining > lot.amount_cents) {
      throw new RangeError(`restoring to lot ${lot.id} would exceed its amount_cents`);
    }
    changes.set(lot.id, remaining);
  }
  return withRemaining(lots, changes);
}

/** Expires every lot with `expires_at <= now` that still holds points; immutable. */
export function expireDueLots(lots: readonly Lot[], now: string): ExpireResult {
  validateLots(lots);
  const nowMs = parseInstant(now, 'now');
  const changes = new Map<string, number>();
  const expired: LotMovement[] = [];
  for (const lot of lots) {
    if (
      lot.expires_at !== null &&
      lot.remaining_cents > 0 &&
      parseInstant(lot.expires_at, `lot ${lot.id} expires_at`) <= nowMs
    ) {
      changes.set(lot.id, 0);
      expired.push({ lot_id: lot.id, amount_cents: lot.remaining_cents });
    }
  }
  return { lots: withRemaining(lots, changes), expired };
}

/** Unspent points whose expiry falls in (now, now + days] (e.g. `expiring_30d_cents`). */
export function expiringWithin(lots: readonly Lot[], now: string, days: number): number {
  validateLots(lots);
  assertNonNegativeSafeInteger(days, 'days');
  const nowMs = parseInstant(now, 'now');
  const untilMs = nowMs + days * MS_PER_DAY;
  return sumSafe(
    lots
      .filter((lot) => {
        if (lot.expires_at === null) {
          return false;
        }
        const expiresMs = parseInstant(lot.expires_at, `lot ${lot.id} expires_at`);
        return expiresMs > nowMs && expiresMs <= untilMs;
      })
      .map((lot) => lot.remaining_cents),
    'expiring points',
  );
}
