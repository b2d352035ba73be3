import { Pool } from 'pg';
import { newVoucherCode, prepared } from '@loyalty/platform';

/** Which of a group's new codes are taken (the numbers of their rows, from 1): redemption.codes_taken, prepared. */
const CODE_TAKEN_SQL = prepared('voucher_code_taken', 'select n from redemption.codes_taken($1::text[], $2::text[]) as t(n)');

/** Codes drawn and checked at once for a programme whose pool runs low. */
export const CODES_CHECKED_AT_ONCE = 64;
/** A programme's pool is refilled (in the background) when fewer than this many codes are left. */
const REFILL_BELOW = 16;
/** Programmes whose pools are kept (the least recently used is dropped): 64 codes of 13 characters each. */
const PROGRAMMES_KEPT = 1_000;

/**
 * Fresh voucher codes per programme, drawn at random (32^8) and checked against the programme's
 * codes ahead of use, CODES_CHECKED_AT_ONCE in one query: a redemption takes a checked code from
 * memory instead of checking its own (a query a redemption, 10 % of PostgreSQL's time in the
 * redemption benchmark). A code checked free may be issued by another process before it is used,
 * as it could between a check and the append before; at 32^8 codes that stays as unlikely as it was.
 */
export class VoucherCodes {
  private readonly pools = new Map<string, string[]>();
  private readonly refills = new Map<string, Promise<void>>();

  constructor(private readonly pool: Pool, private readonly draw: () => string = newVoucherCode) {}

  /** A code no redemption of the programme holds, not handed out before by this process. */
  async next(tenant: string): Promise<string> {
    for (;;) {
      const codes = this.pools.get(tenant);
      const code = codes?.pop();
      if (code !== undefined) {
        // least recently used first: the programme moves to the end
        this.pools.delete(tenant);
        this.pools.set(tenant, codes!);
        if (codes!.length < REFILL_BELOW) void this.refill(tenant).catch(() => undefined); // a failure: the caller that finds the pool empty refills (and fails) itself
        return code;
      }
      await this.refill(tenant);
    }
  }

  /** One refill per programme at a time: CODES_CHECKED_AT_ONCE new codes checked, the free ones added. */
  private refill(tenant: string): Promise<void> {
    let running = this.refills.get(tenant);
    if (!running) {
      running = this.check(tenant).finally(() => this.refills.delete(tenant));
      this.refills.set(tenant, running);
    }
    return running;
  }

  private async check(tenant: string): Promise<void> {
    const drawn = [...new Set(Array.from({ length: CODES_CHECKED_AT_ONCE }, () => this.draw()))];
    const { rows } = await this.pool.query<{ n: string }>(CODE_TAKEN_SQL([drawn.map(() => tenant), drawn]));
    const taken = new Set(rows.map((r) => Number(r.n) - 1));
    const codes = this.pools.get(tenant) ?? [];
    drawn.forEach((code, i) => { if (!taken.has(i)) codes.push(code); });
    this.pools.delete(tenant);
    this.pools.set(tenant, codes);
    if (this.pools.size > PROGRAMMES_KEPT) this.pools.delete(this.pools.keys().next().value!);
  }
}
