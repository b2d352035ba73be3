import { PoolClient } from 'pg';
import type { Balances } from '@loyalty/contracts';
import { EventStore, Projection, RecordedEvent, SnapshotStore, StateCache, foldCacheBytes, foldStream } from '@loyalty/event-store';
import { MemberAggregate, MemberEvent, balancesOf, liveLots, memberEvolver } from '@loyalty/domain-member';
import { parseTenantKey } from '@loyalty/platform';
import { EndpointsRepository } from '../endpoints/endpoints.repository';
import { DeliveryQueue } from '../delivery/delivery.queue';
import { MappedEvent, ProgramInfo, eventTime, mapMemberEvent, memberSummary, sameBalances } from './payloads';

/** `member-<tenant>-<M-…>` → its parts; null for any other stream. */
export const parseMemberStreamId = (streamId: string): { tenant: string; memberId: string } | null => {
  const m = /^member-(.+)-(M-[0-9A-Z]{26})$/.exec(streamId);
  return m ? { tenant: m[1], memberId: m[2] } : null;
};

/** `referral-<tenant>-<friend M-…>` → its parts; null for any other stream. */
export const parseReferralStreamId = (streamId: string): { tenant: string; friendId: string } | null => {
  const m = /^referral-(.+)-(M-[0-9A-Z]{26})$/.exec(streamId);
  return m ? { tenant: m[1], friendId: m[2] } : null;
};

interface Folded {
  revision: bigint;
  state: MemberAggregate;
  /** the append (transaction) the last event belonged to, and the balances before it began */
  appendCommit: bigint | null;
  appendStart: Balances | null;
  /** whether webhook.lot_watch may hold rows for this member */
  watched: boolean;
  /** whether webhook.lot_watch mirrors this state's lots (then each event writes only the lots it changed) */
  synced?: boolean;
}

export type ProgramInfoSource = (tenant: string) => Promise<ProgramInfo>;

/** The body every delivery carries (decisions §8); its `id` is the delivery id (= `webhook-id`). */
export const webhookBody = (deliveryId: string, type: string, createdAt: string, tenant: string, data: unknown): string =>
  JSON.stringify({ id: deliveryId, type, created_at: createdAt, livemode: parseTenantKey(tenant).mode === 'live', data });

/**
 * webhook.events: the webhook service's subscription to the event store. It folds every member
 * stream with the aggregate's own evolve (cached per stream by revision), maps each event to the
 * webhook kinds it means and queues one delivery per kind and subscribed endpoint of the tenant.
 * The deliveries are written in the runner's transaction together with its checkpoint, and each
 * carries a unique cause key, so a replayed event never queues a second delivery: creation is
 * exactly once, sending at least once.
 *
 * `balance.updated` fires once per append that moved a balance (a reservation confirmed together
 * with its redeem entry is one notice with the final figures, never a transient one).
 * It also keeps webhook.lot_watch, the dated lots the expiring-soon sweep looks at.
 */
export class WebhookEventsProjection implements Projection {
  readonly name = 'webhook.events';
  readonly filter = { streamPrefixes: ['member-', 'referral-'] };
  /** a rebuild re-derives the lot watch; deliveries stay (their cause keys stop a replay from resending) */
  readonly tables = ['webhook.lot_watch'];
  /** folded members by stream, bounded in bytes (LOYALTY_FOLD_CACHE_BYTES), least recently used first */
  private readonly cache = new StateCache<Folded>('webhook_member_fold', foldCacheBytes(), (f) => memberEvolver.sizeOf(f.state));

  constructor(
    private readonly store: EventStore,
    private readonly endpoints: EndpointsRepository,
    private readonly queue: DeliveryQueue,
    private readonly program: ProgramInfoSource,
    private readonly onQueued: () => void = () => undefined,
    private readonly snapshots: SnapshotStore | null = null,
  ) {}

  reset(): void { this.cache.clear(); this.batchSubscribers.clear(); }

  /** A tenant's active endpoints, read once per batch (the batch is one transaction, milliseconds long). */
  private readonly batchSubscribers = new Map<string, Promise<Awaited<ReturnType<EndpointsRepository['subscribers']>>>>();

  beforeBatch(): void { this.batchSubscribers.clear(); }

  private subscribersOf(tx: PoolClient, tenant: string) {
    let hit = this.batchSubscribers.get(tenant);
    if (!hit) {
      hit = this.endpoints.subscribers(tx, tenant);
      this.batchSubscribers.set(tenant, hit);
      hit.catch(() => this.batchSubscribers.delete(tenant));
    }
    return hit;
  }

  async apply(tx: PoolClient, event: RecordedEvent): Promise<void> {
    if (event.streamId.startsWith('referral-')) return this.applyReferral(tx, event);
    const ids = parseMemberStreamId(event.streamId);
    if (!ids) return;
    const f = await this.foldedBefore(event);
    const before = balancesOf(f.state);
    const tierBefore = f.state.tier;
    if (f.appendCommit !== event.position.commit) {
      f.appendCommit = event.position.commit;
      f.appendStart = before;
    }
    const e = { type: event.type, data: event.data } as MemberEvent;
    f.state = memberEvolver.evolve(f.state, e);
    f.revision = event.revision;
    this.remember(event.streamId, f);
    if (!f.state.exists) return;

    if (e.type === 'EntryRecorded' || e.type === 'EntryReleased') await this.watchLots(tx, ids.tenant, ids.memberId, f);

    const subscribers = (await this.subscribersOf(tx, ids.tenant))
      // an endpoint hears what happens after it was registered, not a backlog from before
      .filter((s) => s.created_at.getTime() <= event.createdAt.getTime());
    if (!subscribers.length) return;
    const program = await this.program(ids.tenant);
    const at = eventTime(e, event.createdAt.toISOString());
    const mapped: MappedEvent[] = mapMemberEvent(e, { tier: tierBefore }, f.state, at, program);
    const wantsBalance = subscribers.some((s) => s.events.includes('balance.updated'));
    if (wantsBalance && f.appendStart && !sameBalances(f.appendStart, balancesOf(f.state)) && (await this.lastOfAppend(event))) {
      mapped.push({ kind: 'balance.updated', key: 'balance.updated', data: memberSummary(f.state, at, program.expiry) });
    }
    let queued = 0;
    for (const m of mapped) {
      for (const s of subscribers) {
        if (!s.events.includes(m.kind)) continue;
        const added = await this.queue.enqueue(tx, {
          tenant: ids.tenant,
          endpointId: s.id,
          sourceKey: `${event.id}:${m.key}`,
          subject: ids.memberId,
          kind: m.kind,
          body: (id) => webhookBody(id, m.kind, at, ids.tenant, m.data),
        });
        if (added) queued++;
      }
    }
    if (queued) this.onQueued();
  }

