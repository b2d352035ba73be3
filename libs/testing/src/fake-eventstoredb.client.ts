import { Readable } from 'node:stream';
import {
  ANY, AppendExpectedRevision, AppendResult, BACKWARDS, END, EventData, EventStoreDBClient, Filter, NO_STREAM, Position, START,
  STREAM_NAME, StreamNotFoundError, WrongExpectedVersionError,
} from '@eventstore/db-client';

/**
 * An in-memory stand-in for the parts of `@eventstore/db-client`'s client that the EventStoreDB
 * adapter uses, with the server behaviour the adapter must cope with: $all reads that include their
 * start position, system events in $all, no position for idempotent appends, a write position that is
 * not the last event's, event-id idempotence, StreamNotFoundError and WrongExpectedVersionError.
 * It is NOT a server: the real contract run needs EVENTSTORE_URL.
 */
interface Rec {
  streamId: string; id: string; revision: bigint; type: string; created: Date; isJson: true;
  data: unknown; metadata: unknown; position: Position;
}

const cmp = (a: Position, b: Position): number =>
  a.commit < b.commit ? -1 : a.commit > b.commit ? 1 : a.prepare < b.prepare ? -1 : a.prepare > b.prepare ? 1 : 0;

const matches = (r: Rec, f?: Filter): boolean => {
  if (!f) return true;
  const subject = f.filterOn === STREAM_NAME ? r.streamId : r.type;
  return 'prefixes' in f ? f.prefixes.some((p) => subject.startsWith(p)) : new RegExp(f.regex).test(subject);
};

type FakeSubscription = Readable & { unsubscribe(): Promise<void> };

export class FakeEventStoreDBClient {
  private readonly log: Rec[] = [];
  private readonly streams = new Map<string, Rec[]>();
  private readonly subscribers = new Set<{ sub: FakeSubscription; after: Position; filter?: Filter }>();
  private offset = 1000n;
  private appends = 0;

  /** The adapter's constructor wants the real client type. */
  asClient(): EventStoreDBClient {
    return this as unknown as EventStoreDBClient;
  }

  async appendToStream(streamName: string, events: EventData | EventData[], options: { expectedRevision?: AppendExpectedRevision } = {}): Promise<AppendResult> {
    await Promise.resolve();
    const list = Array.isArray(events) ? events : [events];
    const stream = this.streams.get(streamName) ?? [];
    const current = BigInt(stream.length) - 1n;
    const expected = options.expectedRevision ?? ANY;
    const sameAt = (from: bigint): boolean =>
      from >= 0n && from + BigInt(list.length) <= BigInt(stream.length) && list.every((e, i) => stream[Number(from) + i].id === e.id);
    if (expected === ANY) {
      const at = stream.findIndex((r) => r.id === list[0].id);
      if (at >= 0 && sameAt(BigInt(at))) return { success: true, nextExpectedRevision: BigInt(at + list.length - 1), position: undefined };
    } else if (expected !== 'stream_exists') {
      const exp = expected === NO_STREAM ? -1n : expected;
      if (exp !== current) {
        if (exp < current && sameAt(exp + 1n)) return { success: true, nextExpectedRevision: exp + BigInt(list.length), position: undefined };
        throw new WrongExpectedVersionError(undefined as never, {
          streamName, current: current < 0n ? NO_STREAM : current, expected,
        } as never);
      }
    }
    const commit = this.offset;
    for (const e of list) {
      this.offset += 97n;
      const rec: Rec = {
        streamId: streamName, id: e.id, revision: BigInt(stream.length), type: e.type, created: new Date(), isJson: true,
        data: JSON.parse(JSON.stringify(e.data)), metadata: e.metadata ? JSON.parse(JSON.stringify(e.metadata)) : undefined,
        position: { commit, prepare: this.offset },
      };
      stream.push(rec);
      this.push(rec);
    }
    this.streams.set(streamName, stream);
    if (++this.appends % 3 === 0) this.systemEvent();
    // like the server: the write's position, not the last event's
    return { success: true, nextExpectedRevision: BigInt(stream.length) - 1n, position: { commit, prepare: commit } };
  }

  readStream(streamName: string, options: { fromRevision?: bigint | typeof START; maxCount?: number | bigint } = {}): AsyncIterable<{ event: Rec }> {
    const stream = this.streams.get(streamName);
    const from = typeof options.fromRevision === 'bigint' ? Number(options.fromRevision) : 0;
    const max = Number(options.maxCount ?? Number.MAX_SAFE_INTEGER);
    return (async function* () {
      await Promise.resolve();
      if (!stream) throw new StreamNotFoundError(undefined, streamName);
      for (const r of stream.slice(from, from + max)) yield { event: r };
    })();
  }

  readAll(options: { fromPosition?: Position | typeof START | typeof END; maxCount?: number | bigint; direction?: string } = {}): AsyncIterable<{ event: Rec }> {
    const max = Number(options.maxCount ?? Number.MAX_SAFE_INTEGER);
    const from = options.fromPosition ?? START;
    let picked: Rec[];
    if (options.direction === BACKWARDS) {
      const before = from === END || from === START ? this.log : this.log.filter((r) => cmp(r.position, from as Position) < 0);
      picked = before.slice(-max).reverse();
    } else {
      // inclusive of the start position, as the server is
      picked = (from === START ? this.log : from === END ? [] : this.log.filter((r) => cmp(r.position, from as Position) >= 0)).slice(0, max);
    }
    return (async function* () {
      for (const r of picked) { await Promise.resolve(); yield { event: r }; }
    })();
  }

  subscribeToAll(options: { fromPosition?: Position | typeof START | typeof END; filter?: Filter } = {}): FakeSubscription {
    const sub = new Readable({ objectMode: true, read() { /* pushed by appends */ } }) as FakeSubscription;
    const from = options.fromPosition ?? START;
    const after: Position = from === START ? { commit: -1n, prepare: -1n } : from === END ? this.head() : from;
    const entry = { sub, after, filter: options.filter };
    sub.unsubscribe = async () => { this.subscribers.delete(entry); sub.destroy(); };
    // catch-up (exclusive of the start position), then live
    for (const r of this.log) if (cmp(r.position, after) > 0 && matches(r, options.filter)) sub.push({ event: r });
    this.subscribers.add(entry);
    return sub;
  }

  /** Test hook: the server drops every subscription (e.g. a leader change). */
  dropSubscriptions(): void {
    for (const s of [...this.subscribers]) {
      this.subscribers.delete(s);
      s.sub.emit('error', new Error('subscription dropped by server'));
    }
  }

  async dispose(): Promise<void> {
    for (const s of [...this.subscribers]) await s.sub.unsubscribe();
  }

  private head(): Position {
    return this.log.length ? this.log[this.log.length - 1].position : { commit: -1n, prepare: -1n };
  }

  private systemEvent(): void {
    this.offset += 97n;
    const rec: Rec = {
      streamId: '$stats-127.0.0.1:2113', id: `00000000-0000-4000-8000-${this.offset.toString().padStart(12, '0')}`, revision: 0n,
      type: '$statsCollected', created: new Date(), isJson: true, data: {}, metadata: undefined, position: { commit: this.offset, prepare: this.offset },
    };
    this.push(rec);
  }

  private push(rec: Rec): void {
    this.log.push(rec);
    for (const s of this.subscribers) if (matches(rec, s.filter)) s.sub.push({ event: rec });
  }
}
