// Test infrastructure for the integration and end-to-end tiers (Jest globalSetup / globalTeardown).
// With a reachable Docker engine (testcontainers finds it: DOCKER_HOST, the socket, Colima, …),
// PostgreSQL, Kafka, EventStoreDB (or KurrentDB) and Redis are started as containers and the suites
// are pointed at them through the variables they already read: TEST_DATABASE_URL, KAFKA_BROKERS,
// EVENTSTORE_URL, TEST_REDIS_URL. So the EventStoreDB adapter's contract suite runs for real on any
// machine with Docker. A variable set by the caller wins (that server is used, no container for it).
// Without Docker, or with LOYALTY_TESTCONTAINERS=off, nothing is started: the local servers are
// used as before, and one line says so.
// Images: LOYALTY_TEST_POSTGRES_IMAGE, LOYALTY_TEST_KAFKA_IMAGE, LOYALTY_TEST_EVENTSTORE_IMAGE
// (e.g. kurrentplatform/kurrentdb:25.0), LOYALTY_TEST_REDIS_IMAGE.

const IMAGES = {
  postgres: process.env.LOYALTY_TEST_POSTGRES_IMAGE || 'postgres:16-alpine',
  kafka: process.env.LOYALTY_TEST_KAFKA_IMAGE || 'confluentinc/cp-kafka:7.9.0',
  eventstore: process.env.LOYALTY_TEST_EVENTSTORE_IMAGE || 'eventstore/eventstore:24.10',
  redis: process.env.LOYALTY_TEST_REDIS_IMAGE || 'redis:7-alpine',
};

// shared by globalSetup and globalTeardown (both run in Jest's main process)
const started = (globalThis.__loyaltyTestContainers ??= []);

/** Whether a container engine answers (testcontainers' own discovery); false when switched off. */
const dockerAvailable = async () => {
  if (process.env.LOYALTY_TESTCONTAINERS === 'off') return { ok: false, why: 'LOYALTY_TESTCONTAINERS=off' };
  try {
    const { getContainerRuntimeClient } = require('testcontainers');
    await getContainerRuntimeClient();
    return { ok: true };
  } catch (e) {
    return { ok: false, why: 'no Docker engine reachable' };
  }
};

// Each server: the container (not started) and, once started, the value of its variable.
const DEFINITIONS = {
  TEST_DATABASE_URL: {
    define: () => {
      const { PostgreSqlContainer } = require('@testcontainers/postgresql');
      return new PostgreSqlContainer(IMAGES.postgres).withUsername('postgres').withPassword('postgres').withDatabase('postgres')
        .withCommand(['postgres', '-c', 'max_connections=500', '-c', 'fsync=off']);
    },
    value: (c) => `postgres://postgres:postgres@${c.getHost()}:${c.getPort()}/postgres`,
  },
  KAFKA_BROKERS: {
    define: () => {
      const { KafkaContainer } = require('@testcontainers/kafka');
      return new KafkaContainer(IMAGES.kafka).withKraft().withEnvironment({
        KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'true',
        KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
        KAFKA_NUM_PARTITIONS: '16',
      });
    },
    value: (c) => `${c.getHost()}:${c.getMappedPort(9093)}`,
  },
  EVENTSTORE_URL: {
    define: () => {
      const { GenericContainer, Wait } = require('testcontainers');
      const prefix = /kurrent/i.test(IMAGES.eventstore) ? 'KURRENTDB' : 'EVENTSTORE';
      return new GenericContainer(IMAGES.eventstore)
        .withEnvironment({ [`${prefix}_CLUSTER_SIZE`]: '1', [`${prefix}_RUN_PROJECTIONS`]: 'None', [`${prefix}_INSECURE`]: 'true', [`${prefix}_MEM_DB`]: 'true' })
        .withExposedPorts(2113)
        .withWaitStrategy(Wait.forHttp('/health/live', 2113).forStatusCodeMatching((s) => s >= 200 && s < 300))
        .withStartupTimeout(120_000);
    },
    value: (c) => `esdb://${c.getHost()}:${c.getMappedPort(2113)}?tls=false`,
  },
  TEST_REDIS_URL: {
    define: () => {
      const { GenericContainer, Wait } = require('testcontainers');
      return new GenericContainer(IMAGES.redis).withExposedPorts(6379).withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/));
    },
    value: (c) => `redis://${c.getHost()}:${c.getMappedPort(6379)}`,
  },
};

const start = async (name) => {
  const c = await DEFINITIONS[name].define().start();
  started.push(c);
  return DEFINITIONS[name].value(c);
};

/**
 * Starts what the environment does not already name, sets the variables, and prints one line.
 * Returns true when containers are in use.
 */
const startTestInfrastructure = async () => {
  const docker = await dockerAvailable();
  if (!docker.ok) {
    process.stdout.write(
      `\ntestcontainers: ${docker.why}; using the local servers (PostgreSQL ${process.env.TEST_DATABASE_URL ? 'TEST_DATABASE_URL' : '127.0.0.1:5432'}, ` +
        `Kafka ${process.env.KAFKA_BROKERS || '127.0.0.1:9092'}, Redis ${process.env.TEST_REDIS_URL || '127.0.0.1:6379'}, ` +
        `EventStoreDB ${process.env.EVENTSTORE_URL ? 'EVENTSTORE_URL' : 'not run (in-memory fake only)'})\n`,
    );
    return false;
  }
  const wanted = Object.keys(DEFINITIONS).filter((name) => !process.env[name]);
  const values = await Promise.all(wanted.map(start));
  wanted.forEach((name, i) => { process.env[name] = values[i]; });
  process.stdout.write(`\ntestcontainers: started ${wanted.join(', ') || 'nothing (every server is named by the environment)'}\n`);
  return true;
};

const stopTestInfrastructure = async () => {
  await Promise.all(started.splice(0).map((c) => c.stop().catch(() => undefined)));
};

module.exports = { startTestInfrastructure, stopTestInfrastructure, dockerAvailable, DEFINITIONS, IMAGES };
