import { EventStore, Position } from './event-store.port';
import { ProjectionRunner } from './projection-runner';

/**
 * The one read-your-writes policy of the house. Writes never wait for read models: a command's
 * reply is built from the state its decision produced. A read that uses a service's read models
 * first catches them up with every event committed so far, by any process; a projection a
 * service applies itself (the referral rows of its own commands) is applied before the reply
 * instead.
 */

/** The newest committed event, by any process (even one above the subscribers' watermark). */
export const committedHead = (store: EventStore): Promise<Position> => (store.committedHead ? store.committedHead() : store.headPosition());

/**
 * Waits until `runners` have applied every event committed so far. With `timeoutMs` a slow
 * catch-up is given up (the read proceeds on what is there); without, it waits the runners' own limit
 * and fails as they do.
 */
export const catchUpReadModels = async (store: EventStore, runners: readonly ProjectionRunner[], timeoutMs?: number): Promise<void> => {
  if (!runners.length) return;
  const head = await committedHead(store);
  store.poke?.();
  const waiting = Promise.all(runners.map((r) => r.waitFor(head, timeoutMs)));
  await (timeoutMs === undefined ? waiting : waiting.catch(() => undefined));
};

/**
 * A service's read models (the projection runners it starts) under that one policy: what a use
 * case is given when it reads the service's own rows (instead of the store and the runners).
 */
export class ReadModels {
  /** set by the service's module once it has started them */
  runners: ProjectionRunner[] = [];

  /** `catchUpMs`: how long `catchUp()` waits by default before reading what is there (none: the runners' own limit, failing as they do). */
  constructor(readonly store: EventStore, private readonly catchUpMs?: number) {}

  /** Before a read: waits until the read models reflect every event committed so far, by any process. */
  catchUp(timeoutMs = this.catchUpMs): Promise<void> {
    return catchUpReadModels(this.store, this.runners, timeoutMs);
  }

  /** Waits until every runner has applied `position` (an append of this process). */
  async settle(position: Position | null | undefined, timeoutMs?: number): Promise<void> {
    if (!position) return;
    this.store.poke?.();
    await Promise.all(this.runners.map((r) => r.waitFor(position, timeoutMs)));
  }
}
