import { Pool } from 'pg';
import { GATEWAY_MIGRATIONS } from '@loyalty/gateway';
import { LEDGER_MIGRATIONS } from '@loyalty/ledger';
import { AppConfig, MigrationClass, SqlMigration, loadConfig, migrate, migrationInstances, migrationStatus, revertLastMigration } from '@loyalty/platform';
import { prepareSchema, processMigrations } from '@loyalty/runtime';
import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { INGEST_MIGRATIONS } from '@loyalty/ingest';
import { REDEMPTION_MIGRATIONS } from '@loyalty/redemption';
import { REFERRAL_MIGRATIONS } from '@loyalty/referral';
import { WEBHOOK_MIGRATIONS } from '@loyalty/webhook';
import { ALL_MIGRATIONS } from './all-migrations';

/**
 * The hand-written runner that applied migrations before TypeORM (libs/platform/src/db.ts until
 * issue 11), verbatim but for the type: the databases it migrated must upgrade without re-running
 * anything. Fed with each migration's legacy id and its SQL (the same text it ran).
 */
interface LegacyMigration { id: string; sql: string }
const legacyMigrate = async (pool: Pool, migrations: LegacyMigration[]): Promise<void> => {
  const client = await pool.connect();
  try {
    await client.query('select pg_advisory_lock(7412001)');
    await client.query('create table if not exists public.schema_migrations (id text primary key, applied_at timestamptz not null default now())');
    const { rows } = await client.query<{ id: string }>('select id from public.schema_migrations');
    const done = new Set(rows.map((r) => r.id));
    for (const m of migrations) {
      if (done.has(m.id)) continue;
      await client.query('begin');
      try {
        await client.query(m.sql);
        await client.query('insert into public.schema_migrations (id) values ($1)', [m.id]);
        await client.query('commit');
      } catch (e) {
        await client.query('rollback');
        throw new Error(`migration ${m.id} failed: ${(e as Error).message}`);
      }
    }
  } finally {
    await client.query('select pg_advisory_unlock(7412001)').catch(() => undefined);
    client.release();
  }
};
/** In the order the old runner applied them: the list as composed (not sorted by timestamp); migrations added since it was replaced (no legacy id) it never knew. */
const asLegacy = (list: MigrationClass[]): LegacyMigration[] =>
  [...new Set(list)].map((M) => new M()).filter((m) => m.legacyId).map((m) => ({ id: m.legacyId!, sql: (m as unknown as { upSql: string }).upSql }));

/** Everything a schema is made of, as sorted text: columns, indexes, functions, triggers. */
const fingerprint = async (pool: Pool): Promise<string> => {
  const { rows } = await pool.query<{ f: string }>(`
    select string_agg(x, E'\\n' order by x) as f from (
      select format('column %s.%s.%s %s %s %s', table_schema, table_name, column_name, data_type, is_nullable, column_default) as x
        from information_schema.columns
        where table_schema not in ('pg_catalog', 'information_schema') and table_name not in ('typeorm_migrations', 'schema_migrations')
      union all
      select format('index %s', indexdef) from pg_indexes
        where schemaname not in ('pg_catalog') and tablename not in ('typeorm_migrations', 'schema_migrations')
      union all
      select format('function %s.%s(%s) %s', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid), md5(p.prosrc))
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname not in ('pg_catalog', 'information_schema')
      union all
      select format('trigger %s %s', tgrelid::regclass, tgname) from pg_trigger where not tgisinternal
    ) s`);
  return rows[0].f ?? '';
};
const schemas = async (pool: Pool): Promise<string[]> =>
  (await pool.query<{ nspname: string }>(`select nspname from pg_namespace where nspname in ('es', 'program', 'gateway', 'ledger', 'ingest', 'redemption', 'webhook', 'referral') order by 1`)).rows.map((r) => r.nspname);
const recorded = async (pool: Pool): Promise<string[]> =>
  (await pool.query<{ name: string }>('select name from public.typeorm_migrations order by id')).rows.map((r) => r.name);

/** The old standalone composition (apps/standalone/src/start.ts): gateway, ledger, then the services. */
const SERVICE_MIGRATIONS = [...INGEST_MIGRATIONS, ...REDEMPTION_MIGRATIONS, ...WEBHOOK_MIGRATIONS, ...REFERRAL_MIGRATIONS];

