import { Pool } from 'pg';
import { GroupCommitter } from '@loyalty/event-store';
import type { EventStatusValue, InboundEvent, InboundEventType } from '@loyalty/contracts';
import { ASYNC_COMMIT, pgArray, prepared } from '@loyalty/platform';
import type { Carrier } from '@loyalty/platform';

/** A row of `ingest.events` as the service reads it. */
export interface EventRow {
  seq: string;
  tenant: string;
  id: string;
  idempotency_key: string;
  type: InboundEventType;
  order_ref: string | null;
  partition_key: string;
  payload: InboundEvent;
  status: EventStatusValue;
  error: string | null;
  ledger_entry_ids: string[];
  attempts: number;
  received_at: Date;
  processed_at: Date | null;
}

/** What the submission's reply needs of an event it inserted. */
export type InsertedEventRow = Pick<EventRow, 'seq' | 'id' | 'idempotency_key' | 'type' | 'status'>;

/** What a submission stores of an event (the rest is the queue's). */
export type NewEventRow = Pick<EventRow, 'id' | 'idempotency_key' | 'type' | 'order_ref' | 'partition_key' | 'payload'>;

/** A claimed (running) event: `attempts` is the lease's token; only its holder may finish it. */
export type ClaimedEvent = Pick<EventRow, 'tenant' | 'id' | 'seq' | 'type' | 'payload' | 'received_at' | 'attempts' | 'partition_key'> & {
  /** the trace context and request id of the request that queued it (issue 11) */
  trace?: Carrier | null;
};

export interface ListFilter { status?: string; order_ref?: string; type?: string; beforeSeq?: string | null; limit: number }

const DEADLOCK = '40P01';

/**
 * A claimed event keeps its row's `status` ('queued') and only takes a lease (attempts,
 * locked_until): neither column is indexed, so the claim is a HOT update that writes no index entry
 * (decisions: the ingest queue). What readers see as `running` is a queued row under a lease; a row
 * written as 'running' (before this change, or by hand) counts as leased too.
 */
const LEASED = `(status in ('queued', 'running') and locked_until is not null)`;
/** The row as readers see it: a leased row is `running`. */
const STATUS = `case when ${LEASED} then 'running' else status end as status`;
const COLUMNS = `seq, tenant, id, idempotency_key, type, order_ref, partition_key, payload, ${STATUS},
  error, ledger_entry_ids, attempts, received_at, processed_at`;
const RETENTION = "interval '30 days'";

/**
 * The claim (a function: it plans its own statement), prepared. Its commit does not wait for the disk
 * (ASYNC_COMMIT): a lease lost with a PostgreSQL crash leaves the event to be claimed again.
 */
const CLAIM_SQL = prepared('ingest_claim', `select c.* from ingest.claim_events($1, $2) c cross join ${ASYNC_COMMIT}`);

/**
 * Outcomes, each written only while its caller still holds the lease (one JSON array of outcomes:
 * an array per column had the pg driver escape every element again), by ingest.finish_events
 * (IngestFinish006): a primary-key probe per outcome. Answers the numbers (n) of the outcomes written.
 * Its commit does not wait for the disk (ASYNC_COMMIT): an outcome lost with a PostgreSQL crash puts
 * the event back, and processing it again finds its effects already appended (deterministic ids).
 */
const FINISH_SQL = prepared('ingest_finish', `select f.n from ingest.finish_events($1::jsonb) as f(n) cross join ${ASYNC_COMMIT}`);
/** The newest event of a tenant (events_by_tenant, backwards), prepared. */
const NEWEST_SQL = prepared('ingest_newest', 'select max(seq) as newest from ingest.events where tenant = $1');
/**
 * Accepted events by idempotency key, prepared: one probe of the key index per key. As
 * `idempotency_key = any($2)`, on a queue whose statistics lagged, PostgreSQL read every row of
 * the tenant and compared it with every key.
 */
