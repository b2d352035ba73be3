import { INestMicroservice, Logger, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ProblemError } from '@loyalty/platform';
import { PrivateKafka, sleep, startPrivateKafka } from '@loyalty/testing';
import { allPatterns, commandBusContractModule, contractPatterns, ContractRecorder, OrderedMessage } from './command-bus.contract';
import { KafkaBus, kafkaServerOptions, kafkaServerReady } from './kafka.transport';

/**
 * Issue 8: the request/reply path after the broker is killed (SIGKILL) and started again, on a
 * broker of this test's own (tools/kafka on free ports of 127.0.0.1; the shared one is never
 * touched). A service (Nest microservice) and a caller (KafkaBus) live in this process.
 *
 * The broker stays away for longer than the producers' retries (~20 s), with a request being
 * handled when it goes: its reply cannot be sent. That used to be an unhandled rejection, which
 * ends a service process (the fault test's dead ingest). Then, once the broker answers again,
 * round trips on every partition must work again within BOUND_MS: a bound on waiting, not on speed.
 */

// kafkajs logs every failed connection of the outage: quiet unless RECOVERY_LOG=error,warn,log
const logger: LogLevel[] | false = process.env.RECOVERY_LOG ? (process.env.RECOVERY_LOG.split(',') as LogLevel[]) : false;
const log = (msg: string) => process.stdout.write(`[recovery] ${msg}\n`);

/** Kill/restart cycles (RECOVERY_CYCLES to repeat them) and how long the broker stays down each time. */
const CYCLES = Number(process.env.RECOVERY_CYCLES ?? 1);
const DOWN_MS = Number(process.env.RECOVERY_DOWN_MS ?? 25_000);
/** How long, after the broker is ready again, every round trip may take to work again. */
const BOUND_MS = 60_000;

describe('KafkaBus and a Kafka service across a broker kill (private broker)', () => {
  let kafka: PrivateKafka | undefined;
  let app: INestMicroservice | undefined;
  let bus: KafkaBus | undefined;
  const patterns = contractPatterns('recovery');
  const recorder = new ContractRecorder();
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => { unhandled.push(reason); };

  beforeAll(async () => {
    process.on('unhandledRejection', record);
    Logger.overrideLogger(logger);
    kafka = await startPrivateKafka();
    const brokers = [kafka.brokers];
    app = await NestFactory.createMicroservice(commandBusContractModule(patterns, recorder), {
      ...kafkaServerOptions(brokers, 'recovery-svc', 'recovery-svc'),
      logger,
    });
    await app.listen();
    await kafkaServerReady(app, 120_000);
    bus = new KafkaBus(brokers, 'recovery-caller', allPatterns(patterns), { timeoutMs: 5_000, readyTimeoutMs: 60_000 });
    await bus.connect();
  }, 400_000);

  afterAll(async () => {
    await bus?.close(0).catch(() => undefined);
    await app?.close().catch(() => undefined);
    await kafka?.stop();
    process.off('unhandledRejection', record);
    Logger.overrideLogger(['error', 'warn']);
  }, 120_000);

  // 16 keys: every partition of the 4 of each topic, in both directions
  const keys = Array.from({ length: 16 }, (_, i) => `member-${i}`);
  const roundTrips = async (tag: string) => {
    const answers = await Promise.all(keys.map((key, i) => bus!.request(patterns.echo, { tag, i }, key)));
    expect(answers).toEqual(keys.map((_, i) => ({ tag, i })));
  };

  it('answers every request again within a bounded wait once the broker is back, and no process dies of it', async () => {
    await roundTrips('before');
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      // a request the service is handling when the broker goes: its reply cannot be sent
      const key = `slow-${cycle}`;
      const slow = bus!.request(patterns.ordered, { key, seq: 0, delayMs: 3_000 } satisfies OrderedMessage, key).then(() => 'ok', (e: unknown) => (ProblemError.is(e) ? e.problem.slug : String(e)));
      for (const deadline = Date.now() + 10_000; !recorder.arrivals.has(key) && Date.now() < deadline;) await sleep(20);
      expect(recorder.arrivals.get(key)).toEqual([0]);

      // a caller that keeps asking during the outage (bounded: stops when told, at most 2,000 calls)
      const seen: string[] = [];
      let stop = false;
      const traffic = (async () => {
        for (let i = 0; !stop && i < 2_000; i++) {
          seen.push(await bus!.request(patterns.echo, { i }, keys[i % keys.length]).then(() => 'ok', (e: unknown) => (ProblemError.is(e) ? e.problem.slug : String(e))));
          await sleep(200);
        }
      })();

      await kafka!.kill();
      const killed = Date.now();
      await sleep(DOWN_MS);
      await kafka!.start();
      const back = Date.now();
      log(`cycle ${cycle}: the broker was away for ${back - killed} ms`);
      expect(await slow).toBe('unavailable');

      let attempts = 0;
      for (;;) {
        attempts += 1;
        try {
          await roundTrips(`cycle-${cycle}-${attempts}`);
          break;
        } catch (e) {
          if (Date.now() - back > BOUND_MS) throw new Error(`no round trip on every partition within ${BOUND_MS} ms of the broker being back (${attempts} attempts): ${(e as Error).message}`);
          await sleep(500);
        }
      }
      log(`cycle ${cycle}: every round trip works again ${Date.now() - back} ms after the broker was ready (attempt ${attempts})`);
      stop = true;
      await traffic;
      const counts = seen.reduce<Record<string, number>>((a, s) => ({ ...a, [s]: (a[s] ?? 0) + 1 }), {});
      log(`cycle ${cycle}: the caller saw ${JSON.stringify(counts)}`);
      // an outage answers 'unavailable', never anything else
      expect(Object.keys(counts).filter((s) => s !== 'ok' && s !== 'unavailable')).toEqual([]);
    }
    // it keeps working, and nothing was left unhandled (that ends a service process)
    await sleep(2_000);
    await roundTrips('after');
    expect(unhandled.map(String)).toEqual([]);
  }, 900_000);
});
