import { CommandHandler, WireHead, committedHead, deleteTenantStreams, toWire } from '@loyalty/event-store';
import { deleteTenantRows, inTransaction, parseTenantKey, problem } from '@loyalty/platform';
import { Pool } from 'pg';
import { LedgerReadModels } from '../ledger.read-models';
import { PiiVault } from '../pii/pii.vault';

/** Every ledger table keyed by `tenant` (children before parents). A new ledger table of tenant data joins this list. */
export const LEDGER_TENANT_TABLES = [
  'ledger.campaign_budget_claims', 'ledger.campaign_budgets', 'ledger.due_items', 'ledger.entry_index', 'ledger.finance_daily',
  'ledger.finance_entries', 'ledger.finance_movements', 'ledger.identities', 'ledger.member_keys', 'ledger.members', 'ledger.migration_entries',
] as const;

/**
 * `ledger.sandbox.wipe`, the first step of POST /admin/v1/programs/{pid}/sandbox/wipe: deletes the
 * sandbox partition `<pid>_test`'s streams from the event store and the ledger's own rows of it
 * (read models, identities, member keys). Every other service then wipes its own rows when the
 * admin plane asks it (`<service>.sandbox.wipe`); the programme's test clock is the programme
 * store's. Live data is untouched.
 */
export class SandboxWipeService {
  constructor(
    private readonly pool: Pool,
    private readonly handler: CommandHandler,
    private readonly vault: PiiVault,
    private readonly readModels: LedgerReadModels,
    private readonly onWiped: (tenant: string) => void = () => undefined) {}

  /** `head`: the newest committed event before the delete; the other services' wipes catch up with it (wipeTenantRows). */
  async wipe(tenant: string): Promise<{ wiped: true; tenant: string; streams: number; rows: number; head: WireHead }> {
    const t = parseTenantKey(tenant);
    if (t.mode !== 'test') throw problem('rule-ineligible', 'Only a sandbox (test mode) can be wiped');
    const before = await committedHead(this.readModels.store);
    let streams = 0;
    let rows = 0;
    await inTransaction(this.pool, async (tx) => {
      streams = await deleteTenantStreams(tx, tenant);
      rows += await deleteTenantRows(tx, LEDGER_TENANT_TABLES, tenant);
    });
    // caches keyed by stream or member must not resurrect what was deleted
    this.handler.forget();
    this.vault.forgetCache();
    this.onWiped(tenant);
    // the ledger's runner may have read the sandbox's events before the delete and written rows
    // since (its batches gather for a moment): let it catch up, then sweep them up
    await Promise.all(this.readModels.runners.map((r) => r.waitFor(before, 10_000).catch(() => undefined)));
    await this.readModels.catchUp(10_000);
    rows += await deleteTenantRows(this.pool, LEDGER_TENANT_TABLES, tenant);
    return { wiped: true, tenant, streams, rows, head: toWire(before) };
  }
}