const FIND_BY_KEYS_SQL = prepared('ingest_find_by_keys',
  `select e.* from unnest($2::text[]) as k(key)
     cross join lateral (
       select ${COLUMNS} from ingest.events where tenant = $1 and idempotency_key = k.key and not key_retired limit 1) e`);

type Outcome = { status: 'completed' | 'failed'; error: string | null; ledger_entry_ids: string[] };
interface Finish { e: ClaimedEvent; outcome: Outcome; processedAt: Date }

/** Every SQL statement of the ingest service: the durable queue and the EventStatus read model are one table. */
export class EventQueueRepository {
  /** Outcomes recorded while one is being written share the next statement (group commit). */
  private readonly finishing = new GroupCommitter<Finish, boolean>((items) => this.finishMany(items));

  /**
   * Per tenant, the seq of its oldest open event when last read: a lower bound of it ever since (see
   * backlogExceeds), read again only when the bound it gives no longer proves the backlog within the limit.
   */
  private readonly oldestOpen = new Map<string, bigint>();

  constructor(readonly pool: Pool) {}

  // ---------- accepting ----------

  async findByKeys(tenant: string, keys: string[]): Promise<EventRow[]> {
    if (keys.length === 0) return [];
    const { rows } = await this.pool.query<EventRow>(FIND_BY_KEYS_SQL([tenant, pgArray(keys)]));
    return rows;
  }

  /**
   * Whether more than `limit` events of the tenant wait (queued or running). First an upper bound
   * from three index probes: every open event of the tenant lies between its oldest open event and
   * its newest event in receipt order (`seq`), so when that span is within the limit, so is the
   * backlog. Only a span past the limit is counted (at most limit + 1 rows): counting every open
   * row on every POST cost PostgreSQL about 7 % of the ingest benchmark with a 10,000-event backlog.
   */
  async backlogExceeds(tenant: string, limit: number): Promise<boolean> {
    // The oldest open event only moves forward (new events take higher seqs; a retried or recovered
    // event was open already), so any earlier reading of it is a lower bound, and the span from it to
    // the newest event still bounds the backlog from above: while that span is within the limit, one
    // probe of the newest event answers. Reading the oldest open event again walks the open events'
    // indexes over the entries of rows finished since the last vacuum (28 ms a reading with a
    // 10,000-event backlog in the ingest benchmark), so it is read only when the stale bound fails:
    // once per `limit` events accepted at most. (It used to be read again every second: 4.5 % of
    // PostgreSQL's statement time during the ingest benchmark.)
    const known = this.oldestOpen.get(tenant);
    if (known !== undefined) {
      const { rows: [r] } = await this.pool.query<{ newest: string | null }>(NEWEST_SQL([tenant]));
      if (r.newest === null || BigInt(r.newest) - known + 1n <= BigInt(limit)) return false;
    }
    const { rows: [span] } = await this.pool.query<{ newest: string | null; oldest: string | null }>(
      `select (select max(seq) from ingest.events where tenant = $1) as newest,
              least((select min(seq) from ingest.events where tenant = $1 and status = 'queued'),
                    (select min(seq) from ingest.events where tenant = $1 and status = 'running')) as oldest`, [tenant]);
    if (span.newest === null) return false;
    // nothing open: whatever opens next comes after the newest event
    const oldest = span.oldest === null ? BigInt(span.newest) + 1n : BigInt(span.oldest);
    this.oldestOpen.set(tenant, oldest);
    if (BigInt(span.newest) - oldest + 1n <= BigInt(limit)) return false;
    const { rows } = await this.pool.query<{ n: number }>(
      `select count(*)::int as n from (
         select 1 from ingest.events where tenant = $1 and status in ('queued', 'running') limit $2
       ) waiting`, [tenant, limit + 1]);
    return rows[0].n > limit;
  }

