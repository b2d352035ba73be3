import { PoolClient } from 'pg';
import { Projection, RecordedEvent } from '@loyalty/event-store';
import type { EntryData } from '@loyalty/domain-member';
import { parseMemberStream } from '../ledger.context';

/** ledger.entry_index: entry id → (tenant, member), so an admin call naming only an entry id finds its stream. */
export class EntryIndexProjection implements Projection {
  readonly name = 'ledger.entry_index';
  readonly filter = { streamPrefixes: ['member-'], eventTypes: ['EntryRecorded'] };
  readonly tables = ['ledger.entry_index'];

  async apply(tx: PoolClient, event: RecordedEvent): Promise<void> {
    const ids = parseMemberStream(event.streamId);
    if (!ids) return;
    const entry = event.data as EntryData;
    await tx.query('insert into ledger.entry_index (entry_id, tenant, member_id) values ($1, $2, $3) on conflict do nothing', [entry.id, ids.tenant, ids.memberId]);
  }

  /** Where an entry lives, or null. */
  static async find(pool: { query: PoolClient['query'] }, entryId: string): Promise<{ tenant: string; member_id: string } | null> {
    const { rows } = await pool.query<{ tenant: string; member_id: string }>('select tenant, member_id from ledger.entry_index where entry_id = $1', [entryId]);
    return rows[0] ?? null;
  }
}
