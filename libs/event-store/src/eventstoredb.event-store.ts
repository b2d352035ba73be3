import {
  ANY, AllStreamRecordedEvent, AllStreamResolvedEvent, AllStreamSubscription, BACKWARDS, END, EventStoreDBClient, FORWARDS,
  Filter, NO_STREAM, START as ESDB_START, StreamNotFoundError, WrongExpectedVersionError, eventTypeFilter, excludeSystemEvents,
  jsonEvent, streamNameFilter,
} from '@eventstore/db-client';
import {
  AppendOptions, AppendResult, EventMetadata, EventStore, ExpectedRevision, NewEvent, Position, RecordedEvent, START, SubscribeOptions,
  Subscription, SubscriptionFilter, WrongExpectedRevisionError, comparePositions, matchesFilter,
} from './event-store.port';

type AnyRecorded = {
  id: string; streamId: string; revision: bigint; type: string; created: Date; isJson: boolean;
  data: unknown; metadata: unknown; position?: Position;
};

const isStart = (p: Position): boolean => p.commit === START.commit && p.prepare === START.prepare;
/** `$`-prefixed streams and types are EventStoreDB's own (stats, metadata, links, projections). */
const isSystem = (e: { streamId: string; type: string }): boolean => e.streamId.startsWith('$') || e.type.startsWith('$');
const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const toRecorded = (e: AnyRecorded, position: Position): RecordedEvent => ({
  id: e.id,
  streamId: e.streamId,
  revision: e.revision,
  type: e.type,
  data: e.isJson ? e.data : Buffer.from(e.data as Uint8Array).toString('utf8'),
  metadata: (e.metadata && typeof e.metadata === 'object' && !(e.metadata instanceof Uint8Array) ? e.metadata : {}) as EventMetadata,
  position,
  createdAt: e.created,
});

/** The narrowest filter the server can apply; matchesFilter applies the exact one client-side. */
const serverFilter = (f?: SubscriptionFilter): Filter => {
  if (f?.streamPrefixes?.length) return streamNameFilter({ prefixes: f.streamPrefixes });
  if (f?.eventTypes?.length) return eventTypeFilter({ regex: `^(${f.eventTypes.map(escapeRegex).join('|')})$` });
  return excludeSystemEvents();
};

export interface EventStoreDBEventStoreOptions {
  /** Pause before a failed batch is redelivered or a dropped subscription is reopened. */
  retryMs?: number;
}

/**
 * EventStoreDB adapter (production option, EVENT_STORE=eventstoredb). The server orders $all with one
 * writer, so a position is final once an append returns: no watermark is needed. Idempotent appends rely
 * on the server's event-id idempotence (guaranteed for an exact or no_stream expected revision, best
 * effort for `any`).
 */
export class EventStoreDBEventStore implements EventStore {
  private readonly retryMs: number;

  constructor(private readonly client: EventStoreDBClient, options: EventStoreDBEventStoreOptions = {}) {
    this.retryMs = options.retryMs ?? 500;
  }

  /** e.g. `esdb://localhost:2113?tls=false`. */
  static fromConnectionString(url: string, options?: EventStoreDBEventStoreOptions): EventStoreDBEventStore {
    return new EventStoreDBEventStore(EventStoreDBClient.connectionString(url), options);
  }