  /**
   * Inserts new events in the given order (their seq follows it) and returns those that were
   * inserted. A key some other request inserted first (committed or in flight: the unique index
   * makes this statement wait for it) is skipped; the caller reads it back as a replay.
   */
  async insert(tenant: string, events: NewEventRow[], receivedAt: Date, trace: Carrier | null = null): Promise<InsertedEventRow[]> {
    if (events.length === 0) return [];
    const rows = JSON.stringify(events.map((e) => ({ ...e, payload: e.payload })));
    for (let attempt = 1; ; attempt++) {
      try {
        // returns only what the reply needs: the payloads, timestamps and arrays were read back and parsed for nothing.
        // The seqs are drawn in the batch's order; the rows go in in key order, so that two batches
        // sharing keys take them in the same order and never wait for each other in a circle (in the
        // batch's order, ten concurrent batches with keys in opposite orders deadlocked again and again,
        // each deadlock found only after deadlock_timeout, and the five attempts below ran out).
        const { rows: inserted } = await this.pool.query<InsertedEventRow>(
          `insert into ingest.events (seq, tenant, id, idempotency_key, type, order_ref, partition_key, payload, received_at, trace)
           select s.seq, $1, r->>'id', r->>'idempotency_key', r->>'type', r->>'order_ref', r->>'partition_key', r->'payload', $3, $4::jsonb
           from (select nextval('ingest.events_seq_seq') as seq, t.r from jsonb_array_elements($2::jsonb) with ordinality as t(r, n) order by t.n) s
           order by s.r->>'idempotency_key'
           on conflict (tenant, idempotency_key) where not key_retired do nothing
           returning seq, id, idempotency_key, type, ${STATUS}`, [tenant, rows, receivedAt, trace && Object.keys(trace).length ? JSON.stringify(trace) : null]);
        return inserted.sort((a, b) => compareSeq(a.seq, b.seq));
      } catch (e) {
        // A deadlock with another statement (not another batch's insert: see above) is retried.
        if ((e as { code?: string }).code === DEADLOCK && attempt < 5) continue;
        throw e;
      }
    }
  }

  // ---------- reading ----------

  async get(tenant: string, id: string): Promise<EventRow | null> {
    const { rows } = await this.pool.query<EventRow>(`select ${COLUMNS} from ingest.events where tenant = $1 and id = $2`, [tenant, id]);
    return rows[0] ?? null;
  }

  /** Newest first (seq descending), keyset on seq: rows inserted during a walk never shift it. */
  async list(tenant: string, f: ListFilter): Promise<EventRow[]> {
    const params: unknown[] = [tenant];
    let where = 'tenant = $1';
    const add = (sql: string, v: unknown) => { params.push(v); where += ` and ${sql} $${params.length}`; };
    if (f.beforeSeq) add('seq <', f.beforeSeq);
    if (f.status === 'running') where += ` and ${LEASED}`;
    else if (f.status === 'queued') where += ` and status = 'queued' and locked_until is null`;
    // a literal, so that the planner can match the partial index of failed events (events_failed)
    else if (f.status === 'failed' || f.status === 'completed') where += ` and status = '${f.status}'`;
    else if (f.status) add('status =', f.status);
    if (f.order_ref) add('order_ref =', f.order_ref);
    if (f.type) add('type =', f.type);
    params.push(f.limit);
    const { rows } = await this.pool.query<EventRow>(
      `select ${COLUMNS} from ingest.events where ${where} order by seq desc limit $${params.length}`, params);
    return rows;
  }

  /** Sandbox wipe: every event of the tenant. */
  async deleteTenant(tenant: string): Promise<number> {
    const { rowCount } = await this.pool.query('delete from ingest.events where tenant = $1', [tenant]);
    return rowCount ?? 0;
  }

  // ---------- processing ----------

