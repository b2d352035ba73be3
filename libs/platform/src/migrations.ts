// typeorm is loaded when migrations run (every lib imports this package; few of them migrate)
import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A schema migration: a TypeORM migration class whose `name` ends in a 13-digit timestamp, which
 * orders it among all migrations (TypeORM sorts by it). `up` and `down` run plain SQL, each in its
 * own transaction. Every lib keeps its migrations in an ordered list (`<LIB>_MIGRATIONS`); adding
 * one is a new class at the end of that list, with a timestamp later than every existing one
 * (`Date.now()` when written), made with `sqlMigration(name, { up, down })`. docs/decisions.md,
 * "Operating on Kubernetes (issue 11)".
 */
export abstract class SqlMigration implements MigrationInterface {
  abstract readonly name: string;
  /**
   * Its id in `public.schema_migrations`, the bookkeeping of the hand-written runner that came
   * before TypeORM: a database that runner migrated counts the migration as applied.
   */
  readonly legacyId?: string;
  protected abstract readonly upSql: string;
  protected abstract readonly downSql: string;
  async up(runner: QueryRunner): Promise<void> {
    await runner.query(this.upSql);
  }
  async down(runner: QueryRunner): Promise<void> {
    await runner.query(this.downSql);
  }
}

export type MigrationClass = new () => SqlMigration;

/** What a migration is: its name (ending in its timestamp), the old runner's id if any, and its SQL. */
export interface SqlMigrationSpec {
  legacyId?: string;
  up: string;
  down: string;
}

/** A migration class (what TypeORM and the lists take) from its name and SQL. */
export const sqlMigration = (name: string, spec: SqlMigrationSpec): MigrationClass => {
  const migration = class extends SqlMigration {
    readonly name = name;
    override readonly legacyId = spec.legacyId;
    protected readonly upSql = spec.up;
    protected readonly downSql = spec.down;
  };
  Object.defineProperty(migration, 'name', { value: name });
  return migration;
};

/** TypeORM's bookkeeping table (public schema). */
export const MIGRATIONS_TABLE = 'typeorm_migrations';
/** The hand-written runner's bookkeeping table, read once per start to adopt what it applied. */
export const LEGACY_MIGRATIONS_TABLE = 'schema_migrations';
/** Same advisory lock as the old runner: an old and a new build starting together still take turns. */
const MIGRATION_LOCK = 7412001;

const timestampOf = (name: string): number => Number(name.slice(-13));

/** The instances of a list, each class once, in TypeORM's order (by the timestamp in the name). */
export const migrationInstances = (migrations: MigrationClass[]): SqlMigration[] => {
  const seen = new Set<MigrationClass>();
  const out: SqlMigration[] = [];
  for (const M of migrations) {
    if (seen.has(M)) continue;
    seen.add(M);
    const m = new M();
    if (!/\d{13}$/.test(m.name)) throw new Error(`migration ${m.name}: the name must end in a 13-digit timestamp`);
    out.push(m);
  }
  const names = new Set<string>();
  for (const m of out) {
    if (names.has(m.name)) throw new Error(`two migrations are named ${m.name}`);
    names.add(m.name);
  }
  return out.sort((a, b) => timestampOf(a.name) - timestampOf(b.name));
};

const uniqueClasses = (migrations: MigrationClass[]): MigrationClass[] => [...new Set(migrations)];

const withDataSource = async <T>(url: string, migrations: MigrationClass[], fn: (ds: DataSource, runner: QueryRunner) => Promise<T>): Promise<T> => {
  migrationInstances(migrations); // validates names before connecting
  const { DataSource } = await import('typeorm');
  const ds = new DataSource({
    type: 'postgres',
    url,
    migrations: uniqueClasses(migrations),
    migrationsTableName: MIGRATIONS_TABLE,
    logging: false,
    poolSize: 1,
  });
  await ds.initialize();
  const runner = ds.createQueryRunner();
  try {
    await runner.connect();
    await runner.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      return await fn(ds, runner);
    } finally {
      await runner.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    }
  } finally {
    await runner.release().catch(() => undefined);
    await ds.destroy().catch(() => undefined);
  }
};

const ensureTable = async (runner: QueryRunner): Promise<void> => {
  // the columns TypeORM itself creates (it finds the table and uses it)
  await runner.query(`create table if not exists public.${MIGRATIONS_TABLE} (id serial primary key, "timestamp" bigint not null, name varchar not null)`);
};

