import { INestMicroservice, Logger, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ProblemError } from '@loyalty/platform';
import { deleteKafkaTopicsAndGroups, kafkaBrokers, requireKafka, uniqueKafkaName } from '@loyalty/testing';
import {
  allPatterns,
  commandBusContractModule,
  contractPatterns,
  ContractRecorder,
  describeCommandBusContract,
  measureLatency,
  OrderedMessage,
} from './command-bus.contract';
import { InProcessBus, InProcessServer } from './in-process.transport';
import { KafkaBus, kafkaServerOptions, kafkaServerReady, kafkaTopicsFor, replyTopicOf } from './kafka.transport';

const logger: LogLevel[] = ['error', 'warn'];
const brokers = kafkaBrokers();
const log = (msg: string) => process.stdout.write(`[messaging] ${msg}\n`);

/** One Kafka "service" process (a Nest microservice) plus a KafkaBus caller, on topics of its own. */
const startKafka = async () => {
  const t0 = performance.now();
  await requireKafka(brokers); // fails loudly, never skips
  const run = uniqueKafkaName('it-messaging');
  const patterns = contractPatterns(run);
  const recorder = new ContractRecorder();
  const serviceGroup = `${run}-svc`;
  const callerId = `${run}-caller`;

  const app = await NestFactory.createMicroservice(commandBusContractModule(patterns, recorder), {
    ...kafkaServerOptions(brokers, serviceGroup, serviceGroup),
    logger,
  });
  // The service starts first, before any of its topics exist (it creates them), as in a fresh deployment.
  const tApp = performance.now();
  await app.listen();
  await kafkaServerReady(app);
  const appMs = performance.now() - tApp;
  const bus = new KafkaBus(brokers, callerId, allPatterns(patterns));
  const tBus = performance.now();
  await bus.connect();
  const busMs = performance.now() - tBus;
  log(`Kafka harness ready in ${Math.round(performance.now() - t0)} ms (microservice listen incl. topic creation + first fetch ` +
    `${Math.round(appMs)} ms, KafkaBus.connect ${Math.round(busMs)} ms)`);

  const stop = async () => {
    await bus.close();
    await app.close();
    await deleteKafkaTopicsAndGroups(brokers, [...kafkaTopicsFor(allPatterns(patterns)), bus.replyTopic], [serviceGroup, `${callerId}-client`]);
  };
  return { bus, app, patterns, recorder, run, stop };
};

const startInProcess = async () => {
  const patterns = contractPatterns('it-messaging');
  const recorder = new ContractRecorder();
  const server = new InProcessServer();
  const app: INestMicroservice = await NestFactory.createMicroservice(commandBusContractModule(patterns, recorder), { strategy: server, logger });
  await app.listen();
  return { bus: new InProcessBus(server), patterns, recorder, stop: () => app.close() };
};

describeCommandBusContract('the in-process transport', startInProcess);
describeCommandBusContract('Kafka', startKafka);

