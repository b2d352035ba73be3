// The container definitions of the int/e2e tiers (./containers.js): built here without a Docker
// engine (nothing is started), so a wrong image, port or variable shows up on every machine.
const { DEFINITIONS, IMAGES, dockerAvailable } = require('./containers') as {
  DEFINITIONS: Record<string, { define: () => { imageName: { string: string }; exposedPorts: unknown[]; environment: Record<string, string> } }>;
  IMAGES: Record<string, string>;
  dockerAvailable: () => Promise<{ ok: boolean; why?: string }>;
};

describe('test containers (testcontainers)', () => {
  it('defines one server per variable the suites read, on the images the deployment uses', () => {
    expect(Object.keys(DEFINITIONS).sort()).toEqual(['EVENTSTORE_URL', 'KAFKA_BROKERS', 'TEST_DATABASE_URL', 'TEST_REDIS_URL']);
    expect(IMAGES.postgres).toBe('postgres:16-alpine');
    expect(IMAGES.eventstore).toBe('eventstore/eventstore:24.10');
    const pg = DEFINITIONS.TEST_DATABASE_URL.define();
    expect(pg.imageName.string).toBe('postgres:16-alpine');
    const es = DEFINITIONS.EVENTSTORE_URL.define();
    expect(es.environment).toMatchObject({ EVENTSTORE_INSECURE: 'true', EVENTSTORE_MEM_DB: 'true' });
    expect(JSON.stringify(es.exposedPorts)).toContain('2113');
    const kafka = DEFINITIONS.KAFKA_BROKERS.define();
    expect(kafka.environment).toMatchObject({ KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'true' });
    expect(JSON.stringify(kafka.exposedPorts)).toContain('9093');
    expect(JSON.stringify(DEFINITIONS.TEST_REDIS_URL.define().exposedPorts)).toContain('6379');
  });

  it('can be switched off: then no engine is looked for and the local servers are used', async () => {
    const before = process.env.LOYALTY_TESTCONTAINERS;
    process.env.LOYALTY_TESTCONTAINERS = 'off';
    try {
      expect(await dockerAvailable()).toEqual({ ok: false, why: 'LOYALTY_TESTCONTAINERS=off' });
    } finally {
      if (before === undefined) delete process.env.LOYALTY_TESTCONTAINERS;
      else process.env.LOYALTY_TESTCONTAINERS = before;
    }
  });
});
