import './kafkajs-idle-fix';
import './kafkajs-commit-interval';
import { INestMicroservice, Logger } from '@nestjs/common';
import { ClientKafka, ConsumerDeserializer, IncomingRequest, KafkaContext, KafkaOptions, MessageHandler, ServerKafka, Transport } from '@nestjs/microservices';
import type { ProducerBatch, ProducerRecord, RecordMetadata } from '@nestjs/microservices/external/kafka.interface';
import { Admin, Consumer, EachMessagePayload, Kafka, KafkaJSError, LogEntry, logLevel, Partitioners } from 'kafkajs';
import { lastValueFrom, Subject, takeUntil, timeout, TimeoutError } from 'rxjs';
import { REQUEST_ID_HEADER, SpanKind, asyncRequestContext, carrierFor, carrierFrom, currentRequestId, inSpan, problem, ProblemError, withCarrier } from '@loyalty/platform';
import { busAttributes, observedRequest } from './bus-telemetry';
import { CommandBus, handleAsPartOf, handlerFailure, Reply, unwrap } from './command-bus.port';

/**
 * Kafka transport (distributed mode): services host their @MessagePattern handlers in a Nest
 * microservice built from `kafkaServerOptions`; the gateway (or any caller) talks to them through
 * `KafkaBus`. Requests go on a few shared request topics per service (`ownerTopicOf`, e.g.
 * `ledger.commands`), their pattern in a `loyalty-pattern` header; partition key = member or
 * order; each caller gets its replies on a topic of its own (`<caller>.replies`, see KafkaBus).
 *
 * Wire format: the request value is `JSON.stringify(payload ?? null)` and the server parses it
 * back with `JsonKafkaRequestDeserializer`, so a handler receives exactly what the in-process
 * transport hands it (Nest's default Kafka parser only JSON-parses values that start with `{` or
 * `[`, turns `42` into `'42'` and hands the raw Kafka message to the handler when the value is null).
 */

export const DEFAULT_KAFKA_PARTITIONS = 4;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** How often a caller's reply consumer commits its offsets. */
export const REPLY_COMMIT_INTERVAL_MS = 1_000;
/** retention.ms of the request and reply topics this transport creates (one day). */
export const REQUEST_RETENTION_MS = 86_400_000;

/** Consumer settings shared by services and KafkaBus' reply consumer: react fast, notice dead members soon. */
const lowLatencyConsumer = {
  allowAutoTopicCreation: true,
  sessionTimeout: 10_000,
  rebalanceTimeout: 20_000,
  heartbeatInterval: 1_000,
  // Fetches return as soon as one byte is available (a request never waits for it); this only
  // bounds an idle long-poll, which also bounds how late a consumer sees an assignment change or a
  // stop request. 50 ms cost an idle six-process topology about 0.9 of a core (consumers and broker).
  maxWaitTimeInMs: 500,
} as const;

/** LOYALTY_KAFKA_LOG=info|debug shows kafkajs' group joins, restarts and requests (diagnosis); default warn. */
const kafkaLogLevel = (): logLevel => ({ nothing: logLevel.NOTHING, error: logLevel.ERROR, info: logLevel.INFO, debug: logLevel.DEBUG })[process.env.LOYALTY_KAFKA_LOG ?? ''] ?? logLevel.WARN;

const clientConfig = (clientId: string, brokers: string[]) => ({
  clientId,
  brokers,
  logLevel: kafkaLogLevel(),
  connectionTimeout: 3_000,
  // ~10 s of retries: a broker that has just created many topics answers "not the leader for that
  // topic-partition" for a few seconds after their metadata names a leader (seen in CI: the first
  // request of a fresh topology failed 503 after 5 retries, 1.4 s)
  retry: { initialRetryTime: 100, maxRetryTime: 3_000, retries: 10 },
});

/** kafkajs logs through Nest's logger (as ClientKafka and ServerKafka do), not straight to the console. */
const nestLogCreator = (context: string) => {
  const logger = new Logger(context);
  return () => ({ level, log: { message, ...rest } }: LogEntry) => {
    const line = `${message} ${JSON.stringify(rest)}`;
    if (level <= logLevel.ERROR) logger.error(line);
    else if (level === logLevel.WARN) logger.warn(line);
    else logger.debug(line);
  };
};

