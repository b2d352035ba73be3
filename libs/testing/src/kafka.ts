import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';

/**
 * Locates the Kafka broker for integration tests: `KAFKA_BROKERS` (comma-separated) or the local
 * single-node broker of `tools/kafka/start.sh` on 127.0.0.1:9092. Tests that need Kafka call
 * `requireKafka()` and fail (never skip) when it is not there.
 */
export const kafkaBrokers = (): string[] =>
  (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);

const admin = (brokers: string[]) =>
  new Kafka({
    clientId: 'loyalty-tests',
    brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 2_000,
    retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 2 },
  }).admin();

/** Throws a clear error when no broker answers at `brokers`. */
export const requireKafka = async (brokers: string[] = kafkaBrokers()): Promise<void> => {
  const a = admin(brokers);
  try {
    await a.connect();
    const { brokers: nodes } = await a.describeCluster();
    if (nodes.length === 0) throw new Error('the cluster reports no brokers');
  } catch (e) {
    throw new Error(
      `Kafka is not reachable at ${brokers.join(',')} (${e instanceof Error ? e.message : String(e)}). ` +
        'Start the local broker with tools/kafka/start.sh or point KAFKA_BROKERS at one.',
    );
  } finally {
    await a.disconnect().catch(() => undefined);
  }
};

/** A name no other test run uses (topics, groups): runs on a shared broker never see each other. */
export const uniqueKafkaName = (prefix: string): string =>
  `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;

/** Best-effort cleanup of what a test run created. */
export const deleteKafkaTopicsAndGroups = async (
  brokers: string[],
  topics: readonly string[],
  groups: readonly string[] = [],
): Promise<void> => {
  const a = admin(brokers);
  try {
    await a.connect();
    const existing = new Set(await a.listTopics());
    const doomed = topics.filter((t) => existing.has(t));
    if (groups.length > 0) await a.deleteGroups([...groups]).catch(() => undefined);
    if (doomed.length > 0) await a.deleteTopics({ topics: doomed, timeout: 10_000 });
  } catch {
    // cleanup only
  } finally {
    await a.disconnect().catch(() => undefined);
  }
};
