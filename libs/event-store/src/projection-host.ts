import type { Pool } from 'pg';
import type { EventStore } from './event-store.port';
import { Projection, ProjectionRunner, ProjectionRunnerOptions } from './projection-runner';
import { SnapshotStore } from './snapshots';
import { FoldEvolver, StreamFold } from './stream-fold';

/**
 * The read models of one process, run by ONE ProjectionRunner (one subscription, one transaction per
 * batch for all of them, event by event), whichever service modules the process holds: in the
 * distributed topology a service's own; standalone, every service's. Services that fold the same
 * streams then fold each event once (`shared`), not once per service (the ledger's and the webhook
 * service's member folds were two of the three evolves of every ingested event).
 *
 * One host per event store instance (a process opens one; tests that start several apps get one
 * each). Modules add their projections while the app initialises (onModuleInit) and start the host
 * when it has (onApplicationBootstrap): by then every module has added its own.
 */
export class ProjectionHost {
  private static readonly hosts = new WeakMap<EventStore, ProjectionHost>();

  /** The host of `store` (created on first use). */
  static of(store: EventStore, pool: Pool): ProjectionHost {
    let host = ProjectionHost.hosts.get(store);
    if (!host) {
      host = new ProjectionHost(store, pool);
      ProjectionHost.hosts.set(store, host);
    }
    return host;
  }

  private readonly groups: { projections: readonly Projection[]; options: ProjectionRunnerOptions }[] = [];
  private readonly values = new Map<string, unknown>();
  private started: Promise<ProjectionRunner> | null = null;
  private runner: ProjectionRunner | null = null;

  private constructor(private readonly store: EventStore, private readonly pool: Pool) {}

  /** A module's read models (before start); `options.onApplied` hears of the events new to the first of them. */
  add(projections: readonly Projection[], options: ProjectionRunnerOptions = {}): void {
    if (this.started) throw new Error(`projections ${projections.map((p) => p.name).join(', ')} added after the host started`);
    this.groups.push({ projections, options });
  }

  /** Starts the one runner (every later call gets the same); modules keep it as their runner. */
  start(): Promise<ProjectionRunner> {
    if (!this.started) {
      const projections = this.groups.flatMap((g) => g.projections);
      const hooks = this.groups.filter((g) => g.options.onApplied && g.projections.length)
        .map((g) => ({ projection: g.projections[0].name, onApplied: g.options.onApplied! }));
      const runner = new ProjectionRunner(this.store, this.pool, projections, { hooks });
      this.runner = runner;
      this.started = runner.start().then(() => runner);
    }
    return this.started;
  }

  /** Stops the runner (every module stopping calls it; the first one stops it). */
  async stop(): Promise<void> {
    await this.started?.catch(() => undefined);
    await this.runner?.stop();
  }

  /** A value every module of the process shares under `key` (created by the first to ask). */
  shared<T>(key: string, create: () => T): T {
    if (!this.values.has(key)) this.values.set(key, create());
    return this.values.get(key) as T;
  }
}

/** A fold a process's read models share: the streams it folds, how, and what is kept of the state before each event. */
export interface SharedFoldKind<S, E extends { type: string; data: unknown }, H> {
  key: string;
  prefix: string;
  evolver: FoldEvolver<S, E>;
  head: (state: S) => H;
  /** the state cache's name on /metrics */
  cacheName: string;
}

/** The process's one fold of `kind` (the store's host keeps it; snapshots from `pool`). */
export const sharedFold = <S, E extends { type: string; data: unknown }, H>(store: EventStore, pool: Pool, kind: SharedFoldKind<S, E, H>): StreamFold<S, E, H> =>
  ProjectionHost.of(store, pool).shared(`fold:${kind.key}`, () => new StreamFold<S, E, H>(store, kind.prefix, kind.evolver, kind.head, new SnapshotStore(pool), kind.cacheName));
