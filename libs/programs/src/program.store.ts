import { Pool } from 'pg';
import { DEFAULT_SETTINGS, Program, ProgramSettings, Rule, Tier } from '@loyalty/contracts';
import { ProgramRecord } from './program.entity';
import { Repository } from 'typeorm';
import { MigrationClass, sqlMigration, NotifiedCache, configOrm, Tenant, newId, notFound, parseTenantKey, validation } from '@loyalty/platform';

/** How far ahead a sandbox clock may run in total: a century. */
/** A programme nobody may change: nested objects and arrays read-only too. */
export type ReadonlyProgram = DeepReadonly<Program>;
type DeepReadonly<T> = T extends (infer U)[] ? readonly DeepReadonly<U>[] : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T;

const deepFreeze = <T>(v: T): T => {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
};

export const MAX_TEST_CLOCK_OFFSET_MS = 100 * 366 * 86_400_000;

export const Program001_1764000006000 = sqlMigration('Program001_1764000006000', {
  legacyId: 'program-001',
  up: `
      create schema if not exists program;
      create table program.programs (
        id text primary key,
        program_name text not null,
        currency_name text not null,
        settings jsonb not null,
        rules jsonb not null,
        tiers jsonb not null,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      create table program.rule_history (program_id text not null, changed_at timestamptz not null default now(), rules jsonb not null, tiers jsonb not null);
      create table program.test_clocks (program_id text primary key, offset_ms bigint not null default 0);
    `,
  down: `
      drop schema if exists program cascade;
    `,
});

// Every process caches programmes and test clocks; any change, by whoever makes it, is announced
// so that each cache drops the programme (ProgramStore LISTENs on program_changed).
export const Program002_1764000007000 = sqlMigration('Program002_1764000007000', {
  legacyId: 'program-002',
  up: `
      create or replace function program.notify_changed() returns trigger language plpgsql as $fn$
      begin
        perform pg_notify('program_changed', coalesce(new.id, old.id));
        return null;
      end $fn$;
      create or replace function program.notify_clock_changed() returns trigger language plpgsql as $fn$
      begin
        perform pg_notify('program_changed', coalesce(new.program_id, old.program_id));
        return null;
      end $fn$;
      create trigger programs_changed after insert or update or delete on program.programs
        for each row execute function program.notify_changed();
      create trigger test_clocks_changed after insert or update or delete on program.test_clocks
        for each row execute function program.notify_clock_changed();
    `,
  down: `
      drop trigger if exists programs_changed on program.programs;
      drop trigger if exists test_clocks_changed on program.test_clocks;
      drop function if exists program.notify_changed();
      drop function if exists program.notify_clock_changed();
    `,
});

// program.rule_history was written on every rules or tiers change and never read by anything:
// an entry names the rule it earned under (`rule`); nothing explained events from this table.
export const Program003_1764400000000 = sqlMigration('Program003_1764400000000', {
  up: `
      drop table if exists program.rule_history;
    `,
  down: `
      create table if not exists program.rule_history (program_id text not null, changed_at timestamptz not null default now(), rules jsonb not null, tiers jsonb not null);
    `,
});

export const PROGRAM_MIGRATIONS: MigrationClass[] = [
  Program001_1764000006000,
  Program002_1764000007000,
  Program003_1764400000000,
];

type Row = ProgramRecord;
const toProgram = (r: Row): Program => ({
  id: r.id, program_name: r.program_name, currency_name: r.currency_name,
  settings: { ...DEFAULT_SETTINGS, ...r.settings }, rules: r.rules, tiers: r.tiers,
  created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString(),
});

const canonicalJson = (v: unknown): string => {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v ?? null);
};

/** Normalises admin input into stored rules; versions start at 1 and rise on every change of a rule. */
export const normaliseRules = (input: Partial<Rule>[], previous: Rule[] = []): Rule[] =>
  input.map((r, i) => {
    const id = r.id ?? `rule_${i + 1}`;
    const before = previous.find((p) => p.id === id);
    const rule: Rule = {
      id,
      name: r.name ?? id,
      type: r.type ?? 'base',
      version: 1,
      earn_rate_pct: r.earn_rate_pct ?? 0,
      timing: r.timing ?? 'immediate',
      tags: r.tags ?? null,
      min_order_cents: r.min_order_cents ?? null,
      cap_per_order_cents: r.cap_per_order_cents ?? null,
      expiry_months: r.expiry_months ?? null,
      starts_at: r.starts_at ?? null,
      ends_at: r.ends_at ?? null,
      budget_cents: r.budget_cents ?? null,
      applies_to: r.applies_to ?? null,
      amount_cents: r.amount_cents ?? null,
      friend_amount_cents: r.friend_amount_cents ?? null,
    };
    if (before) {
      const { version: _v, ...a } = before;
      const { version: _w, ...b } = rule;
      // canonical comparison: the stored rule came back from jsonb, which reorders keys
      rule.version = canonicalJson(a) === canonicalJson(b) ? before.version : before.version + 1;
    }
    return rule;
  });