describe('KafkaBus specifics', () => {
  let h: Awaited<ReturnType<typeof startKafka>>;
  beforeAll(async () => {
    h = await startKafka();
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('one key is never handled twice at once, while different keys are handled in parallel', async () => {
    h.recorder.resetConcurrency();
    // Keys spread over the 4 partitions (murmur2 of these keys hits more than one partition).
    const keys = Array.from({ length: 8 }, (_, i) => `parallel-member-${i}`);
    const sends: Promise<unknown>[] = [];
    for (let seq = 0; seq < 5; seq++) {
      for (const key of keys) sends.push(h.bus.request(h.patterns.ordered, { key, seq, delayMs: 15 } satisfies OrderedMessage, key));
    }
    await Promise.all(sends);
    expect(h.recorder.maxActivePerKey).toBe(1);
    expect(h.recorder.maxActive).toBeGreaterThan(1);
    for (const key of keys) expect(h.recorder.arrivals.get(key)).toEqual([0, 1, 2, 3, 4]);
  });

  /** One request from a bus of its own (then closed, its reply topic and group deleted, and `topics` too): the problem it failed with and how long it took. */
  const askAlone = async (caller: string, pattern: string, timeoutMs: number, topics: string[] = []): Promise<{ problem: unknown; ms: number }> => {
    const bus = new KafkaBus(brokers, `${h.run}-${caller}`, [pattern], { timeoutMs });
    try {
      await bus.connect();
      const t0 = Date.now();
      const problem = await bus.request(pattern, { hello: 1 }, 'k').catch((err: unknown) => err);
      return { problem, ms: Date.now() - t0 };
    } finally {
      await bus.close();
      await deleteKafkaTopicsAndGroups(brokers, [...topics, bus.replyTopic], [`${h.run}-${caller}-client`]);
    }
  };

  it('a request nobody answers fails with ProblemError unavailable after the timeout', async () => {
    // an owner no server serves: nobody reads its request topic
    const lonely = `${h.run}-lonely.nobody-listens`;
    const { problem, ms } = await askAlone('impatient', lonely, 1_000, kafkaTopicsFor([lonely]));
    expect(problem).toBeInstanceOf(ProblemError);
    expect((problem as ProblemError).problem.slug).toBe('unavailable');
    expect(ms).toBeGreaterThanOrEqual(900);
  });

  it('a pattern its request topic\'s server has no handler for is answered at once with an error, not left to time out', async () => {
    const { problem, ms } = await askAlone('skewed', `${h.run}.not-handled`, 20_000);
    expect(problem).toBeInstanceOf(ProblemError);
    expect((problem as ProblemError).problem.slug).toBe('internal');
    expect(ms).toBeLessThan(10_000);
  });

  it('a pattern the bus was not built with is refused at once (its reply topic is not subscribed)', async () => {
    const e = await h.bus.request(`${h.run}.unknown`, {}).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(ProblemError);
    expect((e as ProblemError).problem).toMatchObject({ slug: 'internal' });
  });

  it('connect() fails with an error (no hang) when no broker answers; requests then fail as unavailable', async () => {
    Logger.overrideLogger(false); // kafkajs logs every retry; the rejection is what matters here
    try {
      const bus = new KafkaBus(['127.0.0.1:1'], 'nobody-home', ['x.y'], { timeoutMs: 1_000 });
      await expect(bus.connect()).rejects.toThrow(/ECONNREFUSED|Connection/);
      const e = await bus.request('x.y', {}).catch((err: unknown) => err);
      expect(e).toBeInstanceOf(ProblemError);
      expect((e as ProblemError).problem.slug).toBe('unavailable');
      await bus.close();
    } finally {
      Logger.overrideLogger(logger);
    }
  }, 60_000);

  it('close() lets requests in flight finish, then fails the ones still waiting as unavailable', async () => {
    const patterns = allPatterns(h.patterns);
    const drained = new KafkaBus(brokers, `${h.run}-drained`, patterns);
    const cut = new KafkaBus(brokers, `${h.run}-cut`, patterns);
    try {
      await Promise.all([drained.connect(), cut.connect()]);
      const slow = (bus: KafkaBus, key: string) =>
        bus.request(h.patterns.ordered, { key, seq: 0, delayMs: 400 } satisfies OrderedMessage, key).catch((err: unknown) => err);
      const finished = slow(drained, 'drain-1');
      const abandoned = slow(cut, 'drain-2');
      await new Promise((r) => setTimeout(r, 100));
      await Promise.all([drained.close(5_000), cut.close(0)]);
      await expect(finished).resolves.toEqual({ key: 'drain-1', seq: 0 });
      const e = await abandoned;
      expect(e).toBeInstanceOf(ProblemError);
      expect((e as ProblemError).problem.slug).toBe('unavailable');
    } finally {
      await Promise.all([drained.close(0), cut.close(0)]);
      await deleteKafkaTopicsAndGroups(brokers, [drained.replyTopic, cut.replyTopic], [`${h.run}-drained-client`, `${h.run}-cut-client`]);
    }
  });

  it('replicas of one caller share its reply group: each gets a reply partition of its own and its own replies', async () => {
    const patterns = allPatterns(h.patterns);
    const a = new KafkaBus(brokers, `${h.run}-gateway`, patterns);
    const b = new KafkaBus(brokers, `${h.run}-gateway`, patterns);
    try {
      await a.connect();
      const t0 = performance.now();
      await b.connect(); // a has to rejoin first: a rebalance
      log(`second replica connect (rebalance of the reply group) took ${Math.round(performance.now() - t0)} ms`);
      const calls = Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).request(h.patterns.echo, { i }, `replica-${i}`));
      expect(await Promise.all(calls)).toEqual(Array.from({ length: 40 }, (_, i) => ({ i })));
    } finally {
      await Promise.all([a.close(), b.close()]);
      await deleteKafkaTopicsAndGroups(brokers, [replyTopicOf(`${h.run}-gateway`)], [`${h.run}-gateway-client`]);
    }
  });

  it('refuses to connect a replica that would get no reply partition (more replicas than partitions)', async () => {
    const pattern = `${h.run}-narrow.single-partition`; // not the harness's request topic (deleted at the end)
    const a = new KafkaBus(brokers, `${h.run}-narrow`, [pattern], { partitions: 1 });
    const b = new KafkaBus(brokers, `${h.run}-narrow`, [pattern], { partitions: 1 });
    try {
      await a.connect();
      await expect(b.connect()).rejects.toThrow(/more members than reply partitions/);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await deleteKafkaTopicsAndGroups(brokers, [...kafkaTopicsFor([pattern]), a.replyTopic], [`${h.run}-narrow-client`]);
    }
  });

  it('a service started with legacyTopics also answers callers that send to a topic per pattern (a rolling upgrade)', async () => {
    const run = `${h.run}-legacy`;
    const patterns = contractPatterns(run);
    const recorder = new ContractRecorder();
    const app = await NestFactory.createMicroservice(commandBusContractModule(patterns, recorder), {
      ...kafkaServerOptions(brokers, `${run}-svc`, `${run}-svc`, { legacyTopics: true }),
      logger,
    });
    const old = new KafkaBus(brokers, `${run}-old`, allPatterns(patterns), { topicOf: (p) => p });
    const current = new KafkaBus(brokers, `${run}-new`, allPatterns(patterns));
    try {
      await app.listen();
      await kafkaServerReady(app);
      await Promise.all([old.connect(), current.connect()]);
      expect(await old.request(patterns.echo, { via: 'pattern topic' }, 'k')).toEqual({ via: 'pattern topic' });
      expect(await current.request(patterns.echo, { via: 'shared topic' }, 'k')).toEqual({ via: 'shared topic' });
    } finally {
      await Promise.all([old.close(), current.close()]);
      await app.close();
      await deleteKafkaTopicsAndGroups(brokers, [...allPatterns(patterns), ...kafkaTopicsFor(allPatterns(patterns)), old.replyTopic, current.replyTopic], [`${run}-svc`, `${run}-old-client`, `${run}-new-client`]);
    }
  });

  it('reports request-reply latency (measured, not asserted)', async () => {
    await measureLatency(h.bus, h.patterns.echo, 20, 1); // warm-up
    // Caller and service share this Node process, so its CPU time covers both ends (not the broker).
    const measured = async (inFlight: number) => {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const stats = await measureLatency(h.bus, h.patterns.echo, 200, inFlight);
      const wallMs = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      return `${JSON.stringify(stats)} ms; ${Math.round(200 / (wallMs / 1000))} req/s, ` +
        `node CPU ${Math.round(((cpu.user + cpu.system) / 1000 / wallMs) * 100)}% of one core`;
    };
    const sequential = await measured(1);
    const concurrent = await measured(20);
    log(`Kafka request-reply latency, 200 sequential: ${sequential}`);
    log(`Kafka request-reply latency, 200 with 20 in flight: ${concurrent}`);
  });
});
