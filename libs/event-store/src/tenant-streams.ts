import { Pool, PoolClient } from 'pg';
import { tenantStreamPattern } from '@loyalty/contracts';
import { deleteTenantRows, parseTenantKey, problem } from '@loyalty/platform';
import { EventStore, Position } from './event-store.port';
import { ProjectionRunner } from './projection-runner';
import { catchUpReadModels } from './read-your-writes';

/**
 * Deletes every stream of one tenant from the PostgreSQL event store (its events, snapshots and
 * stream rows): the sandbox wipe. Answers how many streams there were.
 */
export const deleteTenantStreams = async (db: Pool | PoolClient, tenant: string): Promise<number> => {
  const pattern = tenantStreamPattern(tenant);
  await db.query('delete from es.events where stream_id ~ $1', [pattern]);
  // snapshots are optional (SNAPSHOT_MIGRATIONS): a database without them has none to delete
  const snapshots = await db.query<{ t: string | null }>(`select to_regclass('es.snapshots') as t`);
  if (snapshots.rows[0].t) await db.query('delete from es.snapshots where stream_id ~ $1', [pattern]);
  const r = await db.query('delete from es.streams where stream_id ~ $1', [pattern]);
  return r.rowCount ?? 0;
};

/** A position as it travels in a message (JSON has no bigint). */
export interface WireHead { commit: string; prepare: string }

export const toWire = (p: Position): WireHead => ({ commit: p.commit.toString(), prepare: p.prepare.toString() });

const fromWire = (w: WireHead | null | undefined): Position | null => {
  if (!w || typeof w.commit !== 'string' || typeof w.prepare !== 'string' || !/^\d+$/.test(w.commit) || !/^\d+$/.test(w.prepare)) return null;
  return { commit: BigInt(w.commit), prepare: BigInt(w.prepare) };
};

/**
 * A service's own part of a sandbox wipe, after the tenant's streams are gone: its runners catch
 * up (a batch read before the delete may still write rows of the tenant), then its rows of the
 * tenant are deleted from `tables` (children before parents). Answers the rows deleted.
 */
export const wipeTenantRows = async (
  store: EventStore, pool: Pool, runners: readonly ProjectionRunner[], tables: readonly string[], tenant: string, before?: WireHead | null,
): Promise<number> => {
  if (parseTenantKey(tenant).mode !== 'test') throw problem('rule-ineligible', 'Only a sandbox (test mode) can be wiped');
  // The head the ledger saw before it deleted the streams: once the runners are past it, no batch
  // holding the sandbox's events is still being applied (after the delete, the head may be older
  // than such a batch, so catching up with the head alone could return while it still writes).
  const head = fromWire(before);
  if (head) await Promise.all(runners.map((r) => r.waitFor(head, 10_000).catch(() => undefined)));
  await catchUpReadModels(store, runners, 10_000);
  return deleteTenantRows(pool, tables, tenant);
};
