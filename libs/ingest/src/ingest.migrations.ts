import { MigrationClass, sqlMigration } from '@loyalty/platform';

export const Ingest001_1764000015000 = sqlMigration('Ingest001_1764000015000', {
  legacyId: 'ingest-001',
  up: `
      create schema if not exists ingest;
      -- The durable event queue and the EventStatus read model in one table: a row is an accepted
      -- event; the worker moves it queued → running → completed | failed.
      create table ingest.events (
        seq bigserial not null unique,                -- receipt order: per-order processing order and list cursors
        tenant text not null,
        id text not null,                             -- EV-…
        idempotency_key text not null,
        key_retired boolean not null default false,   -- set after the 30-day retention: the key may be used again
        type text not null,
        order_ref text,
        partition_key text not null,                  -- order:<order_ref> or customer:<email>: never two at once, in seq order
        payload jsonb not null,                       -- the validated inbound event
        status text not null default 'queued' check (status in ('queued', 'running', 'completed', 'failed')),
        error text,
        ledger_entry_ids text[] not null default '{}',
        attempts int not null default 0,
        received_at timestamptz not null,
        processed_at timestamptz,
        available_at timestamptz not null default now(),  -- retry backoff: not claimed before
        locked_until timestamptz,                          -- lease of a running row; a lapsed lease is re-queued
        primary key (tenant, id)
      );
      create unique index events_idempotency_key on ingest.events (tenant, idempotency_key) where not key_retired;
      create index events_by_tenant on ingest.events (tenant, seq);
      create index events_by_status on ingest.events (tenant, status, seq);
      create index events_by_order on ingest.events (tenant, order_ref, seq);
      create index events_by_type on ingest.events (tenant, type, seq);
      create index events_queued on ingest.events (seq) where status = 'queued';
      create index events_open_partition on ingest.events (tenant, partition_key, seq) where status in ('queued', 'running');
      create index events_leases on ingest.events (locked_until) where status = 'running';
    `,
  down: `
      drop schema if exists ingest cascade;
    `,
});

/**
 * Operability (issue 11): the trace context and request id of the request that queued the event
 * (the worker processes it as part of that request), and the wall-clock time it was queued
 * (received_at is programme time, which a sandbox test clock moves): queue age on /metrics.
 */
export const IngestTrace002_1764100015000 = sqlMigration('IngestTrace002_1764100015000', {
  up: `
      alter table ingest.events add column if not exists trace jsonb;
      alter table ingest.events add column if not exists queued_at timestamptz not null default now();
    `,
  down: `
      alter table ingest.events drop column if exists queued_at;
      alter table ingest.events drop column if exists trace;
    `,
});

/**
 * Throughput (issue 7): a claim no longer rewrites the row's indexes, and walks the queue in order. A running event is a queued
 * row under a lease (attempts, locked_until: no index covers them), so claiming is a HOT update;
 * the index on leases goes (lease recovery reads the open rows through events_queued), and pages
 * keep a fifth free so the claim's new row version fits beside the old one.
 */
export const IngestLeases003_1764200000000 = sqlMigration('IngestLeases003_1764200000000', {
  up: `
      drop index if exists ingest.events_leases;
      alter table ingest.events set (fillfactor = 80);
      -- The claim: up to p_n queued events whose backoff has passed and that are the oldest open
      -- event of their partition, in receipt order, leased for p_lease_ms. It walks events_queued in
      -- seq order and stops at p_n: bitmap scans and sorts are off for this statement, since on a
      -- queue that grew since its last ANALYZE the planner would otherwise test every queued row
      -- and sort them (measured: 40-60 ms per claim at 10,000 queued, and claims are frequent).
      create or replace function ingest.claim_events(p_n int, p_lease_ms float8)
      returns table (tenant text, id text, seq bigint, type text, payload jsonb, received_at timestamptz, attempts int, partition_key text, trace jsonb)
      language sql
      set enable_bitmapscan = off
      set enable_sort = off
      as $fn$
        with next as (
          select e.tenant, e.id from ingest.events e
          where e.status = 'queued' and e.locked_until is null and e.available_at <= now()
            and e.seq = (
              select o.seq from ingest.events o
              where o.tenant = e.tenant and o.partition_key = e.partition_key and o.status in ('queued', 'running')
              order by o.seq limit 1)
          order by e.seq
          limit p_n
          for update of e skip locked
        )
        update ingest.events e
           set attempts = e.attempts + 1, locked_until = now() + make_interval(secs => p_lease_ms / 1000)
          from next
         where e.tenant = next.tenant and e.id = next.id
        returning e.tenant, e.id, e.seq, e.type, e.payload, e.received_at, e.attempts, e.partition_key, e.trace
      $fn$;
    `,
  down: `
      drop function if exists ingest.claim_events(int, float8);
      alter table ingest.events reset (fillfactor);
      update ingest.events set status = 'running' where status = 'queued' and locked_until is not null;
      create index if not exists events_leases on ingest.events (locked_until) where status = 'running';
    `,
});

