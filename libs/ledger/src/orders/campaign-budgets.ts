import { Pool } from 'pg';
import { inTransaction } from '@loyalty/platform';

/**
 * Campaign budgets (decisions §5 "campaign … optional budget_cents it may issue in total"), per
 * programme partition. A claim is taken in a transaction holding the budget row, so concurrent
 * orders of different members can never issue more than the budget together; a claim is keyed
 * by its earn cause, so a retried event gets back the amount it was granted the first time.
 * Budgets count what was issued: a later refund or cancellation does not give budget back.
 */
export class CampaignBudgets {
  constructor(private readonly pool: Pool) {}

  /** Issued so far per campaign rule, leaving out the claims of `causes` (a retry must not see its own claim). */
  async issued(tenant: string, ruleIds: string[], causes: string[]): Promise<Record<string, number>> {
    if (ruleIds.length === 0) return {};
    const { rows } = await this.pool.query<{ rule_id: string; issued: string; mine: string }>(
      `select b.rule_id, b.issued_cents as issued,
              coalesce((select sum(c.amount_cents) from ledger.campaign_budget_claims c
                        where c.tenant = b.tenant and c.rule_id = b.rule_id and c.cause = any($3)), 0) as mine
       from ledger.campaign_budgets b where b.tenant = $1 and b.rule_id = any($2)`,
      [tenant, ruleIds, causes]);
    const out: Record<string, number> = {};
    for (const r of rows) out[r.rule_id] = Number(r.issued) - Number(r.mine);
    return out;
  }

  /** Claims up to `wanted` of the rule's budget for `cause`; returns what was granted (0 when exhausted). */
  async claim(tenant: string, ruleId: string, cause: string, wanted: number, budget: number): Promise<number> {
    return inTransaction(this.pool, async (c) => {
      await c.query('insert into ledger.campaign_budgets (tenant, rule_id) values ($1, $2) on conflict do nothing', [tenant, ruleId]);
      const { rows } = await c.query<{ issued_cents: string }>(
        'select issued_cents from ledger.campaign_budgets where tenant = $1 and rule_id = $2 for update', [tenant, ruleId]);
      const prior = await c.query<{ amount_cents: string }>(
        'select amount_cents from ledger.campaign_budget_claims where tenant = $1 and rule_id = $2 and cause = $3', [tenant, ruleId, cause]);
      if (prior.rowCount) return Math.min(wanted, Number(prior.rows[0].amount_cents));
      const granted = Math.max(0, Math.min(wanted, budget - Number(rows[0].issued_cents)));
      if (granted > 0) {
        await c.query('insert into ledger.campaign_budget_claims (tenant, rule_id, cause, amount_cents) values ($1,$2,$3,$4)', [tenant, ruleId, cause, granted]);
        await c.query('update ledger.campaign_budgets set issued_cents = issued_cents + $3 where tenant = $1 and rule_id = $2', [tenant, ruleId, granted]);
      }
      return granted;
    });
  }
}