/**
 * Marks as applied, without running them, the migrations the hand-written runner applied (their
 * `legacyId` is in public.schema_migrations), in their order, so a database it migrated upgrades
 * without re-running anything. That table is left as it was. Returns the names adopted.
 */
const adoptLegacy = async (runner: QueryRunner, migrations: SqlMigration[]): Promise<string[]> => {
  const [{ present }] = (await runner.query(`select to_regclass('public.${LEGACY_MIGRATIONS_TABLE}') is not null as present`)) as { present: boolean }[];
  if (!present) return [];
  const legacy = new Set(((await runner.query(`select id from public.${LEGACY_MIGRATIONS_TABLE}`)) as { id: string }[]).map((r) => r.id));
  const done = new Set(((await runner.query(`select name from public.${MIGRATIONS_TABLE}`)) as { name: string }[]).map((r) => r.name));
  const adopt = migrations.filter((m) => m.legacyId && legacy.has(m.legacyId) && !done.has(m.name));
  if (!adopt.length) return [];
  await runner.startTransaction();
  try {
    for (const m of adopt) {
      await runner.query(`insert into public.${MIGRATIONS_TABLE} ("timestamp", name) values ($1, $2)`, [timestampOf(m.name), m.name]);
    }
    await runner.commitTransaction();
  } catch (e) {
    await runner.rollbackTransaction().catch(() => undefined);
    throw e;
  }
  return adopt.map((m) => m.name);
};

const executorFor = async (ds: DataSource, runner: QueryRunner) => {
  const { MigrationExecutor } = await import('typeorm');
  const executor = new MigrationExecutor(ds, runner);
  executor.transaction = 'each';
  return executor;
};

export interface MigrateResult {
  /** Migrations run now, in order. */
  applied: string[];
  /** Migrations the hand-written runner had applied, now recorded in TypeORM's table. */
  adopted: string[];
}

/**
 * Applies every pending migration of the list, in timestamp order, each in its own transaction,
 * under an advisory lock so several processes (the migration Job, pods starting) can start together.
 */
export const migrate = async (url: string, migrations: MigrationClass[]): Promise<MigrateResult> =>
  withDataSource(url, migrations, async (ds, runner) => {
    await ensureTable(runner);
    const adopted = await adoptLegacy(runner, migrationInstances(migrations));
    const executor = await executorFor(ds, runner);
    try {
      const applied = await executor.executePendingMigrations();
      return { applied: applied.map((m) => m.name), adopted };
    } catch (e) {
      throw new Error(`migration failed: ${(e as Error).message}`);
    }
  });

/** Reverts the last applied migration (it must be in the list); returns its name, or null when none is applied. */
export const revertLastMigration = async (url: string, migrations: MigrationClass[]): Promise<string | null> =>
  withDataSource(url, migrations, async (ds, runner) => {
    await ensureTable(runner);
    await adoptLegacy(runner, migrationInstances(migrations));
    const rows = (await runner.query(`select name from public.${MIGRATIONS_TABLE} order by id desc limit 1`)) as { name: string }[];
    if (!rows.length) return null;
    const executor = await executorFor(ds, runner);
    await executor.undoLastMigration();
    return rows[0].name;
  });

export interface MigrationState { name: string; legacyId?: string; applied: boolean }

/** Which migrations of the list are applied (counting what the hand-written runner applied). Writes nothing. */
export const migrationStatus = async (url: string, migrations: MigrationClass[]): Promise<MigrationState[]> =>
  withDataSource(url, migrations, async (_ds, runner) => {
    const list = migrationInstances(migrations);
    const names = new Set<string>();
    const [{ typeorm, legacy }] = (await runner.query(
      `select to_regclass('public.${MIGRATIONS_TABLE}') is not null as typeorm, to_regclass('public.${LEGACY_MIGRATIONS_TABLE}') is not null as legacy`,
    )) as { typeorm: boolean; legacy: boolean }[];
    if (typeorm) for (const r of (await runner.query(`select name from public.${MIGRATIONS_TABLE}`)) as { name: string }[]) names.add(r.name);
    const legacyIds = new Set<string>();
    if (legacy) for (const r of (await runner.query(`select id from public.${LEGACY_MIGRATIONS_TABLE}`)) as { id: string }[]) legacyIds.add(r.id);
    return list.map((m) => ({ name: m.name, legacyId: m.legacyId, applied: names.has(m.name) || (!!m.legacyId && legacyIds.has(m.legacyId)) }));
  });