/**
 * Throughput (issue 7, ninth round): half of each new page is kept free, so that a claim's new row
 * versions fit beside the old ones (a HOT update: no index entry). With a fifth free, a claim of
 * the fourteen or so events of a page found room for three: 84 % of the claims' updates were not
 * HOT, and each wrote an entry into every one of the table's nine indexes (measured: 18 buffers
 * and 57 µs of the claim per event). A claim leases every open event of a page in one statement,
 * when none of their old versions can be pruned yet, so the free half has to hold a version of
 * each row. Only new pages are affected; the cost is a table about half as dense.
 */
export const IngestFill004_1765200000000 = sqlMigration('IngestFill004_1765200000000', {
  up: `
      alter table ingest.events set (fillfactor = 50);
    `,
  down: `
      alter table ingest.events set (fillfactor = 80);
    `,
});

/**
 * Throughput (issue 7, ninth round): the unique index on seq goes. Nothing reads the queue by seq
 * alone (the claim walks events_queued, lists and the backlog probe read per tenant, by_tenant and
 * the others), a bigserial is unique by construction, and every insert and every non-HOT outcome
 * wrote an entry into it.
 */
export const IngestSeqIndex005_1765200001000 = sqlMigration('IngestSeqIndex005_1765200001000', {
  up: `
      alter table ingest.events drop constraint if exists events_seq_key;
    `,
  down: `
      alter table ingest.events add constraint events_seq_key unique (seq);
    `,
});

/**
 * Throughput (issue 7, twelfth round): the outcomes of a batch in a function whose plans may not
 * read the table sequentially. As a prepared \`update … from jsonb_to_recordset(…)\` its generic plan,
 * made on a young queue whose statistics said almost no row is leased, was a sequential scan of the
 * queue joined by filter with every outcome: 24–66 ms a batch of 100–200 outcomes in the ingest
 * benchmark (168,400 rows compared for 200 outcomes), the costliest statement of the distributed
 * topology. Sequential scans off is not enough on its own: on an empty queue's statistics the
 * planner then hash-joins a full scan of another index. So each outcome finds its row by a
 * primary-key probe in a \`lateral … limit 1\` (a parameterized scan per outcome, whatever the
 * statistics say) and the update joins the rows found by ctid (a TID scan each).
 */
export const IngestFinish006_1765400000000 = sqlMigration('IngestFinish006_1765400000000', {
  up: `
      create or replace function ingest.finish_events(p_outcomes jsonb)
      returns setof int language plpgsql
      set enable_seqscan = off
      as $fn$
      begin
        return query
        with t as (
          select u.*, x.tid
            from jsonb_to_recordset(p_outcomes)
                   as u(n int, tenant text, id text, attempts int, status text, error text, ids jsonb, processed_at timestamptz)
            cross join lateral (
              -- open (queued or running, the CHECK allows nothing else), written so that the planner
              -- cannot take events_open_partition for it
              select e.ctid as tid from ingest.events e
               where e.tenant = u.tenant and e.id = u.id and e.attempts = u.attempts and e.locked_until is not null
                 and e.status not in ('completed', 'failed')
               limit 1) x
        )
        update ingest.events e
           set status = t.status, error = t.error, ledger_entry_ids = array(select jsonb_array_elements_text(t.ids)),
               processed_at = t.processed_at, locked_until = null
          from t
         -- the row found, still under the caller's lease (a row changed since is the newer version:
         -- its ctid differs, and the outcome is not written, as when the lease was lost)
         where e.ctid = t.tid and e.attempts = t.attempts and e.locked_until is not null
        returning t.n;
      end $fn$;
    `,
  down: `
      drop function if exists ingest.finish_events(jsonb);
    `,
});

/**
 * Throughput (issue 7, twentieth round): two fewer index entries for every accepted event and two
 * fewer for every outcome. An outcome changes \`status\`, so it is never a HOT update: it wrote an
 * entry into each of the six indexes whose rows it still matches, and an insert into all eight.
 * \`events_by_status\` (tenant, status, seq) gives way to a partial index of the failed events only
 * (the one status whose rows are few and looked for); open events are found through events_queued
 * and events_open_partition, completed ones are most of a tenant's rows (events_by_tenant, filtered).
 * \`events_by_type\` goes: a list by type walks events_by_tenant newest first and filters (types are a
 * handful, so a page is found after a few pages of rows, unless the type is rare in a long history).
 */
export const IngestIndexes007_1766000000000 = sqlMigration('IngestIndexes007_1766000000000', {
  up: `
      create index if not exists events_failed on ingest.events (tenant, seq) where status = 'failed';
      drop index if exists ingest.events_by_status;
      drop index if exists ingest.events_by_type;
    `,
  down: `
      create index if not exists events_by_type on ingest.events (tenant, type, seq);
      create index if not exists events_by_status on ingest.events (tenant, status, seq);
      drop index if exists ingest.events_failed;
    `,
});

export const INGEST_MIGRATIONS: MigrationClass[] = [
  Ingest001_1764000015000,
  IngestTrace002_1764100015000,
  IngestLeases003_1764200000000,
  IngestFill004_1765200000000,
  IngestSeqIndex005_1765200001000,
  IngestFinish006_1765400000000,
  IngestIndexes007_1766000000000,
];
