import { INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Pool } from 'pg';
import { PostgresEventStore } from '@loyalty/event-store';
import { InProcessBus, InProcessServer } from '@loyalty/messaging';
import { loadConfig } from '@loyalty/platform';
import { RuntimeModule } from '@loyalty/runtime';
import { LedgerModule } from './ledger.module';

/**
 * For the ledger's integration tests: the ledger as one listening microservice over a test
 * database (PostgreSQL event store, in-process bus, no periodic sweeps: the tests call them).
 */
export const startLedgerTestApp = async (db: { pool: Pool; url: string }): Promise<{ app: INestMicroservice; store: PostgresEventStore; bus: InProcessBus }> => {
  const store = new PostgresEventStore(db.pool, 50);
  const server = new InProcessServer();
  const bus = new InProcessBus(server);
  const config = { ...loadConfig({}), databaseUrl: db.url, sweepIntervalMs: 0 };
  const app = await NestFactory.createMicroservice(
    { module: class LedgerTestModule {}, imports: [RuntimeModule.forRoot(config, db.pool, store, bus), LedgerModule] },
    { strategy: server, logger: false },
  );
  await app.listen();
  return { app, store, bus };
};