export const normaliseTiers = (input: Partial<Tier>[]): Tier[] =>
  input.map((t, i) => ({
    name: t.name ?? `Tier ${i + 1}`,
    level: t.level ?? i + 1,
    threshold_type: t.threshold_type ?? 'spend',
    threshold_value: t.threshold_value ?? 0,
    criteria: t.criteria ?? [],
    criteria_mode: t.criteria_mode ?? 'all',
    window: t.window ?? 'lifetime',
    window_days: t.window_days ?? null,
    earn_multiplier: t.earn_multiplier ?? 1,
    benefits: t.benefits ?? {},
  })).sort((a, b) => a.level - b.level);

/**
 * Programme configuration, shared read-mostly by every service (the admin plane writes it).
 * With `cache`, programmes and test-clock offsets are kept in process and dropped by the
 * program_changed notification that a trigger sends on every change, whoever writes.
 */
export class ProgramStore {
  private readonly cache: NotifiedCache<ReadonlyProgram | null | number> | null;

  /** `cache`: keep programmes in process (the long-running services; close() before the pool ends). */
  constructor(private readonly pool: Pool, options: { cache?: boolean } = {}) {
    this.cache = options.cache ? new NotifiedCache(pool, 'program_changed') : null;
  }

  /** Stops listening (the pool can then end). */
  async close(): Promise<void> {
    await this.cache?.close();
  }

  /** program.programs through its entity (rule history and test clocks stay SQL). */
  private async programs(): Promise<Repository<ProgramRecord>> {
    return (await configOrm(this.pool)).getRepository(ProgramRecord);
  }

  private async updateReturning(id: string, set: Partial<Record<keyof ProgramRecord, unknown>>): Promise<Row> {
    const { raw } = await (await this.programs()).createQueryBuilder().update()
      .set({ ...set, updated_at: () => 'now()' } as never).where('id = :id', { id }).returning('*').execute();
    return (raw as Row[])[0];
  }

  private cached<T extends ReadonlyProgram | null | number>(id: string, what: 'program' | 'clock', read: () => Promise<T>): Promise<T> {
    return this.cache ? (this.cache.get(id, what, read) as Promise<T>) : read();
  }

  async create(input: { program_name: string; currency_name: string; settings?: Partial<ProgramSettings>; rules?: Partial<Rule>[]; tiers?: Partial<Tier>[] }): Promise<Program> {
    const id = newId('P');
    const settings = { ...DEFAULT_SETTINGS, ...(input.settings ?? {}) };
    const rules = normaliseRules(input.rules ?? []);
    const tiers = normaliseTiers(input.tiers ?? []);
    const { raw } = await (await this.programs()).createQueryBuilder().insert()
      .values({ id, program_name: input.program_name, currency_name: input.currency_name, settings, rules, tiers } as ProgramRecord as never).returning('*').execute();
    return toProgram((raw as Row[])[0]);
  }

  async find(id: string): Promise<Program | null> {
    const p = await this.shared(id);
    // callers may adjust what they get: each has its own copy
    return p ? structuredClone(p) as Program : null;
  }

  /** The cached programme itself, frozen (a caller that tried to change it would throw): no copy per call. */
  private shared(id: string): Promise<ReadonlyProgram | null> {
    return this.cached(id, 'program', async () => {
      const row = await (await this.programs()).findOneBy({ id });
      return row ? deepFreeze(toProgram(row)) : null;
    });
  }

  /**
   * The programme behind a tenant key, read-only and shared (no copy): for the hot paths that only
   * look at it (a member's view, the spending rules), where the copy `forTenant` makes was 5 % of a
   * GET's CPU.
   */
  async readOnlyForTenant(tenant: string): Promise<ReadonlyProgram> {
    const p = await this.shared(parseTenantKey(tenant).programId);
    if (!p) throw notFound('programme');
    return p;
  }

  async get(id: string): Promise<Program> {
    const p = await this.find(id);
    if (!p) throw notFound('programme');
    return p;
  }

