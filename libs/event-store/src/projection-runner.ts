import { Pool, PoolClient } from 'pg';
import { MigrationClass, prepared, sqlMigration } from '@loyalty/platform';
import { EventStore, Position, RecordedEvent, START, Subscription, SubscriptionFilter, comparePositions, matchesFilter, positionToString } from './event-store.port';

export const Projections001_1764000004000 = sqlMigration('Projections001_1764000004000', {
  legacyId: 'projections-001',
  up: `create schema if not exists es;
          create table if not exists es.checkpoints (name text primary key, commit_pos text not null, prepare_pos text not null, updated_at timestamptz not null default now());`,
  down: `
      drop table if exists es.checkpoints;
    `,
});

export const PROJECTION_MIGRATIONS: MigrationClass[] = [
  Projections001_1764000004000,
];

/** A read model: the events it handles and how each changes its rows, inside the runner's transaction. */
export interface Projection {
  name: string;
  filter?: SubscriptionFilter;
  /** Tables the projection owns, truncated by a rebuild. */
  tables: string[];
  apply(tx: PoolClient, event: RecordedEvent): Promise<void>;
  /** Called at the start of each batch's transaction with the batch's events (e.g. to drop what it cached for the previous batch, or to read ahead). */
  beforeBatch?(tx: PoolClient, events: readonly RecordedEvent[]): void | Promise<void>;
  /** Called after every event of the batch was applied, in the same transaction: a projection that stages its rows writes them here, set-based. */
  afterBatch?(tx: PoolClient): Promise<void>;
  /**
   * Called when a batch's transaction was rolled back (the batch is applied again later): a
   * projection that remembers what it wrote, to skip writing it again, forgets what it learnt from
   * this batch.
   */
  discard?(): void;
  /** Called when a rebuild is about to empty the projection's tables: a projection that remembers rows as written forgets them. */
  rebuilding?(): void;
}

/**
 * How long a runner with nobody waiting lets new events gather before reading them (ms;
 * LOYALTY_PROJECTION_LINGER_MS, default 100). Each batch costs a transaction of five statements
 * per runner whatever its size, so under a steady stream of writes a longer linger means fewer,
 * larger batches; a reader that needs the read model current (catchUp) cuts the linger short.
 */
const LINGER_MS = Math.max(0, Number(process.env.LOYALTY_PROJECTION_LINGER_MS ?? 100) || 0);

const earliest = (ps: Position[]): Position => ps.reduce((a, b) => (comparePositions(a, b) <= 0 ? a : b));

/** How long a runner that skipped events waits before writing its checkpoint past them (ms): at most one write a second, however often it skips. */
const SKIP_CHECKPOINT_MS = 1_000;

/**
 * Runs one or more projections (a service's read models) from their checkpoints: each batch of
 * events, applied to every projection, and the new checkpoints are written in ONE transaction, so
 * each read model is exactly-once although delivery is at-least-once. Several projections share
 * one subscription and one transaction per batch (not one each: that multiplied the reads, polls
 * and commits per event); each keeps its own checkpoint, so one can be rebuilt alone.
 */
export interface ProjectionRunnerOptions {
  /** After each batch committed: the events in it that were new to the first projection (issue 11: the ledger counts points here). */
  onApplied?: (events: readonly RecordedEvent[]) => void;
  /** The same for other projections of the runner (a ProjectionHost runs several services' read models): each hears of the events new to its `projection`. */
  hooks?: readonly { projection: string; onApplied: (events: readonly RecordedEvent[]) => void }[];
}


/** A batch's checkpoint statements, prepared (es.checkpoints holds a row per projection: any plan reads it cheaply). */
const LOCK_CHECKPOINTS_SQL = prepared('es_checkpoints_lock',
  `insert into es.checkpoints (name, commit_pos, prepare_pos) select n, '0', '0' from unnest($1::text[]) as t(n) order by n
   on conflict (name) do update set name = excluded.name returning name, commit_pos, prepare_pos`);
const MOVE_CHECKPOINTS_SQL = prepared('es_checkpoints_move',
  `update es.checkpoints c set commit_pos = t.c, prepare_pos = t.p, updated_at = now()
   from unnest($1::text[], $2::text[], $3::text[]) as t(n, c, p) where c.name = t.n`);

export class ProjectionRunner {
  /** The runners started in this process and not stopped (every service's, in the standalone mode): /metrics and /readyz report their lag. */
  static readonly running = new Set<ProjectionRunner>();

  /**
   * Waits until every runner of this process has applied `target` (errors and timeouts ignored):
   * for an operation that must see no read-model row written after it from older events (the
   * sandbox wipe), whichever service's runner writes it.
   */
  static async settleAll(target: Position, timeoutMs = 10_000): Promise<void> {
    await Promise.all([...ProjectionRunner.running].map((r) => r.waitFor(target, timeoutMs).catch(() => undefined)));
  }

