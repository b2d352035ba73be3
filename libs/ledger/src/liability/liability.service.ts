import { Pool } from 'pg';
import { ProgramStore } from '@loyalty/programs';
import { LedgerReadModels } from '../ledger.read-models';

export interface Liability {
  outstanding_cents: number; available_cents: number; pending_cents: number;
  lifetime_issued_cents: number; lifetime_redeemed_cents: number; members: number;
  /** members' negative available balances as a positive number (already netted in outstanding_cents; decisions §9a) */
  negative_balance_cents: number;
  as_of: string;
}

const TTL_MS = 30_000;

/** Finance view: sums of the members projection, cached 30 s per programme and mode. */
export class LiabilityService {
  private readonly cache = new Map<string, { at: number; value: Liability }>();
  constructor(private readonly pool: Pool, private readonly programs: ProgramStore, private readonly readModels: LedgerReadModels) {}

  async get(tenant: string): Promise<Liability> {
    const hit = this.cache.get(tenant);
    if (hit && Date.now() - hit.at < TTL_MS) return hit.value;
    // the figure is cached for 30 s: make it include every write already committed (other services'
    // spending included, which does not wait for this projection), bounded so a slow runner never blocks it
    await this.readModels.catchUp();
    const { rows } = await this.pool.query<Record<string, string>>(
      `select coalesce(sum(available_cents),0) as available, coalesce(sum(pending_cents),0) as pending,
              coalesce(sum(lifetime_earned_cents),0) as issued, coalesce(sum(lifetime_redeemed_cents),0) as redeemed,
              count(*) filter (where state not in ('deleted','anonymised')) as members,
              coalesce(sum(greatest(-available_cents, 0)),0) as negative
       from ledger.members where tenant = $1`, [tenant]);
    const r = rows[0];
    // programme time: the sandbox's test clock (decisions §9a)
    const asOf = (await this.programs.now(tenant)).toISOString();
    const value: Liability = {
      outstanding_cents: Number(r.available) + Number(r.pending),
      available_cents: Number(r.available), pending_cents: Number(r.pending),
      lifetime_issued_cents: Number(r.issued), lifetime_redeemed_cents: Number(r.redeemed),
      members: Number(r.members), negative_balance_cents: Number(r.negative), as_of: asOf,
    };
    this.cache.set(tenant, { at: Date.now(), value });
    return value;
  }

  clear(tenant?: string): void { if (tenant) this.cache.delete(tenant); else this.cache.clear(); }
}
