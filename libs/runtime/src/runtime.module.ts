import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { Pool } from 'pg';
import { CommandHandler, EVENT_STORE_MIGRATIONS, EventStore, EventStoreDBEventStore, PROJECTION_MIGRATIONS, PostgresEventStore, SNAPSHOT_MIGRATIONS, SnapshotStore } from '@loyalty/event-store';
import { AppConfig, APP_CONFIG, COMMAND_BUS, COMMAND_HANDLER, EVENT_STORE, MigrationClass, PG_POOL, closeConfigOrm, createPool, ensureDatabase, migrate, migrationStatus } from '@loyalty/platform';
import type { CommandBus } from '@loyalty/messaging';
import { PROGRAM_MIGRATIONS, ProgramStore } from '@loyalty/programs';
import { redactUrl } from '@loyalty/platform';
import { setTraceUrlRedactor } from './telemetry';

export interface RuntimeOptions { config: AppConfig; migrations: MigrationClass[] }

/** The schemas every process needs (event store, projections' checkpoints, snapshots, programmes), then its own. */
export const processMigrations = (own: MigrationClass[]): MigrationClass[] =>
  [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS, ...SNAPSHOT_MIGRATIONS, ...PROGRAM_MIGRATIONS, ...own];

/** Applies (or, with LOYALTY_MIGRATIONS=check, only checks) the process's schema migrations. */
export const prepareSchema = async (config: AppConfig, migrations: MigrationClass[]): Promise<void> => {
  if (config.migrations === 'check') {
    const pending = (await migrationStatus(config.databaseUrl, migrations)).filter((m) => !m.applied);
    if (pending.length) {
      throw new Error(`${pending.length} schema migration(s) pending (${pending.map((m) => m.name).join(', ')}): run the migration Job (npm run migrate)`);
    }
    return;
  }
  await migrate(config.databaseUrl, migrations);
};

/** Opens the database (creating it and its schemas on first start) and the event store. */
export const openRuntime = async (options: RuntimeOptions): Promise<{ pool: Pool; store: EventStore }> => {
  setTraceUrlRedactor(redactUrl);
  await ensureDatabase(options.config.databaseUrl);
  await prepareSchema(options.config, processMigrations(options.migrations));
  const pool = createPool(options.config.databaseUrl, Number(process.env.LOYALTY_DB_POOL ?? 30));
  let store: EventStore;
  if (options.config.eventStore === 'eventstoredb') {
    if (!options.config.eventStoreUrl) throw new Error('EVENT_STORE=eventstoredb needs EVENTSTORE_URL (e.g. esdb://localhost:2113?tls=false)');
    store = EventStoreDBEventStore.fromConnectionString(options.config.eventStoreUrl);
  } else {
    store = new PostgresEventStore(pool);
  }
  return { pool, store };
};

class RuntimeLifecycle implements OnApplicationShutdown {
  constructor(@Inject(PG_POOL) private readonly pool: Pool, @Inject(EVENT_STORE) private readonly store: EventStore, private readonly programs: ProgramStore) {}
  async onApplicationShutdown(): Promise<void> {
    await this.programs.close().catch(() => undefined);
    await this.store.close().catch(() => undefined);
    await closeConfigOrm(this.pool);
    await this.pool.end().catch(() => undefined);
  }
}

/** Shared infrastructure for every app: config, pool, event store, command handler, programmes. */
@Global()
@Module({})
export class RuntimeModule {
  static forRoot(config: AppConfig, pool: Pool, store: EventStore, bus: CommandBus): DynamicModule {
    return {
      module: RuntimeModule,
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: PG_POOL, useValue: pool },
        { provide: EVENT_STORE, useValue: store },
        { provide: COMMAND_HANDLER, useValue: new CommandHandler(store, undefined, undefined, new SnapshotStore(pool)) },
        { provide: ProgramStore, useValue: new ProgramStore(pool, { cache: true }) },
        { provide: COMMAND_BUS, useValue: bus },
        RuntimeLifecycle,
      ],
      exports: [APP_CONFIG, PG_POOL, EVENT_STORE, COMMAND_HANDLER, ProgramStore, COMMAND_BUS],
    };
  }
}
