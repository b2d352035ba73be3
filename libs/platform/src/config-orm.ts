import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';

/**
 * TypeORM for the configuration tables (programmes, API keys, webhook endpoints): each is an entity
 * declared next to the code that owns its table and marked with `@configEntity()`. The event store,
 * projections and queues keep their set-based SQL on the `pg` pool. The schema comes from the
 * migrations only (`synchronize` is off); a test checks each entity matches its migrated table.
 */
const ENTITIES = new Set<Function>();

/** Registers an `@Entity` class as a configuration-table entity (put it above `@Entity`). */
export const configEntity = (): ClassDecorator => (target) => {
  ENTITIES.add(target);
};

/** The registered entities (those whose modules were imported). */
export const configEntities = (): Function[] => [...ENTITIES];

/** Opens a DataSource on `url` with the given entities (default: every registered one). */
export const openConfigOrm = async (url: string, entities: Function[] = configEntities(), poolSize = 4): Promise<DataSource> => {
  const { DataSource: OrmDataSource } = await import('typeorm');
  const ds = new OrmDataSource({
    type: 'postgres',
    url,
    entities,
    synchronize: false,
    migrationsRun: false,
    logging: false,
    poolSize,
    // idle connections do not keep a process (or a test worker) alive
    extra: { allowExitOnIdle: true, idleTimeoutMillis: 10_000 },
  });
  return ds.initialize();
};

const byPool = new WeakMap<Pool, { entities: number; ds: Promise<DataSource> }>();

const urlOf = (pool: Pool): string => {
  const o = pool.options;
  if (o.connectionString) return o.connectionString;
  const u = new URL('postgres://localhost');
  u.hostname = o.host ?? '127.0.0.1';
  u.port = String(o.port ?? 5432);
  u.username = o.user ?? 'postgres';
  if (typeof o.password === 'string') u.password = o.password;
  u.pathname = `/${o.database ?? 'postgres'}`;
  return u.toString();
};

/**
 * The configuration DataSource of the database a `pg` pool connects to: opened on first use, one
 * per pool, with every entity registered by then (reopened if more were registered since). Closed
 * by `closeConfigOrm(pool)` (the runtime's shutdown, the test database's drop).
 */
export const configOrm = (pool: Pool): Promise<DataSource> => {
  const known = byPool.get(pool);
  if (known && known.entities === ENTITIES.size) return known.ds;
  const previous = known?.ds;
  const ds = (async () => {
    if (previous) await previous.then((d) => d.destroy()).catch(() => undefined);
    return openConfigOrm(urlOf(pool));
  })();
  ds.catch(() => { if (byPool.get(pool)?.ds === ds) byPool.delete(pool); }); // a failed open is retried on the next use
  byPool.set(pool, { entities: ENTITIES.size, ds });
  return ds;
};

/** Closes the pool's configuration DataSource, if one was opened. */
export const closeConfigOrm = async (pool: Pool): Promise<void> => {
  const known = byPool.get(pool);
  if (!known) return;
  byPool.delete(pool);
  await known.ds.then((d) => d.destroy()).catch(() => undefined);
};
