import { PoolClient } from 'pg';
import { EventStore, Projection, RecordedEvent } from '@loyalty/event-store';
import { parseMemberStream } from '../ledger.context';
import { MemberFold } from './member-fold';
import { PiiVault } from '../pii/pii.vault';

/**
 * ledger.members: one row per member with state and balances, for lists, filters and liability.
 * It folds the same evolve as the aggregate (cached per stream by revision), so the row can never
 * disagree with what GET /v1/members/{id} computes.
 */
export class MembersProjection implements Projection {
  readonly name = 'ledger.members';
  readonly filter = { streamPrefixes: ['member-'] };
  readonly tables = ['ledger.members'];
  private readonly fold: MemberFold;

  constructor(store: EventStore, private readonly vault: PiiVault, fold?: MemberFold) {
    this.fold = fold ?? new MemberFold(store);
  }

  async apply(tx: PoolClient, event: RecordedEvent): Promise<void> {
    const ids = parseMemberStream(event.streamId);
    if (!ids) return;
    const { state } = await this.fold.advance(event);
    if (!state.exists) return;
    const pii = await this.vault.open(ids.tenant, ids.memberId, state.pii);
    await tx.query(
      `insert into ledger.members (tenant, member_id, email, phone, external_ref, state, available_cents, pending_cents, reserved_cents,
         lifetime_earned_cents, lifetime_redeemed_cents, revision, created_at)
       values ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)
       on conflict (tenant, member_id) do update set email = excluded.email, phone = excluded.phone, external_ref = excluded.external_ref,
         state = excluded.state, available_cents = excluded.available_cents, pending_cents = excluded.pending_cents,
         reserved_cents = excluded.reserved_cents, lifetime_earned_cents = excluded.lifetime_earned_cents,
         lifetime_redeemed_cents = excluded.lifetime_redeemed_cents, revision = excluded.revision`,
      [ids.tenant, ids.memberId, pii.email, pii.phone, pii.external_ref, state.state, state.available, state.pending, state.reserved,
        state.lifetime_earned, state.lifetime_redeemed, event.revision.toString(), state.created_at]);
  }

  reset(): void { this.fold.reset(); }
}