const requestLog = new Logger('KafkaServer');

/** The Java client's murmur2 partitioner: the same key lands on the same partition as from any Kafka client. */
const producerConfig = { createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: true };

/** The header that names a request's pattern: several patterns share one request topic. */
export const PATTERN_HEADER = 'loyalty-pattern';

/** The request topic a pattern's requests go on. Every caller and server of a topology must use the same. */
export type TopicOf = (pattern: string) => string;

/**
 * One request topic per owner and kind: `<owner>.<kind>`, the owner being the pattern's first
 * segment (`ledger.member.enrol` → `ledger.commands`). Not a topic per pattern: a consumer's fetch
 * names every partition of every topic it reads, so the ledger's 27 patterns of 16 partitions
 * each made every fetch (one per message that arrives) list 432 partitions, for the consumer to
 * encode and the broker to walk (kafkajs was 23–29 % of the ledger's busy time while the
 * distributed benchmark enrolled its members, the broker 10–25 % of the topology's CPU).
 */
export const ownerTopicOf = (pattern: string, kind = 'commands'): string => {
  const dot = pattern.indexOf('.');
  return `${dot > 0 ? pattern.slice(0, dot) : pattern}.${kind}`;
};

/** The request topics of these patterns (`ownerTopicOf` unless told otherwise). */
export const kafkaTopicsFor = (patterns: readonly string[], topicOf: TopicOf = ownerTopicOf): string[] => [...new Set(patterns.map((p) => topicOf(p)))];

/** The topic a caller's replies come on, from every service it calls: `<caller>.replies` (KafkaBus' `replyTopic`). */
export const replyTopicOf = (caller: string): string => `${caller}.replies`;

/** Parses every request value as JSON (falls back to the raw string for non-JSON producers). */
export class JsonKafkaRequestDeserializer implements ConsumerDeserializer {
  deserialize(message: { value?: unknown } | null, options?: Record<string, unknown>): IncomingRequest {
    return { pattern: options?.channel, data: decodeJson(message?.value) } as IncomingRequest;
  }
}

