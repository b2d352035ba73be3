import { PoolClient } from 'pg';
import { type Balances, STREAM_PREFIX, parseMemberStreamId, parseReferralStreamId } from '@loyalty/contracts';
import { LRUCache } from 'lru-cache';
import { EventStore, Projection, RecordedEvent, SnapshotStore, StreamFold, foldCacheBytes } from '@loyalty/event-store';
import { MEMBER_FOLD, MemberAggregate, MemberEvent, MemberHead, balancesOf, liveLots } from '@loyalty/domain-member';
import { parseTenantKey } from '@loyalty/platform';
import { EndpointsRepository } from '../endpoints/endpoints.repository';
import { DeliveryQueue } from '../delivery/delivery.queue';
import { MappedEvent, ProgramInfo, eventTime, mapMemberEvent, memberSummary, sameBalances } from './payloads';

/** What the projection keeps per member beside the shared fold of its state. */
interface MemberMark {
  /** the append (transaction) the last event belonged to, and the balances before it began */
  appendCommit: bigint | null;
  appendStart: Balances | null;
  /** whether webhook.lot_watch may hold rows for this member */
  watched: boolean;
  /** whether webhook.lot_watch mirrors the member's lots (then each event writes only the lots it changed) */
  synced: boolean;
}

/** Members whose marks are kept (least recently seen first out): a forgotten member counts as cold (its lot rows are rewritten once). */
const MARKS_KEPT = 100_000;

export type ProgramInfoSource = (tenant: string) => Promise<ProgramInfo>;

/** The body every delivery carries (decisions §8); its `id` is the delivery id (= `webhook-id`). */
export const webhookBody = (deliveryId: string, type: string, createdAt: string, tenant: string, data: unknown): string =>
  JSON.stringify({ id: deliveryId, type, created_at: createdAt, livemode: parseTenantKey(tenant).mode === 'live', data });

/**
 * webhook.events: the webhook service's subscription to the event store. It folds every member
 * stream with the aggregate's own evolve (a StreamFold cached per stream by revision: the process's
 * shared member fold when the ledger's read models run in the same process and runner, so each
 * event is evolved once for both), maps each event to the
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
  /** the members' states (see the class comment) */
  private readonly fold: StreamFold<MemberAggregate, MemberEvent, MemberHead>;
  /** per member stream: what the projection keeps beside the fold */
  private readonly marks = new LRUCache<string, MemberMark>({ max: MARKS_KEPT });

  /** `fold`: the process's shared member fold; without it the projection folds for itself (bounded by LOYALTY_FOLD_CACHE_BYTES). */
  constructor(
    private readonly store: EventStore,
    private readonly endpoints: EndpointsRepository,
    private readonly queue: DeliveryQueue,
    private readonly program: ProgramInfoSource,
    private readonly onQueued: () => void = () => undefined,
    snapshots: SnapshotStore | null = null,
    fold?: StreamFold<MemberAggregate, MemberEvent, MemberHead>,
  ) {
    this.fold = fold ?? new StreamFold(store, MEMBER_FOLD.prefix, MEMBER_FOLD.evolver, MEMBER_FOLD.head, snapshots, 'webhook_member_fold', foldCacheBytes());
  }

  reset(): void { this.fold.reset(); this.marks.clear(); this.batchSubscribers.clear(); }

  /**
   * A rolled-back batch: its lot rows were never written, so no member's rows are known to mirror
   * its lots any more (each member's next event rewrites them, as after a restart). The batch's own
   * memos are cleared by the next beforeBatch anyway.
   */
  discard(): void { this.marks.clear(); }

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
    for (const e of events) this.batchEvents.set(`${e.streamId}|${e.revision}`, e);
    await this.fold.warm(events);
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
    const { state, before: head } = await this.fold.advance(event);
    // a member not seen before (or forgotten): the append this event belongs to counts from here (at
    // worst one extra balance notice after a restart), and its lot rows are rewritten once
    let f = this.marks.get(event.streamId);
    if (!f) {
      f = { appendCommit: null, appendStart: null, watched: true, synced: false };
      this.marks.set(event.streamId, f);
    }
    const before = balancesOf(head);
    const tierBefore = head.tier;
    if (f.appendCommit !== event.position.commit) {
      f.appendCommit = event.position.commit;
      f.appendStart = before;
    }
    const e = { type: event.type, data: event.data } as MemberEvent;
    if (!state.exists) return;

    if (e.type === 'EntryRecorded' || e.type === 'EntryReleased') this.watchLots(ids.tenant, ids.memberId, f, state);

    const subscribers = (await this.subscribersOf(tx, ids.tenant))
      // an endpoint hears what happens after it was registered, not a backlog from before
      .filter((s) => s.created_at.getTime() <= event.createdAt.getTime());
    if (!subscribers.length) return;
    const program = await this.program(ids.tenant);
    const at = eventTime(e, event.createdAt.toISOString());
    const mapped: MappedEvent[] = mapMemberEvent(e, { tier: tierBefore }, state, at, program);
    const wantsBalance = subscribers.some((s) => s.events.includes('balance.updated'));
    if (wantsBalance && f.appendStart && !sameBalances(f.appendStart, balancesOf(state)) && (await this.lastOfAppend(event))) {
      mapped.push({ kind: 'balance.updated', key: 'balance.updated', data: memberSummary(state, at, program.expiry) });
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
  private watchLots(tenant: string, memberId: string, f: MemberMark, state: MemberAggregate): void {
    if (f.synced) {
      const changed = state.lots_changed.filter((l) => l.expires_at);
      if (!changed.length) return;
      const c = this.lotChangesOf(tenant, memberId);
      for (const l of changed) {
        c.lots.set(l.entry_id, l.remaining_cents > 0 ? { remaining_cents: l.remaining_cents, expires_at: l.expires_at! } : null);
        if (l.remaining_cents > 0) f.watched = true;
      }
      return;
    }
    f.synced = true;
    const lots = [...liveLots(state)].filter((l) => l.expires_at);
    if (!lots.length && !f.watched) return;
    f.watched = lots.length > 0;
    // a cold fold: the member's rows become exactly its live dated lots
    const c = this.lotChangesOf(tenant, memberId);
    c.full = true;
    c.lots = new Map(lots.map((l) => [l.entry_id, { remaining_cents: l.remaining_cents, expires_at: l.expires_at! }]));
  }
}
