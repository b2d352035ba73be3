import { ApiKey } from '@loyalty/gateway';
import { configEntities, migrate, openConfigOrm } from '@loyalty/platform';
import { ProgramRecord } from '@loyalty/programs';
import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { WebhookEndpoint } from '@loyalty/webhook';
import { ALL_MIGRATIONS } from './all-migrations';

/**
 * The configuration tables as TypeORM entities: the schema comes from the migrations only, so each
 * entity must describe its migrated table exactly. TypeORM's schema builder, asked what it would
 * change to match the entities (without doing it), must find nothing.
 */
describe('configuration entities (TypeORM) match the migrated schema', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('config_entities');
    await migrate(db.url, ALL_MIGRATIONS);
  });
  afterAll(async () => db.drop());

  it('registers programmes, API keys and webhook endpoints, and synchronisation would change nothing', async () => {
    expect(configEntities()).toEqual(expect.arrayContaining([ProgramRecord, ApiKey, WebhookEndpoint]));
    const ds = await openConfigOrm(db.url, [ProgramRecord, ApiKey, WebhookEndpoint], 1);
    try {
      const plan = await ds.driver.createSchemaBuilder().log();
      expect(plan.upQueries.map((q) => q.query)).toEqual([]);
      expect(ds.getMetadata(ApiKey).tablePath).toBe('gateway.api_keys');
    } finally {
      await ds.destroy();
    }
  });

  it('would notice a difference (the check is not vacuous)', async () => {
    await db.pool.query('alter table webhook.endpoints add column extra text');
    await db.pool.query('alter table gateway.api_keys alter column name set not null');
    const ds = await openConfigOrm(db.url, [ApiKey, WebhookEndpoint], 1);
    try {
      const queries = (await ds.driver.createSchemaBuilder().log()).upQueries.map((q) => q.query).join('\n');
      expect(queries).toMatch(/"webhook"\."endpoints".*DROP COLUMN "extra"/s);
      expect(queries).toMatch(/"gateway"\."api_keys".*"name" DROP NOT NULL/s);
    } finally {
      await ds.destroy();
      await db.pool.query('alter table webhook.endpoints drop column extra');
      await db.pool.query('alter table gateway.api_keys alter column name drop not null');
    }
  });
});
