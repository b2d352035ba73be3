import { PoolClient } from 'pg';
import { parseMemberStreamId } from '@loyalty/contracts';
import { Projection, RecordedEvent } from '@loyalty/event-store';
import type { EntryData } from '@loyalty/domain-member';

export const MIGRATION_REASON = 'migration';

/**
 * ledger.migration_entries: the `adjust` entries of each migration batch (decisions §10) and the
 * `reverse` entry that undid each, so a batch can be reversed as a whole by its id.
 */
export class MigrationEntriesProjection implements Projection {
  readonly name = 'ledger.migration_entries';
  readonly filter = { streamPrefixes: ['member-'], eventTypes: ['EntryRecorded'] };
  readonly tables = ['ledger.migration_entries'];

  /** The batch's new rows, inserted in one statement before any reversal updates them. */
  private added: [string, string, string, string, number, string][] = [];

  beforeBatch(): void { this.added = []; }

  async afterBatch(tx: PoolClient): Promise<void> { await this.flush(tx); }

  private async flush(tx: PoolClient): Promise<void> {
    const rows = this.added;
    this.added = [];
    if (!rows.length) return;
    await tx.query(
      `insert into ledger.migration_entries (tenant, batch_id, member_id, entry_id, amount_cents, created_at)
       select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[]) on conflict do nothing`,
      [0, 1, 2, 3, 4, 5].map((i) => rows.map((r) => r[i])));
  }

  async apply(tx: PoolClient, event: RecordedEvent): Promise<void> {
    if (event.type !== 'EntryRecorded') return;
    const ids = parseMemberStreamId(event.streamId);
    if (!ids) return;
    const e = event.data as EntryData;
    if (e.type === 'adjust' && e.reason_code === MIGRATION_REASON && e.batch_id) {
      this.added.push([ids.tenant, e.batch_id, ids.memberId, e.id, e.amount_cents, e.created_at]);
    } else if (e.type === 'reverse' && e.parent_entry_id && e.batch_id) {
      await this.flush(tx);
      await tx.query(
        'update ledger.migration_entries set reversed_by = $3 where tenant = $1 and entry_id = $2 and reversed_by is null',
        [ids.tenant, e.parent_entry_id, e.id]);
    }
  }
}
