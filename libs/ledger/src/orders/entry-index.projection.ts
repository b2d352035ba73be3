import { PoolClient } from 'pg';
import { pgArray } from '@loyalty/platform';
import { STREAM_PREFIX, parseMemberStreamId } from '@loyalty/contracts';
import { Projection, RecordedEvent } from '@loyalty/event-store';
import type { EntryData } from '@loyalty/domain-member';

/** ledger.entry_index: entry id → (tenant, member), so an admin call naming only an entry id finds its stream. */
export class EntryIndexProjection implements Projection {
  readonly name = 'ledger.entry_index';
  readonly filter = { streamPrefixes: [STREAM_PREFIX.member], eventTypes: ['EntryRecorded'] };
  readonly tables = ['ledger.entry_index'];
  /** this batch's rows, written by afterBatch in one statement */
  private staged: { entry_id: string; tenant: string; member_id: string }[] = [];

  beforeBatch(): void { this.staged = []; }

  async apply(_tx: PoolClient, event: RecordedEvent): Promise<void> {
    const ids = parseMemberStreamId(event.streamId);
    if (!ids) return;
    this.staged.push({ entry_id: (event.data as EntryData).id, tenant: ids.tenant, member_id: ids.memberId });
  }

  async afterBatch(tx: PoolClient): Promise<void> {
    const rows = this.staged;
    this.staged = [];
    if (!rows.length) return;
    await tx.query(
      `insert into ledger.entry_index (entry_id, tenant, member_id)
       select * from unnest($1::text[], $2::text[], $3::text[]) on conflict do nothing`,
      [pgArray(rows.map((r) => r.entry_id)), pgArray(rows.map((r) => r.tenant)), pgArray(rows.map((r) => r.member_id))]);
  }

  /** Where an entry lives, or null. */
  static async find(pool: { query: PoolClient['query'] }, entryId: string): Promise<{ tenant: string; member_id: string } | null> {
    const { rows } = await pool.query<{ tenant: string; member_id: string }>('select tenant, member_id from ledger.entry_index where entry_id = $1', [entryId]);
    return rows[0] ?? null;
  }
}
