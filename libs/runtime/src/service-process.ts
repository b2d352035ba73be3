import { DynamicModule, INestApplication, Module, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { KafkaBus, KafkaHealth, kafkaServerOptions, kafkaServerReady, ownerTopicOf, replyTopicOf, TopicOf } from '@loyalty/messaging';
import { AppConfig, METRICS, MigrationClass, loadConfig, onScrape, registerOwnPort } from '@loyalty/platform';
import { PATTERNS, requestTopicKind } from '@loyalty/contracts';
import { openRuntime, RuntimeModule } from './runtime.module';
import { OpsController } from './ops/ops.controller';
import { installHttpMetrics } from './ops/metrics';
import { READINESS_CHECKS } from './ops/readiness';
import { RedactingLogger } from './ops/redacting-logger';
import { rootLogger, setLogLevel, setLogService } from './ops/logging';
import { createHttpAdapter } from './http/http-adapter';
import { StartingResponder, closeConnectionsWhenStopping, installGracefulShutdown, keepRunningOnUnhandledRejection, retryWithBackoff } from './lifecycle';

/** Every request pattern on the bus: a process's client subscribes to the replies of all of them. */
export const ALL_PATTERNS: string[] = Object.values(PATTERNS).flatMap((group) => Object.values(group) as string[]);

/** The request topic of a pattern: `<owner>.commands`, `.events`, `.reads` or `.bulk` (requestTopicKind; every process uses this one). */
export const requestTopicOf: TopicOf = (pattern) => ownerTopicOf(pattern, requestTopicKind(pattern));

/** LOYALTY_KAFKA_LEGACY_TOPICS=1: services also serve the per-pattern topics of releases before the shared request topics (a rolling upgrade). */
const legacyTopics = (): boolean => ['1', 'true'].includes(process.env.LOYALTY_KAFKA_LEGACY_TOPICS ?? '');

@Module({})
class ServiceRootModule {
  static create(config: AppConfig, runtime: Awaited<ReturnType<typeof openRuntime>>, bus: KafkaBus, health: KafkaHealth, modules: Type<unknown>[], withOps: boolean): DynamicModule {
    return {
      module: ServiceRootModule,
      global: true, // the gateway's own OpsController sees the broker check too
      imports: [RuntimeModule.forRoot(config, runtime.pool, runtime.store, bus), ...modules],
      controllers: withOps ? [OpsController] : [],
      providers: [{ provide: READINESS_CHECKS, useValue: [{ name: 'broker', check: async () => (await health.check()) || Promise.reject(new Error(health.lastError ?? 'unreachable')) }] }],
      exports: [READINESS_CHECKS],
    };
  }
}

export interface ProcessOptions {
  /** e.g. 'ledger': consumer group `loyalty-ledger` */
  name: string;
  modules: Type<unknown>[];
  migrations: MigrationClass[];
  /** true for a service (consumes its patterns from Kafka); false for the gateway */
  consumes: boolean;
  /** called before listen (the gateway configures its HTTP pipeline here) */
  configure?: (app: INestApplication, config: AppConfig) => void;
  /** the gateway brings its own ops routes */
  withOps?: boolean;
  /**
   * The patterns this process sends requests to (its bus subscribes to their replies only; a
   * request to any other pattern fails at once). Default: every pattern (the gateway). A service
   * that requests nothing sends no requests and joins no reply group.
   */
  requests?: readonly string[];
}

/**
 * One process of the distributed topology: database and event store, a Kafka command bus client,
 * the service's modules, its Kafka consumer (services) and an HTTP port for health and metrics
 * (or the API, for the gateway).
 */
export const startProcess = async (options: ProcessOptions): Promise<INestApplication> => {
  setLogService(options.name);
  const config = loadConfig();
  setLogLevel(config.logLevel);
  if (!config.kafkaBrokers?.length) throw new Error('KAFKA_BROKERS is required in distributed mode');
  const brokers = config.kafkaBrokers;
  keepRunningOnUnhandledRejection(options.name);
  // the port answers (healthz 200, readyz 503) while PostgreSQL and Kafka are not reachable yet
  const starting = new StartingResponder(config.port, ['database', 'broker'], config.baseUrl);
  await starting.listen();
  const runtime = await retryWithBackoff(options.name, 'PostgreSQL', () => openRuntime({ config, migrations: options.migrations }), (e) => starting.note('database', e));
  starting.note('database', 'up');
  // 16 partitions per topic: one member (the key) stays ordered while 16 proceed at once
  // LOYALTY_BUS_TIMEOUT_MS: how long a request waits for its reply before failing 503 'unavailable' (default 30 s)
  const timeoutMs = process.env.LOYALTY_BUS_TIMEOUT_MS ? Number(process.env.LOYALTY_BUS_TIMEOUT_MS) : undefined;
  if (timeoutMs !== undefined && !(Number.isSafeInteger(timeoutMs) && timeoutMs > 0)) throw new Error(`LOYALTY_BUS_TIMEOUT_MS must be a positive integer, got ${process.env.LOYALTY_BUS_TIMEOUT_MS}`);
  // Replies: a reply group per process (it owns every partition of its reply topic and is answered
  // on the lowest), and one reply topic per kind of process, of one partition: the replicas of a kind
  // share it (each skips the others' replies), and a restart, a new group, starts at its end.
  const bus = new KafkaBus(brokers, `loyalty-${options.name}-${process.pid}`, [...(options.requests ?? ALL_PATTERNS)], {
    partitions: Number(process.env.KAFKA_TOPIC_PARTITIONS ?? 16), timeoutMs, replyTopic: replyTopicOf(`loyalty-${options.name}`), replyPartitions: 1, topicOf: requestTopicOf,
  });
  // A broker that has just started answers 'group coordinator not available' for a while (its
  // offsets topic is being created); a failed connect is forgotten, so keep trying, with backoff,
  // for as long as it takes (a fresh topology's service once gave up after 60 s).
  await retryWithBackoff(options.name, 'Kafka', () => bus.connect(), (e) => starting.note('broker', e));
  const health = new KafkaHealth(brokers);
  const app = await NestFactory.create(ServiceRootModule.create(config, runtime, bus, health, options.modules, options.withOps ?? true), createHttpAdapter(), {
    bodyParser: options.consumes, logger: new RedactingLogger(config.logLevel),
  });
  closeConnectionsWhenStopping(app);
  installHttpMetrics(app);
  options.configure?.(app, config);
  if (options.consumes) {
    const ms = app.connectMicroservice(kafkaServerOptions(brokers, `loyalty-${options.name}`, `loyalty-${options.name}`, {
      partitionsConsumedConcurrently: 16, partitions: Number(process.env.KAFKA_TOPIC_PARTITIONS ?? 16), topicOf: requestTopicOf, legacyTopics: legacyTopics(),
    }));
    await app.startAllMicroservices();
    // the consumer joins when the group coordinator is there; kafkajs keeps trying, so do we (never exit)
    await retryWithBackoff(options.name, 'Kafka consumer group', () => kafkaServerReady(ms, 60_000), (e) => starting.note('broker', e));
  }
  // Kafka consumer lag of this service's group, on /metrics (issue 11); every replica reports the group's
  const group = `loyalty-${options.name}`;
  const removeLagProbe = options.consumes
    ? onScrape(async () => {
      for (const { topic, lag } of await health.consumerLag(group)) METRICS.kafkaConsumerLag.set({ group, topic }, lag);
    }, 5_000)
    : () => undefined;
  installGracefulShutdown(app, { name: options.name, after: async () => { removeLagProbe(); await bus.close().catch(() => undefined); await health.close(); } });
  await starting.close();
  await app.listen(config.port, '0.0.0.0');
  registerOwnPort(config.port);
  rootLogger().info({ context: 'lifecycle' }, `loyalty ${options.name} ready on :${config.port} (Kafka ${brokers.join(',')})`);
  return app;
};
