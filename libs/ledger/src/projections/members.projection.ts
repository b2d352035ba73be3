import { PoolClient } from 'pg';
import { EventStore, Projection, RecordedEvent } from '@loyalty/event-store';
import { MemberAggregate, MemberEvent, memberEvolver } from '@loyalty/domain-member';
import { parseMemberStream } from '../ledger.context';
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
  private readonly cache = new Map<string, { revision: bigint; state: MemberAggregate }>();

  constructor(private readonly store: EventStore, private readonly vault: PiiVault) {}

  async apply(tx: PoolClient, event: RecordedEvent): Promise<void> {
    const ids = parseMemberStream(event.streamId);
    if (!ids) return;
    let cached = this.cache.get(event.streamId);
    if (!cached || cached.revision !== event.revision - 1n) {
      // cold or out of step: fold the stream up to the event before this one
      let state = memberEvolver.initialState();
      const before = event.revision > 0n ? await this.store.readStream(event.streamId, 0n, Number(event.revision)) : [];
      for (const e of before) state = memberEvolver.evolve(state, { type: e.type, data: e.data } as MemberEvent);
      cached = { revision: event.revision - 1n, state };
    }
    const state = memberEvolver.evolve(cached.state, { type: event.type, data: event.data } as MemberEvent);
    this.cache.set(event.streamId, { revision: event.revision, state });
    if (this.cache.size > 20_000) this.cache.delete(this.cache.keys().next().value!);
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

  reset(): void { this.cache.clear(); }
}