  /**
   * Claims up to `n` queued events whose backoff has passed and that are the oldest unfinished
   * event of their partition (order or customer): so two events of one order never run at once,
   * and they run in receipt order. Locked rows are skipped, so workers in several processes share
   * the queue.
   */
  async claim(n: number, leaseMs: number): Promise<ClaimedEvent[]> {
    // ingest.claim_events (IngestLeases003): the oldest open event of each partition, in seq order, leased
    const { rows } = await this.pool.query<ClaimedEvent>(CLAIM_SQL([n, leaseMs]));
    return rows.sort((a, b) => compareSeq(a.seq, b.seq));
  }

  /** Records the ledger's outcome, if the caller still holds the lease. */
  finish(e: ClaimedEvent, outcome: Outcome, processedAt: Date): Promise<boolean> {
    return this.finishing.submit({ e, outcome, processedAt });
  }

  /** Many outcomes in one statement; each row is updated only while its caller still holds the lease. */
  private async finishMany(items: Finish[]): Promise<boolean[]> {
    const outcomes = JSON.stringify(items.map((i, n) => ({
      n: n + 1, tenant: i.e.tenant, id: i.e.id, attempts: i.e.attempts, status: i.outcome.status, error: i.outcome.error,
      ids: i.outcome.ledger_entry_ids, processed_at: i.processedAt.toISOString(),
    })));
    const { rows } = await this.pool.query<{ n: number }>(FINISH_SQL([outcomes]));
    const done = new Set(rows.map((r) => r.n));
    return items.map((_, i) => done.has(i + 1));
  }

  /** Back to the queue after a retryable failure, not to be claimed for `delayMs`. */
  async retryLater(e: ClaimedEvent, error: string, delayMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `update ingest.events set status = 'queued', error = $4, locked_until = null,
              available_at = now() + make_interval(secs => $5::float8 / 1000)
       where tenant = $1 and id = $2 and attempts = $3 and ${LEASED}`,
      [e.tenant, e.id, e.attempts, error, delayMs]);
    return (rowCount ?? 0) > 0;
  }

  /**
   * Running rows whose lease lapsed belong to a crashed (or stuck) worker: they go back to the
   * queue, or fail once they have used up their attempts. Returns how many rows it touched.
   */
  async recoverLapsedLeases(maxAttempts: number): Promise<number> {
    const { rowCount } = await this.pool.query(
      `update ingest.events
          set status = case when attempts >= $1 then 'failed' else 'queued' end,
              error = case when attempts >= $1 then 'processing did not finish after ' || attempts || ' attempts (worker lost)' else error end,
              processed_at = case when attempts >= $1 then now() else processed_at end,
              available_at = now(), locked_until = null
        where status in ('queued', 'running') and locked_until < now()`, [maxAttempts]);
    return rowCount ?? 0;
  }

  /**
   * Queue depth by programme mode (issue 11, read when /metrics is scraped): queued and running
   * events, and the age of the oldest queued one by the wall clock. Uses the partial indexes on
   * open rows only.
   */
  async depthByMode(): Promise<{ mode: 'live' | 'test'; queued: number; running: number; oldest_queued_age_s: number }[]> {
    const { rows } = await this.pool.query<{ mode: 'live' | 'test'; queued: number; running: number; oldest_queued_age_s: number }>(
      `select case when tenant like '%\\_test' then 'test' else 'live' end as mode,
              count(*) filter (where not ${LEASED})::int as queued,
              count(*) filter (where ${LEASED})::int as running,
              coalesce(extract(epoch from now() - min(queued_at) filter (where not ${LEASED})), 0)::float8 as oldest_queued_age_s
         from ingest.events where status in ('queued', 'running') group by 1`);
    return rows;
  }

  /** After the 30-day retention an idempotency key may be used again (interface-spec "Limits"). */
  async retireExpiredKeys(): Promise<number> {
    const { rowCount } = await this.pool.query(
      `update ingest.events set key_retired = true
        where not key_retired and status in ('completed', 'failed') and received_at < now() - ${RETENTION}`);
    return rowCount ?? 0;
  }
}

/** bigserial values arrive as strings; compare them as integers. */
export const compareSeq = (a: string, b: string): number => {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
};
