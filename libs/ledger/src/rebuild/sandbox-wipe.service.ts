import { Pool, PoolClient } from 'pg';
import { inTransaction, parseTenantKey, problem } from '@loyalty/platform';
import { ProjectionRunner } from '@loyalty/event-store';
import { LedgerContext } from '../ledger.context';

const quoteIdent = (s: string): string => `"${s.replace(/"/g, '""')}"`;
const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Base tables (any schema) that have a column of this name. */
const tablesWithColumn = async (db: Pool | PoolClient, column: string): Promise<string[]> => {
  const { rows } = await db.query<{ schema: string; name: string }>(
    `select c.table_schema as schema, c.table_name as name
     from information_schema.columns c
     join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
     where c.column_name = $1 and t.table_type = 'BASE TABLE'
       and c.table_schema not in ('pg_catalog', 'information_schema')
     order by 1, 2`, [column]);
  return rows.map((r) => `${quoteIdent(r.schema)}.${quoteIdent(r.name)}`);
};

/**
 * Streams of one tenant: `<kind>-<tenant>-…` or `<kind>-<tenant>` (member-, order-, referral-,
 * webhook-endpoint-…). The kind is lower case, the tenant starts with `P-`, so a live programme's
 * streams never match its sandbox's pattern and vice versa.
 */
export const tenantStreamPattern = (tenant: string): string => `^[a-z][a-z0-9_]*(-[a-z][a-z0-9_]*)*-${escapeRegex(tenant)}(-|$)`;

/**
 * POST /admin/v1/programs/{pid}/sandbox/wipe: deletes everything of the sandbox partition
 * `<pid>_test`: its streams in the event store, its rows in every table of every schema keyed by
 * `tenant` (read models, identities, member keys, idempotency records…), its test clock and its
 * rejected-call log. API keys, the programme and its rules and tiers stay. Live data is untouched.
 */
export class SandboxWipeService {
  constructor(private readonly ctx: LedgerContext, private readonly onWiped: (tenant: string) => void = () => undefined) {}

  async wipe(tenant: string): Promise<{ wiped: true; tenant: string; streams: number; rows: number }> {
    const t = parseTenantKey(tenant);
    if (t.mode !== 'test') throw problem('rule-ineligible', 'Only a sandbox (test mode) can be wiped');
    const pattern = tenantStreamPattern(tenant);
    let streams = 0;
    let rows = 0;
    await inTransaction(this.ctx.pool, async (tx) => {
      for (const table of await tablesWithColumn(tx, 'stream_id')) {
        const r = await tx.query(`delete from ${table} where stream_id ~ $1`, [pattern]);
        if (table === '"es"."streams"') streams = r.rowCount ?? 0;
      }
      rows += await this.deleteTenantRows(tx, tenant);
      await tx.query('delete from program.test_clocks where program_id = $1', [t.programId]);
      const log = await tx.query(`select to_regclass('gateway.rejected_calls') as t`);
      if (log.rows[0].t) await tx.query(`delete from gateway.rejected_calls where program_id = $1 and mode = 'test'`, [t.programId]);
    });
    // caches keyed by stream or member must not resurrect what was deleted
    this.ctx.handler.forget();
    this.ctx.vault.forgetCache();
    this.onWiped(tenant);
    // a projection that had read the sandbox's events before the delete may have written rows since
    // (any service's runner of this process: their batches gather for a moment): settle, then sweep them up
    const head = await this.ctx.store.headPosition();
    (this.ctx.store as { poke?: () => void }).poke?.();
    await ProjectionRunner.settleAll(head);
    rows += await this.deleteTenantRows(this.ctx.pool, tenant);
    return { wiped: true, tenant, streams, rows };
  }

  private async deleteTenantRows(db: Pool | PoolClient, tenant: string): Promise<number> {
    let n = 0;
    for (const table of await tablesWithColumn(db, 'tenant')) {
      const r = await db.query(`delete from ${table} where tenant = $1`, [tenant]);
      n += r.rowCount ?? 0;
    }
    return n;
  }
}