  private sub: Subscription | null = null;
  private position: Position = START;
  private waiters: { target: Position; resolve: () => void }[] = [];
  lastError: unknown = null;
  readonly projections: readonly Projection[];

  constructor(private readonly store: EventStore, private readonly pool: Pool, projections: Projection | readonly Projection[], private readonly options: ProjectionRunnerOptions = {}) {
    this.projections = Array.isArray(projections) ? [...projections] : [projections as Projection];
    if (!this.projections.length) throw new Error('a ProjectionRunner needs at least one projection');
    this.hooks = [...(options.onApplied ? [{ projection: this.projections[0].name, onApplied: options.onApplied }] : []), ...(options.hooks ?? [])];
  }

  /** Who hears of each committed batch (`onApplied` and `hooks`), with the projection whose new events they get. */
  private readonly hooks: NonNullable<ProjectionRunnerOptions['hooks']>;

  /** The first (or only) projection. */
  get projection(): Projection { return this.projections[0]; }

  get names(): string[] { return this.projections.map((p) => p.name); }

  /**
   * How far behind the log this runner is: events it has not applied and the age of the oldest (0
   * and 0 when caught up). Counted by the store when it can (PostgreSQL), else read (up to 1,000).
   */
  async lag(): Promise<{ events: number; seconds: number }> {
    const at = this.position;
    if (comparePositions(at, await this.store.headPosition()) >= 0) return { events: 0, seconds: 0 };
    if (this.store.lagAfter) return this.store.lagAfter(at);
    const pending = await this.store.readAll(at, 1_000);
    if (!pending.length) return { events: 0, seconds: 0 };
    return { events: pending.length, seconds: Math.max(0, (Date.now() - pending[0].createdAt.getTime()) / 1000) };
  }

  async start(): Promise<void> {
    const { rows } = await this.pool.query<{ name: string; commit_pos: string; prepare_pos: string }>(
      'select name, commit_pos, prepare_pos from es.checkpoints where name = any($1::text[])', [this.names]);
    // the slowest projection decides where reading resumes; the others skip what they already have
    const positions = this.names.map((n) => {
      const r = rows.find((x) => x.name === n);
      return r ? { commit: BigInt(r.commit_pos), prepare: BigInt(r.prepare_pos) } : START;
    });
    this.position = earliest(positions);
    // A runner of one filtered projection reads only the events it takes when the store reports how
    // far it has looked past the others (onSkipped): the runner's position must move past events
    // the projection ignores, or a waiter for such an event's position would never be released.
    // Several projections read everything (their filters do not combine into one), and so does a
    // store that cannot report skips. Skips reach the stored checkpoint at most once a second (its
    // row says how far the read model is, for whoever looks: operators, the rebuild).
    const only = this.projections.length === 1 ? this.projections[0] : null;
    const filter = only?.filter && this.store.reportsSkipped ? only.filter : undefined;
    this.sub = this.store.subscribe({
      from: this.position,
      filter,
      onSkipped: filter ? (to) => this.skipped(to) : undefined,
      onEvents: (events) => this.applyBatch(events),
      onError: (e) => { this.lastError = e; },
      // Projections write set-based at the end of each batch (afterBatch), so even a large batch is a
      // short transaction (a long one would hold back pg_snapshot_xmin, hiding new appends from every
      // subscriber until it commits).
      batchSize: 500,
      // nobody waiting: let a burst of appends gather into one batch (one transaction for many events)
      linger: () => (this.waiters.length ? 0 : LINGER_MS),
    });
    ProjectionRunner.running.add(this);
  }

  async stop(): Promise<void> {
    ProjectionRunner.running.delete(this);
    await this.sub?.stop();
    this.sub = null;
    await this.writeSkip();
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }

  get checkpoint(): Position { return this.position; }