  /** The programme behind a tenant key (live and sandbox share rules and tiers). */
  forTenant(tenant: string): Promise<Program> {
    return this.get(parseTenantKey(tenant).programId);
  }

  async patch(id: string, input: { program_name?: string; currency_name?: string; settings?: Partial<ProgramSettings> }): Promise<Program> {
    const current = await this.get(id);
    const settings = { ...current.settings, ...(input.settings ?? {}) };
    const row = await this.updateReturning(id, { program_name: input.program_name ?? current.program_name, currency_name: input.currency_name ?? current.currency_name, settings });
    await this.cache?.propagate(id);
    return toProgram(row);
  }

  async putRules(id: string, input: Partial<Rule>[]): Promise<Program> {
    const current = await this.get(id);
    return this.save(id, normaliseRules(input, current.rules), current.tiers);
  }

  async putTiers(id: string, input: Partial<Tier>[]): Promise<Program> {
    const current = await this.get(id);
    return this.save(id, current.rules, normaliseTiers(input));
  }

  private async save(id: string, rules: Rule[], tiers: Tier[]): Promise<Program> {
    const row = await this.updateReturning(id, { rules, tiers });
    await this.cache?.propagate(id); // every process at once (after the commit)
    return toProgram(row);
  }

  /** The programme clock: real time in live mode; real time plus the test clock's offset in the sandbox. */
  async now(tenant: Tenant | string): Promise<Date> {
    const t = typeof tenant === 'string' ? parseTenantKey(tenant) : tenant;
    if (t.mode === 'live') return new Date();
    const offset = await this.cached(t.programId, 'clock', () => this.testClockOffset(t.programId));
    return new Date(Date.now() + offset);
  }

  /**
   * The programme clock read afresh, past the cache: a test clock just advanced by another
   * process may be ahead of a cache whose notification has not arrived yet.
   */
  async nowUncached(tenant: Tenant | string): Promise<Date> {
    const t = typeof tenant === 'string' ? parseTenantKey(tenant) : tenant;
    if (t.mode === 'live') return new Date();
    return new Date(Date.now() + await this.testClockOffset(t.programId));
  }

  private async testClockOffset(programId: string): Promise<number> {
    const { rows } = await this.pool.query<{ offset_ms: string }>('select offset_ms from program.test_clocks where program_id = $1', [programId]);
    return rows.length ? Number(rows[0].offset_ms) : 0;
  }

  /**
   * Moves the sandbox clock forward. The total offset stays within a century: a clock beyond
   * that (2^53 seconds was once accepted) puts dates outside what JavaScript and PostgreSQL
   * hold and broke the sandbox until a wipe. A step past the bound is a 422 and moves nothing.
   */
  async advanceTestClock(programId: string, seconds: number): Promise<Date> {
    if (!Number.isSafeInteger(seconds) || seconds < 1) throw validation([{ path: '/seconds', message: 'seconds must be a positive integer' }]);
    const { rowCount } = await this.pool.query(
      `insert into program.test_clocks (program_id, offset_ms) select $1, $2::bigint where $2::bigint <= $3::bigint
       on conflict (program_id) do update set offset_ms = program.test_clocks.offset_ms + excluded.offset_ms
         where program.test_clocks.offset_ms + excluded.offset_ms <= $3::bigint`,
      [programId, seconds * 1000, MAX_TEST_CLOCK_OFFSET_MS]);
    if (!rowCount) throw validation([{ path: '/seconds', message: 'the test clock may run at most 100 years ahead; wipe the sandbox to start again' }]);
    await this.cache?.propagate(programId); // every process at once
    return this.now({ programId, mode: 'test' });
  }

  /**
   * Every programme's settings with its sandbox clock's offset (0 without one), read afresh: for
   * the periodic sweeps, which ask which tenants have something due by their own clock.
   */
  async clocks(): Promise<{ program_id: string; settings: ProgramSettings; test_offset_ms: number }[]> {
    const { rows } = await this.pool.query<{ id: string; settings: Partial<ProgramSettings>; offset_ms: string }>(
      'select p.id, p.settings, coalesce(c.offset_ms, 0) as offset_ms from program.programs p left join program.test_clocks c on c.program_id = p.id');
    return rows.map((r) => ({ program_id: r.id, settings: { ...DEFAULT_SETTINGS, ...r.settings }, test_offset_ms: Number(r.offset_ms) }));
  }

  async resetTestClock(programId: string): Promise<void> {
    await this.pool.query('delete from program.test_clocks where program_id = $1', [programId]);
    await this.cache?.propagate(programId);
  }
}
