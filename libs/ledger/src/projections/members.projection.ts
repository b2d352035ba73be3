import { PoolClient } from 'pg';
import { pgArray } from '@loyalty/platform';
import { STREAM_PREFIX, parseMemberStreamId } from '@loyalty/contracts';
import { EventStore, Projection, RecordedEvent } from '@loyalty/event-store';
import { MemberFold } from './member-fold';
import { PiiVault } from '../pii/pii.vault';
import type { MemberAggregate } from '@loyalty/domain-member';

/**
 * ledger.members: one row per member with state and balances, for lists, filters and liability.
 * It folds the same evolve as the aggregate (cached per stream by revision), so the row can never
 * disagree with what GET /v1/members/{id} computes.
 */
export class MembersProjection implements Projection {
  readonly name = 'ledger.members';
  readonly filter = { streamPrefixes: [STREAM_PREFIX.member] };
  readonly tables = ['ledger.members'];
  private readonly fold: MemberFold;

  constructor(store: EventStore, private readonly vault: PiiVault, fold?: MemberFold) {
    this.fold = fold ?? new MemberFold(store);
  }

  /** the newest state of each member this batch touched (one row write per member per batch) */
  private staged = new Map<string, { tenant: string; memberId: string; state: MemberAggregate; revision: bigint }>();

  async beforeBatch(_tx: PoolClient, events: readonly RecordedEvent[]): Promise<void> {
    this.staged.clear();
    await this.fold.warm(events);
  }

  async apply(_tx: PoolClient, event: RecordedEvent): Promise<void> {
    const ids = parseMemberStreamId(event.streamId);
    if (!ids) return;
    const { state } = await this.fold.advance(event);
    if (!state.exists) return;
    this.staged.set(event.streamId, { tenant: ids.tenant, memberId: ids.memberId, state, revision: event.revision });
  }

  async afterBatch(tx: PoolClient): Promise<void> {
    const rows = [...this.staged.values()];
    this.staged.clear();
    if (!rows.length) return;
    const pii = await Promise.all(rows.map((r) => this.vault.open(r.tenant, r.memberId, r.state.pii)));
    const col = (f: (r: (typeof rows)[number], i: number) => string | number | bigint | null | undefined): string => pgArray(rows.map(f));
    await tx.query(
      `insert into ledger.members (tenant, member_id, email, phone, external_ref, state, available_cents, pending_cents, reserved_cents,
         lifetime_earned_cents, lifetime_redeemed_cents, revision, created_at)
       select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[], $9::bigint[],
         $10::bigint[], $11::bigint[], $12::bigint[], $13::timestamptz[])
       on conflict (tenant, member_id) do update set email = excluded.email, phone = excluded.phone, external_ref = excluded.external_ref,
         state = excluded.state, available_cents = excluded.available_cents, pending_cents = excluded.pending_cents,
         reserved_cents = excluded.reserved_cents, lifetime_earned_cents = excluded.lifetime_earned_cents,
         lifetime_redeemed_cents = excluded.lifetime_redeemed_cents, revision = excluded.revision`,
      [col((r) => r.tenant), col((r) => r.memberId), col((_, i) => pii[i].email), col((_, i) => pii[i].phone), col((_, i) => pii[i].external_ref),
        col((r) => r.state.state), col((r) => r.state.available), col((r) => r.state.pending), col((r) => r.state.reserved),
        col((r) => r.state.lifetime_earned), col((r) => r.state.lifetime_redeemed), col((r) => r.revision.toString()), col((r) => r.state.created_at)]);
  }

  reset(): void { this.fold.reset(); }
}