  /**
   * `referral.qualified`: the referral service records the referral in its public shape on the
   * ReferralQualified event of the friend's referral stream; that is the payload.
   */
  private async applyReferral(tx: PoolClient, event: RecordedEvent): Promise<void> {
    if (event.type !== 'ReferralQualified') return;
    const ids = parseReferralStreamId(event.streamId);
    const data = event.data as { at?: string; referral?: { id?: string } };
    if (!ids || !data.referral?.id) return;
    const subscribers = (await this.subscribersOf(tx, ids.tenant))
      .filter((s) => s.events.includes('referral.qualified') && s.created_at.getTime() <= event.createdAt.getTime());
    const at = data.at ?? event.createdAt.toISOString();
    let queued = 0;
    for (const s of subscribers) {
      const added = await this.queue.enqueue(tx, {
        tenant: ids.tenant, endpointId: s.id, sourceKey: `${event.id}:referral.qualified`, subject: ids.friendId, kind: 'referral.qualified',
        body: (id) => webhookBody(id, 'referral.qualified', at, ids.tenant, data.referral),
      });
      if (added) queued++;
    }
    if (queued) this.onQueued();
  }

  /** The member's state just before `event`: the cached fold when it is in step, else a fold of the stream. */
  private async foldedBefore(event: RecordedEvent): Promise<Folded> {
    const cached = this.cache.get(event.streamId);
    if (cached && cached.revision === event.revision - 1n) return cached;
    const { state } = await foldStream<MemberAggregate, MemberEvent>(this.store, this.snapshots, event.streamId, memberEvolver, event.revision - 1n);
    // cold: the append this event belongs to counts from here (at worst one extra balance notice after a restart)
    return { revision: event.revision - 1n, state, appendCommit: null, appendStart: null, watched: true };
  }

  private remember(streamId: string, f: Folded): void {
    this.cache.set(streamId, f); // re-stored: its size is weighed again
  }

  /** Whether the next event of the stream belongs to another append (or there is none yet). */
  private async lastOfAppend(event: RecordedEvent): Promise<boolean> {
    const next = await this.store.readStream(event.streamId, event.revision + 1n, 1);
    return !next.length || next[0].position.commit !== event.position.commit;
  }

  /**
   * Mirrors the member's unspent dated lots into webhook.lot_watch: the lots the event changed
   * (`lots_changed`) when the rows are in step, all of them after a cold fold.
   */
  private async watchLots(tx: PoolClient, tenant: string, memberId: string, f: Folded): Promise<void> {
    if (f.synced) {
      const changed = [...new Map(f.state.lots_changed.filter((l) => l.expires_at).map((l) => [l.entry_id, l])).values()];
      if (!changed.length) return;
      const live = changed.filter((l) => l.remaining_cents > 0);
      const gone = changed.filter((l) => l.remaining_cents <= 0).map((l) => l.entry_id);
      f.watched ||= live.length > 0;
      await tx.query(
        `with gone as (delete from webhook.lot_watch w where w.tenant = $1 and w.member_id = $2 and w.lot_id = any($6::text[]))
         insert into webhook.lot_watch (tenant, member_id, lot_id, remaining_cents, expires_at)
         select $1, $2, lot_id, remaining_cents, expires_at from unnest($3::text[], $4::bigint[], $5::timestamptz[]) as t(lot_id, remaining_cents, expires_at)
         on conflict (tenant, member_id, lot_id) do update set remaining_cents = excluded.remaining_cents, expires_at = excluded.expires_at`,
        [tenant, memberId, live.map((l) => l.entry_id), live.map((l) => String(l.remaining_cents)), live.map((l) => l.expires_at), gone]);
      return;
    }
    f.synced = true;
    const lots = [...liveLots(f.state)].filter((l) => l.expires_at);
    if (!lots.length && !f.watched) return;
    f.watched = lots.length > 0;
    await tx.query(
      `with cur as (
         select * from unnest($3::text[], $4::bigint[], $5::timestamptz[]) as t(lot_id, remaining_cents, expires_at)
       ), gone as (
         delete from webhook.lot_watch w where w.tenant = $1 and w.member_id = $2
           and not exists (select 1 from cur where cur.lot_id = w.lot_id)
       )
       insert into webhook.lot_watch (tenant, member_id, lot_id, remaining_cents, expires_at)
       select $1, $2, lot_id, remaining_cents, expires_at from cur
       on conflict (tenant, member_id, lot_id) do update set remaining_cents = excluded.remaining_cents, expires_at = excluded.expires_at`,
      [tenant, memberId, lots.map((l) => l.entry_id), lots.map((l) => String(l.remaining_cents)), lots.map((l) => l.expires_at)]);
  }
}