  /** Resolves once the read model reflects everything up to `target` (read-your-writes). */
  waitFor(target: Position, timeoutMs = 10_000): Promise<void> {
    if (comparePositions(this.position, target) >= 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`projection ${this.names.join('+')} did not reach ${positionToString(target)} in ${timeoutMs} ms`));
      }, timeoutMs);
      const done = () => { clearTimeout(t); resolve(); };
      this.waiters.push({ target, resolve: done });
      this.sub?.hurry?.();
    });
  }

  /** The store read past events the projection does not take, up to `to`: nothing to apply, waiters up to there are released. */
  private skipped(to: Position): void {
    if (comparePositions(to, this.position) <= 0) return;
    this.position = to;
    this.releaseReady();
    this.skipTo = to;
    if (!this.skipTimer) {
      this.skipTimer = setTimeout(() => void this.writeSkip(), SKIP_CHECKPOINT_MS);
      this.skipTimer.unref();
    }
  }

  /** A skip not yet in the checkpoint, its timer, and the write under way. */
  private skipTo: Position | null = null;
  private skipTimer: NodeJS.Timeout | null = null;
  private skipWrite: Promise<void> = Promise.resolve();

  /**
   * Moves the checkpoint forward to the last skip (never back: a batch or a replica may be further;
   * the row is locked by a batch being applied, so this waits for it). Best effort: a failure leaves
   * the next batch or skip to move it.
   */
  private writeSkip(): Promise<void> {
    if (this.skipTimer) clearTimeout(this.skipTimer);
    this.skipTimer = null;
    const to = this.skipTo;
    this.skipTo = null;
    if (!to) return this.skipWrite;
    this.skipWrite = this.skipWrite.then(() => this.pool.query(
      `insert into es.checkpoints as c (name, commit_pos, prepare_pos) select n, $2, $3 from unnest($1::text[]) as t(n) order by n
       on conflict (name) do update set commit_pos = excluded.commit_pos, prepare_pos = excluded.prepare_pos, updated_at = now()
       where (c.commit_pos::numeric, c.prepare_pos::numeric) < (excluded.commit_pos::numeric, excluded.prepare_pos::numeric)`,
      [[...this.names].sort(), to.commit.toString(), to.prepare.toString()]).then(() => undefined, () => undefined));
    return this.skipWrite;
  }

  private releaseReady(): void {
    const ready = this.waiters.filter((w) => comparePositions(this.position, w.target) >= 0);
    this.waiters = this.waiters.filter((w) => comparePositions(this.position, w.target) < 0);
    for (const w of ready) w.resolve();
  }

  /** Empties the projection's tables and checkpoint, then replays the whole store into them. */
  async rebuild(): Promise<void> {
    // Not stop(): that releases waiters, and the rows they wait for are about to be emptied and replayed.
    await this.sub?.stop();
    this.sub = null;
    // a skip not yet written must not land after the checkpoints are deleted (the replay would start there)
    if (this.skipTimer) clearTimeout(this.skipTimer);
    this.skipTimer = null;
    this.skipTo = null;
    await this.skipWrite;
    for (const p of this.projections) p.rebuilding?.();
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      for (const t of this.projections.flatMap((p) => p.tables)) await client.query(`truncate ${t}`);
      await client.query('delete from es.checkpoints where name = any($1::text[])', [this.names]);
      await client.query('commit');
    } catch (e) {
      await client.query('rollback');
      throw e;
    } finally {
      client.release();
    }
    this.position = START;
    let batch: RecordedEvent[];
    do {
      batch = await this.store.readAll(this.position, 1000);
      if (batch.length) await this.applyBatch(batch);
    } while (batch.length);
    await this.start();
  }

  private async applyBatch(events: RecordedEvent[]): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      // Lock the projections' checkpoint rows (in name order, as every replica does) and skip what is
      // already applied: another runner of the same projections (a replica) may have got there first,
      // and exactly-once must hold for it too.
      const names = [...this.names].sort();
      const { rows } = await client.query<{ name: string; commit_pos: string; prepare_pos: string }>(LOCK_CHECKPOINTS_SQL([names]));
      const stored = new Map(rows.map((r) => [r.name, { commit: BigInt(r.commit_pos), prepare: BigInt(r.prepare_pos) } as Position]));
      const fresh = (p: Projection) => events.filter((e) => comparePositions(e.position, stored.get(p.name)!) > 0 && matchesFilter(e, p.filter));
      for (const p of this.projections) await p.beforeBatch?.(client, fresh(p));
      for (const e of events) {
        for (const p of this.projections) {
          if (comparePositions(e.position, stored.get(p.name)!) > 0 && matchesFilter(e, p.filter)) await p.apply(client, e);
        }
      }
      for (const p of this.projections) await p.afterBatch?.(client);
      const batchEnd = events[events.length - 1].position;
      const lasts = names.map((n) => {
        const st = stored.get(n)!;
        return comparePositions(batchEnd, st) > 0 ? batchEnd : st;
      });
      await client.query(MOVE_CHECKPOINTS_SQL([names, lasts.map((l) => l.commit.toString()), lasts.map((l) => l.prepare.toString())]));
      await client.query('commit');
      this.position = earliest(lasts);
      this.lastError = null;
      for (const h of this.hooks) {
        const from = stored.get(h.projection);
        const applied = from ? events.filter((e) => comparePositions(e.position, from) > 0) : [];
        try { if (applied.length) h.onApplied(applied); } catch { /* an observer never fails a committed batch */ }
      }
    } catch (e) {
      await client.query('rollback').catch(() => undefined);
      for (const p of this.projections) p.discard?.();
      throw e;
    } finally {
      client.release();
    }
    this.releaseReady();
  }
}
