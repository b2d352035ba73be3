import { EventStore, Position } from './event-store.port';
import { ProjectionRunner } from './projection-runner';

/**
 * The one read-your-writes policy of the house. Writes never wait for read models: a command's
 * reply is built from the state its decision produced. A read that uses a service's read models
 * first catches them up with every event committed so far, by any process; a projection a
 * service applies itself (the redemption and referral rows of its own commands) is applied before
 * the reply instead.
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
