import { PoolClient } from 'pg';
import { type Balances, STREAM_PREFIX, parseMemberStreamId, parseReferralStreamId } from '@loyalty/contracts';
import { EventStore, Projection, RecordedEvent, SnapshotStore, StateCache, foldCacheBytes, foldStream, foldStreams } from '@loyalty/event-store';
import { MemberAggregate, MemberEvent, balancesOf, liveLots, memberEvolver } from '@loyalty/domain-member';
import { parseTenantKey } from '@loyalty/platform';
import { EndpointsRepository } from '../endpoints/endpoints.repository';
import { DeliveryQueue } from '../delivery/delivery.queue';
import { MappedEvent, ProgramInfo, eventTime, mapMemberEvent, memberSummary, sameBalances } from './payloads';

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
  readonly filter = { streamPrefixes: [STREAM_PREFIX.member, STREAM_PREFIX.referral] };
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

  /**
   * The batch's lot-watch changes per member (`tenant|member`), written once at the end of the
   * batch (only this projection writes webhook.lot_watch, so nothing reads it in between):
   * `full` replaces every row of the member (after a cold fold), `lots` holds each changed lot's
   * last figures, null for a lot that is spent or gone.
   */
  private lotChanges = new Map<string, { tenant: string; memberId: string; full: boolean; lots: Map<string, { remaining_cents: number; expires_at: string } | null> }>();

  /** this batch's events by `stream|revision`, and the newest commit in it (see lastOfAppend) */
  private batchEvents = new Map<string, RecordedEvent>();
  private batchLastCommit: bigint | null = null;

  /** Clears the batch's memos and folds the batch's cold members together (two round trips, not two per member). */
  async beforeBatch(_tx: PoolClient, events: readonly RecordedEvent[]): Promise<void> {
    this.batchSubscribers.clear();
    this.lotChanges.clear();
    this.batchEvents.clear();
    this.batchLastCommit = events.length ? events[events.length - 1].position.commit : null;
    const first = new Map<string, bigint>();
    for (const e of events) {
      this.batchEvents.set(`${e.streamId}|${e.revision}`, e);
      if (!e.streamId.startsWith(STREAM_PREFIX.member) || first.has(e.streamId)) continue;
      first.set(e.streamId, e.revision); // a stream's events come in revision order
    }
    const cold = [...first].filter(([id, rev]) => this.cache.peek(id)?.revision !== rev - 1n).map(([streamId, rev]) => ({ streamId, upTo: rev - 1n }));
    if (!cold.length) return;
    const folded = await foldStreams<MemberAggregate, MemberEvent>(this.store, this.snapshots, cold, memberEvolver);
    for (const { streamId, upTo } of cold) {
      const f = folded.get(streamId);
      // cold: the append this event belongs to counts from here (at worst one extra balance notice after a restart)
      if (f) this.cache.set(streamId, { revision: upTo, state: f.state, appendCommit: null, appendStart: null, watched: true });
    }
  }

  async afterBatch(tx: PoolClient): Promise<void> {
    const changes = [...this.lotChanges.values()];
    this.lotChanges.clear();
    if (!changes.length) return;
    const full = changes.filter((c) => c.full);
    if (full.length) {
      await tx.query(
        `delete from webhook.lot_watch w using unnest($1::text[], $2::text[]) as f(tenant, member_id)
         where w.tenant = f.tenant and w.member_id = f.member_id`,
        [full.map((c) => c.tenant), full.map((c) => c.memberId)]);
    }
    const gone: [string, string, string][] = [];
    const live: [string, string, string, string, string][] = [];
    for (const c of changes) {
      for (const [lot, v] of c.lots) {
        if (v) live.push([c.tenant, c.memberId, lot, String(v.remaining_cents), v.expires_at]);
        else if (!c.full) gone.push([c.tenant, c.memberId, lot]);
      }
    }
    if (gone.length) {
      await tx.query(
        `delete from webhook.lot_watch w using unnest($1::text[], $2::text[], $3::text[]) as g(tenant, member_id, lot_id)
         where w.tenant = g.tenant and w.member_id = g.member_id and w.lot_id = g.lot_id`,
        [gone.map((g) => g[0]), gone.map((g) => g[1]), gone.map((g) => g[2])]);
    }
    if (live.length) {
      await tx.query(
        `insert into webhook.lot_watch (tenant, member_id, lot_id, remaining_cents, expires_at)
         select * from unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::timestamptz[])
         on conflict (tenant, member_id, lot_id) do update set remaining_cents = excluded.remaining_cents, expires_at = excluded.expires_at`,
        [0, 1, 2, 3, 4].map((i) => live.map((l) => l[i])));
    }
  }

  private lotChangesOf(tenant: string, memberId: string) {
    const k = `${tenant}|${memberId}`;
    let c = this.lotChanges.get(k);
    if (!c) {
      c = { tenant, memberId, full: false, lots: new Map() };
      this.lotChanges.set(k, c);
    }
    return c;
  }

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
    if (event.streamId.startsWith(STREAM_PREFIX.referral)) return this.applyReferral(tx, event);
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
    // An append's events share one commit and are contiguous in the global order: when the batch
    // goes on past this event's commit, the whole append is in the batch and needs no read.
    const inBatch = this.batchEvents.get(`${event.streamId}|${event.revision + 1n}`);
    if (inBatch) return inBatch.position.commit !== event.position.commit;
    if (this.batchLastCommit !== null && this.batchLastCommit > event.position.commit) return true;
    const next = await this.store.readStream(event.streamId, event.revision + 1n, 1);
    return !next.length || next[0].position.commit !== event.position.commit;
  }

  /**
   * Mirrors the member's unspent dated lots into webhook.lot_watch: the lots the event changed
   * (`lots_changed`) when the rows are in step, all of them after a cold fold.
   */
  private async watchLots(_tx: PoolClient, tenant: string, memberId: string, f: Folded): Promise<void> {
    if (f.synced) {
      const changed = f.state.lots_changed.filter((l) => l.expires_at);
      if (!changed.length) return;
      const c = this.lotChangesOf(tenant, memberId);
      for (const l of changed) {
        c.lots.set(l.entry_id, l.remaining_cents > 0 ? { remaining_cents: l.remaining_cents, expires_at: l.expires_at! } : null);
        if (l.remaining_cents > 0) f.watched = true;
      }
      return;
    }
    f.synced = true;
    const lots = [...liveLots(f.state)].filter((l) => l.expires_at);
    if (!lots.length && !f.watched) return;
    f.watched = lots.length > 0;
    // a cold fold: the member's rows become exactly its live dated lots
    const c = this.lotChangesOf(tenant, memberId);
    c.full = true;
    c.lots = new Map(lots.map((l) => [l.entry_id, { remaining_cents: l.remaining_cents, expires_at: l.expires_at! }]));
  }
}