describe('schema migrations (TypeORM)', () => {
  const dbs: TestDatabase[] = [];
  const fresh = async (name: string): Promise<TestDatabase> => {
    const db = await createTestDatabase(name);
    dbs.push(db);
    return db;
  };
  afterAll(async () => {
    await Promise.all(dbs.map((d) => d.drop()));
  });

  const names = migrationInstances(ALL_MIGRATIONS).map((m) => m.name);
  /** The old runner's migrations, and those added after it was replaced (they come after them). */
  const legacyNames = migrationInstances(ALL_MIGRATIONS).filter((m) => m.legacyId).map((m) => m.name);
  const addedNames = names.filter((n) => !legacyNames.includes(n));
  const LEGACY_MIGRATIONS = ALL_MIGRATIONS.filter((M) => new M().legacyId);

  it('knows every migration once, in the order the old runner applied them, each with its legacy id and a down', () => {
    const all = migrationInstances(ALL_MIGRATIONS);
    const list = all.filter((m) => m.legacyId);
    expect(list).toHaveLength(18);
    expect(all.map((m) => m.name)).toEqual([...legacyNames, ...addedNames]);
    expect(list.map((m) => m.legacyId)).toEqual([
      'event-store-001', 'event-store-002', 'event-store-003', 'projections-001', 'snapshots-001', 'program-001', 'program-002',
      'gateway-001', 'gateway-002', 'gateway-003', 'ledger-001', 'ledger-time-001', 'ledger-orders-001', 'ledger-finance-001',
      'ingest-001', 'redemption-001', 'webhook-001', 'referral-001',
    ]);
    for (const m of all) expect((m as unknown as { downSql: string }).downSql.trim()).not.toBe('');
  });

  it('refuses a migration whose name does not end in a timestamp, and two with one name', () => {
    class NoStamp extends SqlMigration { readonly name = 'NoStamp'; protected readonly upSql = 'select 1'; protected readonly downSql = 'select 1'; }
    class Twin1 extends SqlMigration { readonly name = 'Twin_1999999999999'; protected readonly upSql = 'select 1'; protected readonly downSql = 'select 1'; }
    class Twin2 extends SqlMigration { readonly name = 'Twin_1999999999999'; protected readonly upSql = 'select 1'; protected readonly downSql = 'select 1'; }
    expect(() => migrationInstances([NoStamp])).toThrow(/13-digit timestamp/);
    expect(() => migrationInstances([Twin1, Twin2])).toThrow(/two migrations are named Twin_1999999999999/);
  });

  it('a fresh database gets every migration once, in order; a second run applies nothing', async () => {
    const db = await fresh('mig_fresh');
    const first = await migrate(db.url, ALL_MIGRATIONS);
    expect(first).toEqual({ applied: names, adopted: [] });
    expect(await recorded(db.pool)).toEqual(names);
    expect(await schemas(db.pool)).toEqual(['es', 'gateway', 'ingest', 'ledger', 'program', 'redemption', 'referral', 'webhook']);
    expect(await migrate(db.url, ALL_MIGRATIONS)).toEqual({ applied: [], adopted: [] });
    expect((await migrationStatus(db.url, ALL_MIGRATIONS)).every((m) => m.applied)).toBe(true);
    // no bookkeeping of the old runner appears on a database it never touched
    expect((await db.pool.query(`select to_regclass('public.schema_migrations') as t`)).rows[0].t).toBeNull();
  });

  it('a database the old runner migrated upgrades without re-running anything, to the same schema', async () => {
    const reference = await fresh('mig_reference');
    await migrate(reference.url, LEGACY_MIGRATIONS);
    const latest = await fresh('mig_latest');
    await migrate(latest.url, ALL_MIGRATIONS);
    const old = await fresh('mig_legacy');
    // the standalone composition of the old runner: core, gateway, ledger, the services
    await legacyMigrate(old.pool, asLegacy(processMigrations([...GATEWAY_MIGRATIONS, ...LEDGER_MIGRATIONS, ...SERVICE_MIGRATIONS])));
    const before = await fingerprint(old.pool);
    expect(before).toBe(await fingerprint(reference.pool));
    // rows the upgrade must keep (a re-run of event-store-001 would fail on them; of ledger-001 too)
    await old.pool.query(`insert into es.streams values ('member-x', 0)`);

    const result = await migrate(old.url, ALL_MIGRATIONS);
    // what the old runner applied is adopted; what was added since is applied
    expect(result.applied).toEqual(addedNames);
    expect(result.adopted).toEqual(legacyNames);
    expect(await recorded(old.pool)).toEqual(names);
    expect(await fingerprint(old.pool)).toBe(await fingerprint(latest.pool));
    expect((await old.pool.query('select count(*)::int as n from es.streams')).rows[0].n).toBe(1);
    // the old bookkeeping stays as it was
    expect((await old.pool.query('select count(*)::int as n from public.schema_migrations')).rows[0].n).toBe(18);
    expect(await migrate(old.url, ALL_MIGRATIONS)).toEqual({ applied: [], adopted: [] });
  });

  it('a database the old runner migrated in part (distributed: only the gateway had started) adopts that part and applies the rest', async () => {
    const db = await fresh('mig_partial');
    await legacyMigrate(db.pool, asLegacy(processMigrations(GATEWAY_MIGRATIONS)));
    const status = await migrationStatus(db.url, ALL_MIGRATIONS);
    expect(status.filter((m) => m.applied).map((m) => m.legacyId)).toEqual([
      'event-store-001', 'event-store-002', 'event-store-003', 'projections-001', 'snapshots-001', 'program-001', 'program-002', 'gateway-001', 'gateway-002', 'gateway-003',
    ]);
    // the ledger process starts first after the upgrade: its own subset only (its own migrations and
    // the shared event-store and programme migrations added since the old runner)
    const ledger = await migrate(db.url, processMigrations(LEDGER_MIGRATIONS));
    expect(ledger.adopted).toHaveLength(7);
    expect(ledger.applied).toEqual(names.filter((n) => /^Ledger/.test(n) || (/^(Program|EventStore)/.test(n) && addedNames.includes(n))));
    const rest = await migrate(db.url, ALL_MIGRATIONS);
    // the gateway's migrations the old runner applied are adopted; the gateway's added since are applied with the other services'
    expect(rest.adopted).toEqual(names.filter((n) => /^Gateway/.test(n) && !addedNames.includes(n)));
    expect(rest.applied).toEqual(names.filter((n) => /^(Ingest|Redemption|Webhook|Referral)/.test(n) || (/^Gateway/.test(n) && addedNames.includes(n))));
    expect(new Set(await recorded(db.pool))).toEqual(new Set(names));
  });

  it('processes starting together take turns (advisory lock): each migration runs once', async () => {
    const db = await fresh('mig_race');
    const runs = await Promise.all([migrate(db.url, ALL_MIGRATIONS), migrate(db.url, ALL_MIGRATIONS), migrate(db.url, processMigrations(LEDGER_MIGRATIONS))]);
    expect(runs.flatMap((r) => r.applied).sort()).toEqual([...names].sort());
    expect(await recorded(db.pool)).toHaveLength(names.length);
  });

  it('down reverts the last migration each time, to an empty database; up applies them all again', async () => {
    const db = await fresh('mig_down');
    await migrate(db.url, ALL_MIGRATIONS);
    const reverted: string[] = [];
    for (;;) {
      const r = await revertLastMigration(db.url, ALL_MIGRATIONS);
      if (!r) break;
      reverted.push(r);
    }
    expect(reverted).toEqual([...names].reverse());
    expect(await schemas(db.pool)).toEqual([]);
    expect(await fingerprint(db.pool)).toBe('');
    expect((await migrate(db.url, ALL_MIGRATIONS)).applied).toEqual(names);
  });

  it('LOYALTY_MIGRATIONS=check: a process refuses to start while a migration is pending, and starts once the Job ran', async () => {
    const db = await fresh('mig_check');
    const config: AppConfig = { ...loadConfig({}), databaseUrl: db.url, migrations: 'check' };
    const own = processMigrations(LEDGER_MIGRATIONS);
    await expect(prepareSchema(config, own)).rejects.toThrow(new RegExp(`^${migrationInstances(own).length} schema migration\\(s\\) pending .*run the migration Job`));
    expect((await db.pool.query(`select to_regclass('es.events') as t`)).rows[0].t).toBeNull();
    await migrate(db.url, ALL_MIGRATIONS);
    await expect(prepareSchema(config, own)).resolves.toBeUndefined();
    expect(loadConfig({ LOYALTY_MIGRATIONS: 'check' }).migrations).toBe('check');
    expect(loadConfig({}).migrations).toBe('run');
    expect(() => loadConfig({ LOYALTY_MIGRATIONS: 'later' })).toThrow(/LOYALTY_MIGRATIONS/);
  });
});
