import { Pool } from 'pg';
import { EventStore, Projection, ProjectionRunner } from '@loyalty/event-store';
import { LEDGER_MIGRATIONS, LEDGER_PROJECTIONS } from '@loyalty/ledger';
import { AppConfig, MigrationClass, SqlMigration, loadConfig } from '@loyalty/platform';
import { openRuntime } from '@loyalty/runtime';

/** What a service lib's `<SERVICE>_PROJECTIONS(deps)` registry is given. */
export interface RegistryDeps { pool: Pool; store: EventStore; config: AppConfig }

/** Service libs whose read models are rebuilt, besides the ledger; a lib that is not built yet is skipped. */
const SERVICE_LIBS = ['@loyalty/ingest', '@loyalty/redemption', '@loyalty/referral', '@loyalty/webhook'];

const isProjection = (x: unknown): x is Projection =>
  !!x && typeof (x as Projection).name === 'string' && Array.isArray((x as Projection).tables) && typeof (x as Projection).apply === 'function';

/**
 * The projections a module offers: its `*_PROJECTIONS(deps)` registries, or else the exported
 * `…Projection` classes that need no constructor arguments.
 */
export const projectionsOf = (mod: Record<string, unknown>, deps: RegistryDeps): Projection[] => {
  const registries = Object.entries(mod).filter(([k, v]) => k.endsWith('_PROJECTIONS') && typeof v === 'function');
  if (registries.length) return registries.flatMap(([, f]) => (f as (d: RegistryDeps) => unknown[])(deps)).filter(isProjection);
  const out: Projection[] = [];
  for (const [k, v] of Object.entries(mod)) {
    if (!k.endsWith('Projection') || typeof v !== 'function' || (v as { length: number }).length !== 0) continue;
    try {
      const p: unknown = new (v as new () => unknown)();
      if (isProjection(p)) out.push(p);
    } catch {
      // not a projection class after all
    }
  }
  return out;
};

/** Every projection of every service, by name (first registration wins). */
export const allProjections = (deps: RegistryDeps, load: (name: string) => Record<string, unknown> | null = tryRequire): Projection[] => {
  const found = new Map<string, Projection>();
  const add = (ps: Projection[]) => { for (const p of ps) if (!found.has(p.name)) found.set(p.name, p); };
  add(LEDGER_PROJECTIONS({ pool: deps.pool, store: deps.store }));
  for (const lib of SERVICE_LIBS) {
    const mod = load(lib);
    if (mod) add(projectionsOf(mod, deps));
  }
  return [...found.values()];
};

const isMigration = (x: unknown): x is MigrationClass => typeof x === 'function' && x.prototype instanceof SqlMigration;

/** The schemas of every service (their `*_MIGRATIONS` exports), so a rebuild also works on a database never started. */
export const allMigrations = (load: (name: string) => Record<string, unknown> | null = tryRequire): MigrationClass[] => {
  const out: MigrationClass[] = [...LEDGER_MIGRATIONS];
  for (const lib of SERVICE_LIBS) {
    const mod = load(lib);
    if (!mod) continue;
    for (const [k, v] of Object.entries(mod)) {
      if (k.endsWith('_MIGRATIONS') && Array.isArray(v)) out.push(...v.filter(isMigration).filter((m) => !out.includes(m)));
    }
  }
  return out;
};

function tryRequire(name: string): Record<string, unknown> | null {
  try {
    return require(name) as Record<string, unknown>;
  } catch {
    return null;
  }
}

export interface RebuildOptions {
  /** default: DATABASE_URL (decisions §11) */
  databaseUrl?: string;
  /** projection names (e.g. `ledger.members`); default all */
  names?: string[];
  log?: (line: string) => void;
}

export interface RebuildResult { name: string; tables: string[]; ms: number }

/**
 * Drops and rebuilds read models from the event store (architecture "Where state lives"): each
 * projection's tables are emptied with its checkpoint, then every event is replayed into them.
 * Run it with the services stopped (or quiet): a running service keeps applying new events on top.
 */
export const rebuildProjections = async (options: RebuildOptions = {}): Promise<RebuildResult[]> => {
  const base = loadConfig();
  const config: AppConfig = { ...base, databaseUrl: options.databaseUrl ?? base.databaseUrl };
  const { pool, store } = await openRuntime({ config, migrations: allMigrations() });
  const log = options.log ?? (() => undefined);
  try {
    const all = allProjections({ pool, store, config });
    const selected = options.names?.length
      ? options.names.map((n) => {
          const p = all.find((x) => x.name === n);
          if (!p) throw new Error(`unknown projection ${n}; known: ${all.map((x) => x.name).join(', ')}`);
          return p;
        })
      : all;
    const results: RebuildResult[] = [];
    for (const p of selected) {
      const started = Date.now();
      const runner = new ProjectionRunner(store, pool, p);
      await runner.rebuild();
      await runner.stop();
      const r = { name: p.name, tables: p.tables, ms: Date.now() - started };
      log(`rebuilt ${r.name} (${r.tables.join(', ')}) in ${r.ms} ms`);
      results.push(r);
    }
    return results;
  } finally {
    await store.close().catch(() => undefined);
    await pool.end().catch(() => undefined);
  }
};

/** The projection names known to this build, without touching any table. */
export const listProjections = async (databaseUrl?: string): Promise<string[]> => {
  const base = loadConfig();
  const config: AppConfig = { ...base, databaseUrl: databaseUrl ?? base.databaseUrl };
  const { pool, store } = await openRuntime({ config, migrations: allMigrations() });
  try {
    return allProjections({ pool, store, config }).map((p) => p.name);
  } finally {
    await store.close().catch(() => undefined);
    await pool.end().catch(() => undefined);
  }
};