const decodeJson = (value: unknown): unknown => {
  if (value === null || value === undefined) return null;
  const text = Buffer.isBuffer(value) ? value.toString('utf8') : typeof value === 'string' ? value : null;
  if (text === null) return value; // already decoded by someone else
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

export interface KafkaServerTuning extends KafkaTopicSettings {
  /** Partitions processed at once; one partition (= one member or order) is always sequential. Default 8. */
  partitionsConsumedConcurrently?: number;
  /** The request topic of each pattern (default `ownerTopicOf`); callers must use the same. */
  topicOf?: TopicOf;
  /**
   * Also serve the topics named after each pattern, as callers before the shared request topics
   * sent them (a rolling upgrade: old gateways still send there until they are replaced).
   */
  legacyTopics?: boolean;
}

type KafkaServerConfig = Required<KafkaOptions>['options'];

/** Backoff of the recovery loops below: 0.5 s, 1 s, 2 s … at most 10 s apart. */
const recoveryDelayMs = (attempt: number): number => Math.min(10_000, 500 * 2 ** Math.min(attempt, 5));

/** Resolves with what `p` resolves with, or with `fallback` after `ms` (a stuck disconnect must not stall a recovery). */
const within = <T>(p: Promise<T>, ms: number, fallback: T): Promise<T> =>
  new Promise<T>((resolve) => {
    const timer = setTimeout(() => resolve(fallback), ms);
    p.then((v) => { clearTimeout(timer); resolve(v); }, () => { clearTimeout(timer); resolve(fallback); });
  });

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** The payload of kafkajs' consumer CRASH event: `restart` false means kafkajs gave up on the consumer for good. */
interface CrashEvent { payload: { error: Error; groupId: string; restart: boolean } }

/**
 * ServerKafka that creates the topics of its handlers (and the reply topics of its request
 * handlers) before subscribing, never dies of a reply it cannot send, and starts its consumer
 * again when kafkajs gives up on it.
 *
 * - Plain ServerKafka relies on auto-creation, and kafkajs' subscribe to a topic that does not
 *   exist yet fails ("This server does not host this topic-partition"), so a service started
 *   before its callers would not start at all.
 * - Nest sends a reply from a fire-and-forget `process.nextTick(async …)`: when the producer gives
 *   up (the broker has been away for longer than its retries, ~20 s), the rejection is unhandled,
 *   and an unhandled rejection ends a Node process. A service that was answering a request when
 *   the broker was killed exited ~20 s later and never came back (issue 8: the fault test's
 *   "no reply to ingest.events.submit within 20000 ms" for ten minutes was a dead ingest). A reply
 *   that cannot be sent is now dropped with a warning: the caller times out and retries (every
 *   request is idempotent).
 * - kafkajs restarts a crashed consumer only when the crash's cause is retriable; otherwise it
 *   emits CRASH with `restart: false` and the consumer stays stopped while the process lives on.
 *   Then this server disconnects and listens again (with backoff, for as long as it takes).
 */
export class TopicCreatingServerKafka extends ServerKafka {
  private closing = false;
  private recovering: Promise<void> | null = null;

  constructor(
    options: KafkaServerConfig,
    private readonly topicBrokers: string[],
    private readonly topicSettings: KafkaTopicSettings = {},
    private readonly topicOf: TopicOf = ownerTopicOf,
    private readonly legacyTopics = false,
  ) {
    super(options);
  }

  /** Subscribes to the request topics of its handlers' patterns (created first), not to the patterns themselves as Nest does. */
  override async bindEvents(consumer: Consumer): Promise<void> {
    const patterns = [...this.messageHandlers.keys()];
    // request topics only: replies go to the topic each request names (the caller creates it)
    const topics = [...new Set([...kafkaTopicsFor(patterns, this.topicOf), ...(this.legacyTopics ? patterns : [])])];
    // a slow fresh broker may take minutes to serve its new topics: a service waits (readyz 503), never exits
    await ensureKafkaTopics(this.topicBrokers, topics, this.topicSettings, Number.POSITIVE_INFINITY);
    if (topics.length > 0) await consumer.subscribe({ ...(this.options.subscribe ?? {}), topics });
    await consumer.run({ ...(this.options.run ?? {}), eachMessage: this.getMessageHandler() });
  }

  /**
   * Each request is handled by its pattern's handler, named by its `loyalty-pattern` header (a
   * request without one, on a legacy per-pattern topic, by its topic). It runs inside the trace
   * and request its headers carry (issue 11): a consumer span, child of the caller's producer
   * span, and log lines with the gateway's request id.
   */
  override async handleMessage(payload: EachMessagePayload): Promise<unknown> {
    const headers = payload.message.headers as Record<string, unknown> | undefined;
    const named = headers?.[PATTERN_HEADER];
    const pattern = named === undefined ? payload.topic : String(Array.isArray(named) ? named[0] : named);
    const carrier = carrierFrom(headers);
    return withCarrier(carrier, () => inSpan(`${pattern} process`, SpanKind.CONSUMER, busAttributes('kafka', pattern, 'process'), () => {
      requestLog.debug(`handling ${pattern} (${payload.topic}, partition ${payload.partition}, offset ${payload.message.offset})`);
      // Nest takes the pattern from the topic it is handed
      return super.handleMessage(pattern === payload.topic ? payload : { ...payload, topic: pattern });
    }));
  }

  /** Handlers wrapped for the edges mode, by the handler Nest registered. */
  private readonly scoped = new WeakMap<MessageHandler, MessageHandler>();

  /**
   * Each handler is called as part of the request its message's headers name. With the request
   * context in its edges mode (request-context) the scope handleMessage opened ended at Nest's first
   * await, before it calls the handler: the handler's call opens it again. In the async mode that
   * scope (and the consumer span) reaches the handler already.
   */
  override getHandlerByPattern(pattern: string): MessageHandler | null {
    const handler = super.getHandlerByPattern(pattern);
    if (!handler) return null;
    let scoped = this.scoped.get(handler);
    if (!scoped) {
      const call = (data: unknown, ctx?: KafkaContext) => {
        if (asyncRequestContext()) return handler(data, ctx);
        const requestId = carrierFrom(ctx?.getMessage?.()?.headers as Record<string, unknown> | undefined)[REQUEST_ID_HEADER];
        return handleAsPartOf(requestId, data, () => handler(data, ctx));
      };
      scoped = Object.assign(call, handler) as MessageHandler;
      this.scoped.set(handler, scoped);
    }
    return scoped;
  }

  override async sendMessage(...args: Parameters<ServerKafka['sendMessage']>): Promise<RecordMetadata[]> {
    try {
      return await super.sendMessage(...args);
    } catch (e) {
      this.logger.warn(`a reply on ${args[1]} could not be sent (${messageOf(e)}); its caller times out and asks again`);
      return [];
    }
  }

  override async close(): Promise<void> {
    this.closing = true;
    await super.close();
  }

  /** Settles once a recovery started by a fatal consumer crash is over (tests). */
  get recovery(): Promise<void> | null {
    return this.recovering;
  }

  protected override registerConsumerEventListeners(): void {
    super.registerConsumerEventListeners();
    const consumer = this.consumer;
    consumer?.on(consumer.events.CRASH, (e: CrashEvent) => {
      if (!e.payload.restart && this.consumer === consumer) this.restartConsumer(e.payload.error);
    });
  }

  private restartConsumer(error: Error): void {
    if (this.closing || this.recovering) return;
    this.logger.error(`kafkajs gave up on the consumer of ${this.groupId} (${messageOf(error)}); starting it again`);
    this.recovering = (async () => {
      for (let attempt = 0; !this.closing; attempt++) {
        await within(super.close(), 10_000, undefined);
        if (this.closing) return;
        try {
          await new Promise<void>((resolve, reject) => void this.listen((err?: unknown) => (err ? reject(err) : resolve())));
          this.logger.log(`the consumer of ${this.groupId} runs again`);
          return;
        } catch (e) {
          const wait = recoveryDelayMs(attempt);
          this.logger.warn(`starting the consumer of ${this.groupId} again failed (${messageOf(e)}); retrying in ${wait} ms`);
          await new Promise((r) => setTimeout(r, wait));
        }
      }
    })().finally(() => { this.recovering = null; });
  }
}

/**
 * Options for `NestFactory.createMicroservice(AppModule, kafkaServerOptions(...))` (or
 * `app.connectMicroservice`) in a service process. `groupId` is the service's consumer group,
 * used verbatim (e.g. `loyalty-ledger`): every replica of a service shares it, so each request is
 * handled once, by the owner of its partition. Transport.KAFKA, served by TopicCreatingServerKafka
 * (Nest uses `strategy` when present).
 */
export const kafkaServerOptions = (
  brokers: string[],
  groupId: string,
  clientId: string,
  tuning: KafkaServerTuning = {},
): KafkaOptions & { transport: Transport.KAFKA; options: KafkaServerConfig; strategy: TopicCreatingServerKafka } => {
  const options: KafkaServerConfig = {
    // Nest appends "-server" to clientId and groupId by default; the names given here are the names.
    postfixId: '',
    client: clientConfig(clientId, brokers),
    consumer: { groupId, ...lowLatencyConsumer },
    // A partition the group has never committed on starts at its earliest retained request, not at
    // the log end: otherwise a request taken before the group's first commit there, by a member that
    // dies (or loses the partition) before committing, is skipped by the next owner, which starts
    // at the end again (measured: a ledger killed mid-request on a fresh group left the event to the
    // ingest's 2-minute retry). Partitions with a committed offset resume there, as always.
    subscribe: { fromBeginning: true },
    run: { partitionsConsumedConcurrently: tuning.partitionsConsumedConcurrently ?? 8 },
    producer: producerConfig,
    parser: { keepBinary: true },
    deserializer: new JsonKafkaRequestDeserializer(),
  };
  const { partitions, replicationFactor } = tuning;
  return {
    transport: Transport.KAFKA,
    options,
    strategy: new TopicCreatingServerKafka(options, brokers, { partitions, replicationFactor }, tuning.topicOf, tuning.legacyTopics),
  };
};

/**
 * Resolves once a kafkajs consumer has completed a fetch, i.e. joined its group AND resolved its
 * start offsets. Until then a new group (which starts at the log end) can miss messages produced
 * in the meantime: `listen()`/`connect()` resolve after the group join, before the offsets exist.
 */
export const whenConsuming = (consumer: Consumer, timeoutMs = 15_000): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`Kafka consumer did not fetch within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = consumer.on(consumer.events.FETCH, () => {
      clearTimeout(timer);
      off();
      resolve();
    });
  });

/** For a microservice started with `kafkaServerOptions`: resolves when its consumer really consumes. */
export const kafkaServerReady = async (app: INestMicroservice, timeoutMs?: number): Promise<void> => {
  const [, consumer] = app.unwrap<[Kafka, Consumer | null, unknown]>();
  if (!consumer) throw new Error('the Kafka microservice is not listening yet; call listen() first');
  await whenConsuming(consumer, timeoutMs);
};

export interface KafkaTopicSettings {
  partitions?: number;
  replicationFactor?: number;
}

/** Creates the topics that do not exist yet (and waits for their leaders). */
export const ensureKafkaTopics = async (
  brokers: string[],
  topics: readonly string[],
  { partitions = DEFAULT_KAFKA_PARTITIONS, replicationFactor = 1 }: KafkaTopicSettings = {},
  waitMs = 60_000,
): Promise<void> => {
  if (topics.length === 0) return;
  const admin = new Kafka({ ...clientConfig('loyalty-topic-admin', brokers), logCreator: nestLogCreator('KafkaAdmin') }).admin();
  await admin.connect();
  try {
    const unique = [...new Set(topics)];
    const existing = new Set(await admin.listTopics());
    const missing = unique.filter((t) => !existing.has(t));
    if (missing.length) {
      // Resolves false (no throw) when another process created them in between. Not
      // `waitForLeaders`: kafkajs only retries LEADER_NOT_AVAILABLE there, and a KRaft broker often
      // answers UNKNOWN_TOPIC_OR_PARTITION for a moment after creating a topic (waitForOffsets
      // below waits for that and more).
      await admin.createTopics({
        waitForLeaders: false,
        // A request or reply is worth nothing after its caller gave up (seconds): a day of retention
        // covers any redelivery after a crash, and bounds what a group starting from the earliest
        // retained request (kafkaServerOptions) can find there.
        topics: missing.map((topic) => ({ topic, numPartitions: partitions, replicationFactor, configEntries: [{ name: 'retention.ms', value: String(REQUEST_RETENTION_MS) }] })),
      });
    }
    await waitForOffsets(admin, unique, waitMs);
  } finally {
    await admin.disconnect();
  }
};

/**
 * Polls until the broker answers a ListOffsets for every partition of the topics (which also
 * means every partition has a leader). Right after
 * topics are created (by this process or another one a moment ago) their metadata names a leader
 * while the broker still answers "does not host this topic-partition" for seconds; a consumer
 * that joins then resolves its start offset late, and a reply consumer that resolves the log end
 * only after the first reply arrived never sees that reply (seen in CI: the first request of a
 * topology on a fresh broker timed out after 120 s with nothing in any log).
 */
const waitForOffsets = async (admin: Admin, topics: string[], timeoutMs = 60_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  let pending = topics;
  let last: unknown = null;
  let reported = Date.now();
  while (pending.length && Date.now() < deadline) {
    if (Date.now() - reported > 30_000) {
      reported = Date.now();
      new Logger('KafkaAdmin').warn(`still waiting for ${pending.length} topic(s) to answer offset requests (${last instanceof Error ? last.message : 'no answer'})`);
    }
    const failed: string[] = [];
    for (const t of pending) {
      try {
        const offsets = await admin.fetchTopicOffsets(t);
        if (!offsets.length) failed.push(t);
      } catch (e) {
        last = e;
        failed.push(t);
      }
    }
    pending = failed;
    if (pending.length) await new Promise((r) => setTimeout(r, 100));
  }
  if (pending.length) {
    const why = last instanceof Error ? `: ${last.message}` : '';
    throw new Error(`Kafka topics ${pending.join(', ')} do not answer offset requests after ${timeoutMs} ms${why}`);
  }
};

type Sender = (batch: ProducerBatch) => Promise<RecordMetadata[]>;

/**
 * Keeps a producer's sends in call order. kafkajs does not: of 20 concurrent `send()`s with the
 * same key, the broker log reliably gets the last two swapped. The queue keeps one produce request
 * in flight and sends whatever queued up meanwhile as one batch, in call order (what the Java
 * producer does with max.in.flight.requests=1, with the in-flight time as its linger).
 */
export class OrderedSendQueue {
  private queue: { record: ProducerRecord; resolve: (r: RecordMetadata[]) => void; reject: (e: unknown) => void }[] = [];
  private busy = false;

  constructor(private readonly sendBatch: Sender) {}

  send(record: ProducerRecord): Promise<RecordMetadata[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ record, resolve, reject });
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.queue.length);
        const { acks, timeout: ms, compression } = batch[0].record;
        try {
          const sent = await this.sendBatch({
            acks,
            timeout: ms,
            compression,
            topicMessages: batch.map(({ record }) => ({ topic: record.topic, messages: record.messages })),
          });
          for (const { record, resolve } of batch) resolve(sent.filter((m) => m.topicName === record.topic));
        } catch (e) {
          for (const { reject } of batch) reject(e);
        }
      }
    } finally {
      this.busy = false;
    }
  }
}

/**
 * ClientKafka whose producer keeps sends in call order (see OrderedSendQueue) and that tells its
 * owner when kafkajs gives up on the reply consumer (CRASH with `restart: false`).
 */
class OrderedClientKafka extends ClientKafka {
  constructor(
    options: ConstructorParameters<typeof ClientKafka>[0],
    private readonly replyTopic: string,
    private readonly topicOf: TopicOf,
    private readonly onConsumerLost: (error: Error) => void,
  ) {
    super(options);
  }

  /** Every pattern's replies come on the caller's one reply topic (Nest: `<pattern>.reply` each). */
  override getResponsePatternName(): string {
    return this.replyTopic;
  }

  protected override registerConsumerEventListeners(): void {
    super.registerConsumerEventListeners();
    const consumer = this._consumer;
    consumer?.on(consumer.events.CRASH, (e: CrashEvent) => {
      if (!e.payload.restart && this._consumer === consumer) this.onConsumerLost(e.payload.error);
    });
  }

  protected override registerProducerEventListeners(): void {
    super.registerProducerEventListeners();
    const producer = this._producer;
    if (!producer) return;
    const queue = new OrderedSendQueue((batch) => producer.sendBatch(batch));
    // Nest sends to a topic named after the pattern: send to the pattern's request topic, naming the pattern in a header
    producer.send = (record) => queue.send(onRequestTopic(record, this.topicOf));
  }
}

/** A record Nest addressed to its pattern, addressed to the pattern's request topic instead (with the pattern in a header). */
export const onRequestTopic = (record: ProducerRecord, topicOf: TopicOf): ProducerRecord => {
  const topic = topicOf(record.topic);
  if (topic === record.topic) return record;
  return { ...record, topic, messages: record.messages.map((m) => ({ ...m, headers: { ...m.headers, [PATTERN_HEADER]: record.topic } })) };
};

export interface KafkaBusOptions extends KafkaTopicSettings {
  /** How long `request` waits for a reply before failing with 503 'unavailable'. Default 30 s. */
  timeoutMs?: number;
  /**
   * Reply consumer group; default `<clientId>`, and Nest appends `-client`. Replicas of one caller
   * share it and Nest's reply partition assigner gives each its own reply partition, so there can
   * be at most as many replicas as reply topic partitions.
   */
  groupId?: string;
  /** How long `connect()` waits for the reply consumer to be fetching. Default 15 s. */
  readyTimeoutMs?: number;
  /** The reply topic; default `<groupId>.replies`. Callers in reply groups of their own (one per process) share one by naming it. */
  replyTopic?: string;
  /** Partitions of the reply topic when this caller creates it (default `partitions`): one per caller replica that shares the reply group. */
  replyPartitions?: number;
  /** The request topic of each pattern (default `ownerTopicOf`); the servers must use the same. */
  topicOf?: TopicOf;
}

/**
 * CommandBus over Kafka with Nest's ClientKafka. Every reply to this caller, whatever the pattern,
 * comes on one topic of its own, `replyTopic` (`<group>.replies`): Nest's default, a `<pattern>.reply`
 * topic per pattern, had the gateway fetch 54 topics of 16 partitions each (and read the replies
 * meant for every other caller of those patterns) on every fetch, which made kafkajs the gateway's
 * largest CPU cost and multiplied the broker's work per fetch. Requests go on the pattern's request
 * topic (`topicOf`, shared by several patterns for the same reason), the pattern in a header; the
 * reply topic and partition travel in each request's headers, as Nest's servers expect.
 * `connect()` creates the request and reply topics, joins the reply group and waits until replies
 * can actually be received.
 */
export class KafkaBus extends CommandBus {
  private readonly logger = new Logger('KafkaBus');
  private readonly client: OrderedClientKafka;
  private readonly patterns: ReadonlySet<string>;
  /** The one topic this caller's replies come on. */
  readonly replyTopic: string;
  /** The request topic of each pattern: where the client sends, and which topics connect() creates. */
  private readonly topicOf: TopicOf;
  private readonly timeoutMs: number;
  private readonly closing$ = new Subject<void>();
  private connecting: Promise<void> | null = null;
  private recovering: Promise<void> | null = null;
  private closed = false;
  private inFlight = 0;
  private idle: (() => void)[] = [];

  constructor(
    private readonly brokers: string[],
    private readonly clientId: string,
    patterns: string[],
    private readonly options: KafkaBusOptions = {},
  ) {
    super();
    this.patterns = new Set(patterns);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.replyTopic = options.replyTopic ?? replyTopicOf(options.groupId ?? clientId);
    this.topicOf = options.topicOf ?? ownerTopicOf;
    this.client = new OrderedClientKafka({
      client: clientConfig(clientId, brokers),
      consumer: { groupId: options.groupId ?? clientId, ...lowLatencyConsumer },
      producer: producerConfig,
      // A reply consumer's offsets matter only to a rejoin of its own process's group (a restart is a
      // new group that starts at the end): committed once a second, not after every reply (an
      // OffsetCommit per request for the broker; see kafkajs-commit-interval).
      run: { autoCommitInterval: REPLY_COMMIT_INTERVAL_MS },
      // no request patterns: nothing to hear back, so no reply consumer (and no idle fetching)
      producerOnlyMode: this.patterns.size === 0,
    }, this.replyTopic, this.topicOf, (error) => this.reconnect(error));
    // ClientKafka only subscribes to reply topics registered before it connects (one for all patterns).
    if (this.patterns.size > 0) this.client.subscribeToResponseOf(this.replyTopic);
  }

  /** Idempotent; a failed attempt is forgotten, so calling it again retries. */
  connect(): Promise<void> {
    this.connecting ??= this.doConnect().catch(async (e: unknown) => {
      this.connecting = null;
      await this.client.close().catch(() => undefined);
      throw e;
    });
    return this.connecting;
  }

  /** Settles once a reconnection started by a lost reply consumer is over (tests). */
  get recovery(): Promise<void> | null {
    return this.recovering;
  }

  /**
   * kafkajs gave up on the reply consumer (a crash whose cause is not retriable): no reply would
   * ever arrive again, every request would time out while the process looks alive. Drop the
   * client and connect again, with backoff, for as long as it takes; requests meanwhile fail fast
   * or time out as 'unavailable'.
   */
  private reconnect(error: Error): void {
    if (this.closed || this.recovering) return;
    this.logger.error(`kafkajs gave up on the reply consumer of ${this.clientId} (${messageOf(error)}); connecting again`);
    this.recovering = (async () => {
      for (let attempt = 0; !this.closed; attempt++) {
        this.connecting = null;
        await within(this.client.close(), 10_000, undefined);
        if (this.closed) return;
        try {
          await this.connect();
          // close() may have come in meanwhile: it waits for this connect and then closes the client
          if (!this.closed) this.logger.log(`the reply consumer of ${this.clientId} runs again`);
          return;
        } catch (e) {
          const wait = recoveryDelayMs(attempt);
          this.logger.warn(`connecting ${this.clientId} again failed (${messageOf(e)}); retrying in ${wait} ms`);
          await new Promise((r) => setTimeout(r, wait));
        }
      }
    })().finally(() => { this.recovering = null; });
  }

  /**
   * Graceful: waits up to `drainMs` for requests and emits in flight, then fails what is left with
   * 'unavailable' and leaves the reply group. Call it after the HTTP server stopped taking requests.
   */
  async close(drainMs = 5_000): Promise<void> {
    if (this.inFlight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, drainMs);
        this.idle.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    this.closed = true;
    this.closing$.next();
    const connecting = this.connecting;
    this.connecting = null;
    if (connecting) await connecting.catch(() => undefined);
    await this.client.close();
  }

  async request<T>(pattern: string, payload: unknown, key?: string): Promise<T> {
    if (!this.patterns.has(pattern)) {
      throw problem('internal', `KafkaBus ${this.clientId} is not subscribed to replies of ${pattern}; add it to its patterns`);
    }
    // the caller's request, taken before anything awaits (see request-context: edges mode)
    const requestId = currentRequestId();
    return this.tracked(() => observedRequest('kafka', pattern, async () => {
      await this.connectOrUnavailable();
      let reply: Reply<T> | typeof CLOSED;
      try {
        reply = await lastValueFrom(
          this.client
            .send<Reply<T>>(pattern, this.message(payload, key, requestId))
            .pipe(timeout({ first: this.timeoutMs }), takeUntil(this.closing$)),
          { defaultValue: CLOSED },
        );
      } catch (e) {
        if (e instanceof TimeoutError) throw problem('unavailable', `no reply to ${pattern} within ${this.timeoutMs} ms`);
        throw toProblem(e, pattern);
      }
      if (reply === CLOSED) throw problem('unavailable', `the bus closed before ${pattern} was answered`);
      return unwrap(reply);
    }));
  }

  /** Resolves once the broker has the message (acks from all in-sync replicas). */
  async emit(pattern: string, payload: unknown, key?: string): Promise<void> {
    const requestId = currentRequestId();
    await this.tracked(() => inSpan(`${pattern} send`, SpanKind.PRODUCER, busAttributes('kafka', pattern, 'send'), async () => {
      await this.connectOrUnavailable();
      try {
        await lastValueFrom(this.client.emit(pattern, this.message(payload, key, requestId)), { defaultValue: undefined });
      } catch (e) {
        throw toProblem(e, pattern);
      }
    }));
  }

  /** Connects on first use; failing to connect (broker down, no reply partition) is a 503. */
  private async connectOrUnavailable(): Promise<void> {
    // while the reply consumer is being rebuilt, fail fast rather than queue behind the reconnection
    if (this.recovering) throw problem('unavailable', `Kafka: ${this.clientId} is reconnecting to the broker`);
    try {
      await this.connect();
    } catch (e) {
      throw ProblemError.is(e) ? e : problem('unavailable', `Kafka: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private async tracked<R>(fn: () => Promise<R>): Promise<R> {
    this.inFlight += 1;
    try {
      return await fn();
    } finally {
      this.inFlight -= 1;
      if (this.inFlight === 0) for (const done of this.idle.splice(0)) done();
    }
  }

  private message(payload: unknown, key: string | undefined, requestId: string | undefined): { key: string | null; value: string; headers: Record<string, string> } {
    // A fresh object per call: Nest's serializer encodes it in place (and adds its reply headers).
    // The headers carry the trace context (taken here, inside the producer span) and the request id
    // (issue 11), which the caller had when it asked.
    return { key: key ?? null, value: JSON.stringify(payload ?? null), headers: carrierFor(requestId) };
  }

  private async doConnect(): Promise<void> {
    await ensureKafkaTopics(this.brokers, kafkaTopicsFor([...this.patterns], this.topicOf), this.options);
    if (this.patterns.size > 0) {
      await ensureKafkaTopics(this.brokers, [this.replyTopic], { ...this.options, partitions: this.options.replyPartitions ?? this.options.partitions });
    }
    await this.client.connect();
    if (this.patterns.size === 0) return;
    // Nest replies to the lowest reply partition this member owns; owning none means more members
    // in the reply group than partitions.
    if (this.client.getConsumerAssignments()[this.replyTopic] === undefined) {
      throw new Error(
        `KafkaBus ${this.clientId} got no partition of ${this.replyTopic}: the reply group has more members than ` +
          'reply partitions (one partition per caller replica is needed)',
      );
    }
    await whenConsuming(this.client.consumer, this.options.readyTimeoutMs);
  }
}

const CLOSED = Symbol('closed');

/** Broker trouble → 503 'unavailable'; an error from the remote handler (a Nest RPC error) → 500 'internal'. */
const toProblem = (e: unknown, pattern: string): ProblemError =>
  e instanceof KafkaJSError ? problem('unavailable', `Kafka: ${e.message}`) : handlerFailure(pattern, e);