  /** Claims (AppendOptions.claim) need a unique index beside the events: the PostgreSQL adapter's. */
  readonly claims = false;

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision, options?: AppendOptions): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event');
    if (options?.claim) throw new Error('the EventStoreDB adapter takes no claims (AppendOptions.claim)');
    const data = events.map((e) =>
      jsonEvent({ id: e.id, type: e.type, data: e.data as Record<string, unknown>, metadata: (e.metadata ?? {}) as Record<string, unknown> }));
    let result;
    try {
      result = await this.client.appendToStream(streamId, data, {
        expectedRevision: expected === 'no_stream' ? NO_STREAM : expected === 'any' ? ANY : expected,
      });
    } catch (e) {
      if (e instanceof WrongExpectedVersionError) {
        const actual = typeof e.actualVersion === 'bigint' ? e.actualVersion : 'no_stream';
        throw new WrongExpectedRevisionError(streamId, expected, actual);
      }
      throw e;
    }
    // The port's position is the $all position of the append's last event, where a subscriber finds it
    // (what a read-your-writes wait targets). Read it back: the server reports no position for an
    // idempotent replay, and for a new write reports the write's log position, not necessarily the event's.
    const [last] = await this.readEvents(streamId, { fromRevision: result.nextExpectedRevision, maxCount: 1 });
    const position = last?.position ?? result.position;
    if (!position) throw new Error(`EventStoreDB returned no position for ${streamId}@${result.nextExpectedRevision} (server older than 22.6?)`);
    return { nextRevision: result.nextExpectedRevision, position };
  }

  async readStream(streamId: string, fromRevision = 0n, maxCount = 1_000_000): Promise<RecordedEvent[]> {
    const events = await this.readEvents(streamId, { fromRevision, maxCount });
    return events.map((e) => toRecorded(e, e.position ?? START));
  }

  private async readEvents(streamId: string, options: { fromRevision: bigint; maxCount: number }): Promise<AnyRecorded[]> {
    const out: AnyRecorded[] = [];
    try {
      for await (const r of this.client.readStream(streamId, { ...options, direction: FORWARDS })) {
        if (r.event) out.push(r.event as unknown as AnyRecorded);
      }
    } catch (e) {
      if (e instanceof StreamNotFoundError) return [];
      throw e;
    }
    return out;
  }

  async readAll(after: Position, maxCount: number, filter?: SubscriptionFilter): Promise<RecordedEvent[]> {
    // $all reads are inclusive of their start and cannot be filtered server-side by this client, so page
    // forward and keep what is after `after`, not the server's own, and matches the filter.
    const out: RecordedEvent[] = [];
    const pageSize = Math.max(100, Math.min(maxCount * 2, 4096));
    let from: Position = after;
    while (out.length < maxCount) {
      let n = 0;
      const page = this.client.readAll({ fromPosition: isStart(from) ? ESDB_START : from, maxCount: pageSize, direction: FORWARDS });
      for await (const r of page) {
        n++;
        const e = r.event;
        if (!e) continue;
        if (comparePositions(e.position, from) <= 0) continue;
        from = e.position;
        if (isSystem(e) || !matchesFilter(e, filter)) continue;
        out.push(toRecorded(e as AnyRecorded, e.position));
        if (out.length === maxCount) break;
      }
      if (out.length === maxCount || n < pageSize) break;
    }
    return out;
  }

  async headPosition(): Promise<Position> {
    let from: typeof END | Position = END;
    for (;;) {
      let n = 0;
      let last: AllStreamRecordedEvent | undefined;
      for await (const r of this.client.readAll({ fromPosition: from, maxCount: 100, direction: BACKWARDS })) {
        n++;
        const e = r.event;
        if (!e) continue;
        last = e;
        if (!isSystem(e)) return e.position;
      }
      if (n < 100 || !last) return START;
      from = last.position;
    }
  }

  subscribe(options: SubscribeOptions): Subscription {
    const batchSize = options.batchSize ?? 500;
    let delivered: Position = options.from; // last position handed to onEvents successfully
    let queued: Position = options.from; // last position put in the queue
    let queue: RecordedEvent[] = [];
    // in an object, so TypeScript does not narrow it across the callbacks that replace it
    const live: { sub: AllStreamSubscription | null } = { sub: null };
    let failure: unknown = null;
    let stopped = false;
    let wake: (() => void) | null = null;
    const poke = () => wake?.();
    const pause = (ms: number) => new Promise<void>((r) => { const t = setTimeout(r, ms); wake = () => { clearTimeout(t); r(); }; });

    const open = (): void => {
      queue = [];
      queued = delivered;
      failure = null;
      const sub = this.client.subscribeToAll({
        fromPosition: isStart(delivered) ? ESDB_START : delivered,
        filter: serverFilter(options.filter),
      });
      live.sub = sub;
      sub.on('data', (r: AllStreamResolvedEvent) => {
        const e = r.event;
        if (live.sub !== sub || !e || comparePositions(e.position, queued) <= 0) return;
        queued = e.position;
        if (isSystem(e) || !matchesFilter(e, options.filter)) return;
        queue.push(toRecorded(e as AnyRecorded, e.position));
        if (queue.length >= batchSize * 2) sub.pause(); // backpressure while the handler catches up
        poke();
      });
      sub.on('error', (err: unknown) => {
        if (live.sub !== sub || stopped) return;
        failure = err;
        poke();
      });
      sub.on('end', () => {
        if (live.sub !== sub || stopped) return;
        failure ??= new Error('EventStoreDB subscription ended');
        poke();
      });
    };

    const loop = (async () => {
      open();
      while (!stopped) {
        if (failure) {
          options.onError?.(failure);
          const dead = live.sub;
          live.sub = null;
          await dead?.unsubscribe().catch(() => undefined);
          await pause(this.retryMs);
          wake = null;
          if (!stopped) open(); // resume after the last delivered event
          continue;
        }
        if (!queue.length) {
          await new Promise<void>((r) => { wake = r; });
          wake = null;
          continue;
        }
        const batch = queue.slice(0, batchSize);
        try {
          await options.onEvents(batch);
        } catch (e) {
          options.onError?.(e);
          await pause(this.retryMs); // at-least-once: the same batch again
          wake = null;
          continue;
        }
        queue.splice(0, batch.length);
        delivered = batch[batch.length - 1].position;
        if (queue.length < batchSize && live.sub?.isPaused()) live.sub.resume();
      }
    })();

    return {
      stop: async () => {
        stopped = true;
        poke();
        await loop;
        const sub = live.sub;
        live.sub = null;
        await sub?.unsubscribe().catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    await this.client.dispose();
  }
}
