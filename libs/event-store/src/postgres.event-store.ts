import { randomUUID } from 'node:crypto';
import { Pool, PoolClient } from 'pg';
import { MigrationClass, pgArray, prepared, preparedShapes, sqlMigration } from '@loyalty/platform';
import {
  AppendClaim, AppendOptions, AppendResult, ClaimTakenError, EventStore, ExpectedRevision, NewEvent, Position, RecordedEvent, START, StreamRange, SubscribeOptions,
  Subscription, SubscriptionFilter, WrongExpectedRevisionError, comparePositions, matchesFilter,
} from './event-store.port';
import { GroupCommitter, GroupOutcome } from './group-commit';

export const EventStore001_1764000001000 = sqlMigration('EventStore001_1764000001000', {
  legacyId: 'event-store-001',
  up: `
      create schema if not exists es;
      create table es.streams (stream_id text primary key, revision bigint not null);
      create table es.events (
        global_position bigserial not null,
        transaction_id xid8 not null default pg_current_xact_id(),
        stream_id text not null,
        stream_revision bigint not null,
        event_id uuid not null,
        type text not null,
        data jsonb not null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null default clock_timestamp(),
        primary key (stream_id, stream_revision)
      );
      create unique index events_event_id on es.events (stream_id, event_id);
      create index events_global on es.events (transaction_id, global_position);
    `,
  down: `
      drop schema if exists es cascade;
    `,
});

// An append in ONE round trip (it was seven: begin, lock, look for the ids, insert, stream
// revision, notify, commit). Same rules: the stream row is locked; every id already there = this
// append happened before (its last event is returned, nothing written); some of them = conflict;
// expected 'no_stream' | 'any' | <revision> is checked against the locked revision.
// outcome: 'ok' | 'duplicate' | 'conflict' (actual = the stream's revision, null = no stream).
/** es.append_events as first written (EventStore002); EventStoreAppend010 restores it on the way down. */
const APPEND_EVENTS_V1 = `
      create or replace function es.append_events(p_stream text, p_expected text, p_ids uuid[], p_types text[], p_data jsonb[], p_meta jsonb[])
      returns table (outcome text, actual bigint, next_revision bigint, global_position bigint, transaction_id text)
      language plpgsql as $fn$
      #variable_conflict use_column
      declare
        v_actual bigint;
        v_found int;
        v_first bigint;
        v_next bigint;
      begin
        select s.revision into v_actual from es.streams s where s.stream_id = p_stream for update;
        select count(*) into v_found from es.events e where e.stream_id = p_stream and e.event_id = any(p_ids);
        if v_found = cardinality(p_ids) then
          return query select 'duplicate'::text, v_actual, e.stream_revision, e.global_position, e.transaction_id::text
            from es.events e where e.stream_id = p_stream and e.event_id = any(p_ids) order by e.stream_revision desc limit 1;
          return;
        end if;
        if v_found > 0
           or (p_expected = 'no_stream' and v_actual is not null)
           or (p_expected not in ('no_stream', 'any') and (v_actual is null or v_actual <> p_expected::bigint)) then
          return query select 'conflict'::text, v_actual, null::bigint, null::bigint, null::text;
          return;
        end if;
        v_first := coalesce(v_actual + 1, 0);
        v_next := v_first + cardinality(p_ids) - 1;
        return query
          with ins as (
            insert into es.events as ev (stream_id, stream_revision, event_id, type, data, metadata)
            select p_stream, v_first + t.ord - 1, t.id, t.type, t.data, t.metadata
            from unnest(p_ids, p_types, p_data, p_meta) with ordinality as t(id, type, data, metadata, ord)
            returning ev.global_position, ev.transaction_id
          )
          select 'ok'::text, v_actual, v_next, max(ins.global_position), max(ins.transaction_id::text) from ins;
        insert into es.streams (stream_id, revision) values (p_stream, v_next)
          on conflict (stream_id) do update set revision = excluded.revision;
        perform pg_notify('es_appended', '');
      end
      $fn$;
    `;

export const EventStore002_1764000002000 = sqlMigration('EventStore002_1764000002000', {
  legacyId: 'event-store-002',
  up: APPEND_EVENTS_V1,
  down: `
      drop function if exists es.append_events(text, text, uuid[], text[], jsonb[], jsonb[]);
    `,
});

/**
 * es.append_set's definition. `linear` (EventStore004) joins each event to its append by equality on
 * the append's index, which the function computes once; without it (EventStore003, as first
 * written) by the range of the append's event ordinals.
 */
const appendSetSql = (linear: boolean): string => `
      create or replace function es.append_set(p_streams text[], p_expected text[], p_counts int[], p_ids uuid[], p_types text[], p_data jsonb[], p_meta jsonb[])
      returns table (idx int, outcome text, actual bigint, next_revision bigint, global_position bigint, transaction_id text)
      language plpgsql as $fn$
      #variable_conflict use_column${linear ? `
      declare
        -- each event's append (1-based): events are joined to their append by equality, not by a range
        v_owner int[] := array(select t.i::int from unnest(p_counts) with ordinality as t(n, i), generate_series(1, t.n) order by t.i);` : ''}
      begin
        perform 1 from es.streams s where s.stream_id = any(p_streams) order by s.stream_id for update;
        return query
        with a as (
          select t.stream, t.expected, t.n, t.i::int as i, (sum(t.n) over (order by t.i) - t.n)::int as off
          from unnest(p_streams, p_expected, p_counts) with ordinality as t(stream, expected, n, i)
        ), cur as (
          select a.*, s.revision as rev from a left join es.streams s on s.stream_id = a.stream
        ), ev as (
${linear ? `          select e.id, e.type, e.data, e.meta, e.k::int as k, e.owner as i
          from unnest(p_ids, p_types, p_data, p_meta, v_owner) with ordinality as e(id, type, data, meta, owner, k)` : `          select e.id, e.type, e.data, e.meta, e.k::int as k
          from unnest(p_ids, p_types, p_data, p_meta) with ordinality as e(id, type, data, meta, k)`}
        ), found as (
          select cur.i, count(x.event_id)::int as n_found
          from cur join ev on ${linear ? 'ev.i = cur.i' : 'ev.k > cur.off and ev.k <= cur.off + cur.n'}
          left join es.events x on x.stream_id = cur.stream and x.event_id = ev.id
          group by cur.i
        ), decided as (
          select cur.*, case
              when f.n_found = cur.n then 'duplicate'
              when f.n_found > 0 or (cur.expected = 'no_stream' and cur.rev is not null)
                or (cur.expected not in ('no_stream', 'any') and (cur.rev is null or cur.rev <> cur.expected::bigint)) then 'conflict'
              else 'ok' end as result
          from cur join found f on f.i = cur.i
        ), ins as (
          insert into es.events as x (stream_id, stream_revision, event_id, type, data, metadata)
          select d.stream, coalesce(d.rev + 1, 0) + (ev.k - d.off) - 1, ev.id, ev.type, ev.data, ev.meta
          from decided d join ev on ${linear ? 'ev.i = d.i' : 'ev.k > d.off and ev.k <= d.off + d.n'}
          where d.result = 'ok'
          order by ev.k
          returning x.stream_id, x.global_position, x.transaction_id
        ), written as (
          select w.stream_id, max(w.global_position) as gp, min(w.transaction_id::text) as tx from ins w group by w.stream_id
        ), heads as (
          -- runs to completion although nothing below reads it (a data-modifying WITH always does)
          insert into es.streams as s (stream_id, revision)
          select d.stream, coalesce(d.rev + 1, 0) + d.n - 1 from decided d where d.result = 'ok'
          on conflict (stream_id) do update set revision = excluded.revision
        )
        select d.i, d.result, d.rev,
               case d.result when 'ok' then coalesce(d.rev + 1, 0) + d.n - 1 when 'duplicate' then dup.stream_revision end,
               case d.result when 'ok' then w.gp when 'duplicate' then dup.global_position end,
               case d.result when 'ok' then w.tx when 'duplicate' then dup.transaction_id::text end
        from decided d
        left join written w on w.stream_id = d.stream and d.result = 'ok'
        left join lateral (
          select x.stream_revision, x.global_position, x.transaction_id from es.events x
          where d.result = 'duplicate' and x.stream_id = d.stream
            and x.event_id = any(p_ids[d.off + 1 : d.off + d.n])
          order by x.stream_revision desc limit 1
        ) dup on true;
        perform pg_notify('es_appended', '');
      end
      $fn$;
`;
const APPEND_SET_V1 = appendSetSql(false);

// Group commit, set-based: the appends of a group (each to a different stream) decided and
// written with a handful of statements instead of one function call per append. Same rules as
// es.append_events: stream rows locked (in stream order, as every writer does); every id already
// there = duplicate (its last event returned); some = conflict; expected revision checked.
export const EventStore003_1764000003000 = sqlMigration('EventStore003_1764000003000', {
  legacyId: 'event-store-003',
  up: APPEND_SET_V1,
  down: `
      drop function if exists es.append_set(text[], text[], int[], uuid[], text[], jsonb[], jsonb[]);
    `,
});

// The group append again, linear in the group: each event carries the index of its append (v_owner)
// and is joined to it by equality. The range join it replaces (event ordinal between an append's
// offsets) was quadratic in the group and, with the planner's row estimates for it, read es.events
// whole to look for duplicates: 36 ms a call at 400 appends in the ingest benchmark (issue 7).
const APPEND_SET_V2 = appendSetSql(true);

export const EventStore004_1764800000000 = sqlMigration('EventStore004_1764800000000', { up: APPEND_SET_V2, down: APPEND_SET_V1 });

// The appends plan their reads of es.streams and es.events by index, whatever the statistics say.
// On a store that grows fast (a fresh database taking an ingest backlog: 20,000 order streams in
// seconds) autovacuum's statistics lag, and PL/pgSQL's cached generic plans chose sequential scans:
// the stream lock compared every stream row with every name of the group (`stream_id = any(...)`),
// the duplicate check hash-joined every stored event. Per-append cost then grew with the store, and
// from run to run with whichever plan was cached (PostgreSQL CPU per ingested event 0.32–0.75 ms
// on one commit). Every statement of both functions has an index to use.
export const EventStore005_1764900000000 = sqlMigration('EventStore005_1764900000000', {
  up: `
      alter function es.append_set(text[], text[], int[], uuid[], text[], jsonb[], jsonb[]) set enable_seqscan = off;
      alter function es.append_events(text, text, uuid[], text[], jsonb[], jsonb[]) set enable_seqscan = off;
    `,
  down: `
      alter function es.append_set(text[], text[], int[], uuid[], text[], jsonb[], jsonb[]) reset enable_seqscan;
      alter function es.append_events(text, text, uuid[], text[], jsonb[], jsonb[]) reset enable_seqscan;
    `,
});

// Small groups (a synchronous command's two or three streams) are appended stream by stream in a
// loop of single-row statements (es.append_few): the set-based es.append_set costs about 0.35 ms a
// call whatever its size (starting its many-node plan), two streams 0.40 ms against 0.06 ms here;
// from about 20 streams on the set is cheaper per stream (1.5 ms against 2.5 ms at 100). Same
// rules, same result rows; the caller passes the streams sorted, and they are locked in that order.
/** es.append_few as first written (EventStore006); EventStoreAppend010 restores it on the way down. */
const APPEND_FEW_V1 = `
      create or replace function es.append_few(p_streams text[], p_expected text[], p_counts int[], p_ids uuid[], p_types text[], p_data jsonb[], p_meta jsonb[])
      returns table (idx int, outcome text, actual bigint, next_revision bigint, global_position bigint, transaction_id text)
      language plpgsql
      set enable_seqscan = off
      as $fn$
      #variable_conflict use_column
      declare
        v_i int;
        v_off int := 0;
        v_n int;
        v_stream text;
        v_ids uuid[];
        v_actual bigint;
        v_found int;
        v_first bigint;
        v_next bigint;
        v_gp bigint;
        v_tx text;
      begin
        -- streams in the order given (the caller sorts them, so that two groups lock stream rows in the same order)
        for v_i in 1 .. coalesce(array_length(p_streams, 1), 0) loop
          v_stream := p_streams[v_i];
          v_n := p_counts[v_i];
          v_actual := null;
          select s.revision into v_actual from es.streams s where s.stream_id = v_stream for update;
          if v_n = 1 then
            select count(*) into v_found from es.events e where e.stream_id = v_stream and e.event_id = p_ids[v_off + 1];
          else
            v_ids := p_ids[v_off + 1 : v_off + v_n];
            select count(*) into v_found from es.events e where e.stream_id = v_stream and e.event_id = any(v_ids);
          end if;
          if v_found = v_n then
            return query select v_i, 'duplicate'::text, v_actual, e.stream_revision, e.global_position, e.transaction_id::text
              from es.events e where e.stream_id = v_stream and e.event_id = any(p_ids[v_off + 1 : v_off + v_n])
              order by e.stream_revision desc limit 1;
          elsif v_found > 0
             or (p_expected[v_i] = 'no_stream' and v_actual is not null)
             or (p_expected[v_i] not in ('no_stream', 'any') and (v_actual is null or v_actual <> p_expected[v_i]::bigint)) then
            return query select v_i, 'conflict'::text, v_actual, null::bigint, null::bigint, null::text;
          else
            v_first := coalesce(v_actual + 1, 0);
            v_next := v_first + v_n - 1;
            if v_n = 1 then
              insert into es.events as ev (stream_id, stream_revision, event_id, type, data, metadata)
              values (v_stream, v_first, p_ids[v_off + 1], p_types[v_off + 1], p_data[v_off + 1], p_meta[v_off + 1])
              returning ev.global_position, ev.transaction_id::text into v_gp, v_tx;
            else
              with ins as (
                insert into es.events as ev (stream_id, stream_revision, event_id, type, data, metadata)
                select v_stream, v_first + t.ord - 1, t.id, t.type, t.data, t.metadata
                from unnest(v_ids, p_types[v_off + 1 : v_off + v_n], p_data[v_off + 1 : v_off + v_n], p_meta[v_off + 1 : v_off + v_n])
                     with ordinality as t(id, type, data, metadata, ord)
                order by t.ord
                returning ev.global_position, ev.transaction_id)
              select max(ins.global_position), max(ins.transaction_id::text) into v_gp, v_tx from ins;
            end if;
            if v_actual is null then
              insert into es.streams as s (stream_id, revision) values (v_stream, v_next)
                on conflict (stream_id) do update set revision = excluded.revision;
            else
              update es.streams s set revision = v_next where s.stream_id = v_stream;
            end if;
            return query select v_i, 'ok'::text, v_actual, v_next, v_gp, v_tx;
          end if;
          v_off := v_off + v_n;
        end loop;
        perform pg_notify('es_appended', '');
      end
      $fn$;
    `;

export const EventStore006_1765000000000 = sqlMigration('EventStore006_1765000000000', {
  up: APPEND_FEW_V1,
  down: `
      drop function if exists es.append_few(text[], text[], int[], uuid[], text[], jsonb[], jsonb[]);
    `,
});

/** The append functions' NOTIFY, and the comment that stands in its place once the store announces appends itself. */
const NOTIFY_IN_FUNCTION = "perform pg_notify('es_appended', '');";
const NOTIFY_BY_CALLER = '-- es_appended: announced by the caller (EventStore007)';
const APPEND_FUNCTIONS = [
  'es.append_events(text, text, uuid[], text[], jsonb[], jsonb[])',
  'es.append_set(text[], text[], int[], uuid[], text[], jsonb[], jsonb[])',
  'es.append_few(text[], text[], int[], uuid[], text[], jsonb[], jsonb[])',
];
/** Each append function redefined from its own definition (pg_get_functiondef keeps its SET clauses), one text replaced by another. */
const redefineAppends = (from: string, to: string): string => `
      do $do$
      declare f text;
      begin
        foreach f in array array[${APPEND_FUNCTIONS.map((f) => `'${f}'`).join(', ')}] loop
          execute replace(pg_get_functiondef(f::regprocedure), $t$${from}$t$, $t$${to}$t$);
        end loop;
      end $do$;
    `;

// Appends no longer NOTIFY inside their transaction (issue 7): every committing transaction that
// notified took the database's notification lock in turn, and every NOTIFY woke each listening
// connection, one per append statement. The store announces its appends itself after they commit,
// at most once per ANNOUNCE_MS (PostgresEventStore.announce), and wakes its own process's
// subscriptions at once.
export const EventStoreAnnounce007_1765100002000 = sqlMigration('EventStoreAnnounce007_1765100002000', {
  up: redefineAppends(NOTIFY_IN_FUNCTION, NOTIFY_BY_CALLER),
  down: redefineAppends(NOTIFY_BY_CALLER, NOTIFY_IN_FUNCTION),
});

// Events' data and metadata are stored as `json`, not `jsonb` (issue 7, eleventh round): the store
// never reads into an event in SQL on its hot paths, and jsonb cost the most of an append (every
// event's text parsed into jsonb on the way in, printed back on every read). Measured alone, groups
// of 200: 54–55 µs a row inserted with jsonb against 38–45 with json; a 500-row page read back 18
// against 13 µs a row. A json column keeps the text as the store wrote it (JSON.stringify's), so
// readers get the same values. The append functions take json[] from here on. The migration rewrites
// es.events (a lock for as long as the rewrite takes: run it in a maintenance window on a large store).
const EVENT_JSON_COLUMNS = (to: 'json' | 'jsonb'): string => {
  const from = to === 'json' ? 'jsonb' : 'json';
  return `
      alter table es.events alter column data type ${to} using data::${to},
        alter column metadata type ${to} using metadata::${to}, alter column metadata set default '{}'::${to};
      do $do$
      declare f text; def text;
      begin
        foreach f in array array[${APPEND_FUNCTIONS.map((f) => `'${f.replaceAll('jsonb[]', `${from}[]`)}'`).join(', ')}] loop
          def := pg_get_functiondef(f::regprocedure);
          execute 'drop function ' || f;
          execute replace(def, '${from}[]', '${to}[]');
        end loop;
      end $do$;
    `;
};
export const EventStoreJson008_1765300000000 = sqlMigration('EventStoreJson008_1765300000000', {
  up: EVENT_JSON_COLUMNS('json'),
  down: EVENT_JSON_COLUMNS('jsonb'),
});

/** The single-stream and small-group appends, by signature (json[] since EventStoreJson008). */
const SMALL_APPENDS = [
  'es.append_events(text, text, uuid[], text[], json[], json[])',
  'es.append_few(text[], text[], int[], uuid[], text[], json[], json[])',
];

// The small appends plan each statement once per connection (issue 7, fifteenth round). Their
// duplicate check (`event_id = any(<the append's ids>)`) was planned again on EVERY call: PL/pgSQL
// caches a statement's plan, but PostgreSQL's plan cache kept choosing a custom plan for it, since
// a generic plan assumes ten ids where a command appends one or two and so looked costlier. In
// the redemption benchmark that planning took 34 µs an append, four times the check's own
// execution, and about a tenth of PostgreSQL's CPU per redemption (`pg_stat_statements` with
// `track_planning`: 9,124 plans for 9,124 calls). The generic plan is the same index scan on
// (stream_id, event_id); enable_seqscan = off (EventStore005) keeps every generic plan on its index.
export const EventStorePlans009_1765500000000 = sqlMigration('EventStorePlans009_1765500000000', {
  up: SMALL_APPENDS.map((f) => `alter function ${f} set plan_cache_mode = force_generic_plan;`).join('\n'),
  down: SMALL_APPENDS.map((f) => `alter function ${f} reset plan_cache_mode;`).join('\n'),
});

/**
 * es.append_few, second version (issue 7, eighteenth round). An append where the caller expected it
 * (its revision, or a new stream) no longer looks for its ids first: they can be in the stream only
 * if the caller sent them again at a later revision, and the insert finds that through the unique
 * index it probes anyway (`on conflict (stream_id, event_id) do nothing`): every id there =
 * duplicate, nothing written; some = conflict, the rows just written removed. `any` appends the
 * same way at the stream's end. The look-up runs only for an append that is not where the caller
 * expected (another revision, or `no_stream` of a stream that exists): a retry or a conflict, with
 * nothing to write. The look-up it replaces, `count(*) ... event_id = any(<ids>)` as a generic plan,
 * read the stream's whole index range (its condition was on stream_id alone, the ids a filter with
 * a heap fetch per row): per-append cost grew with the member's history (an isolated run of
 * six-stream groups: 1,600 calls/s with 4 events a stream, 635 with 87). Where it still runs, each
 * id is probed alone (es.ids_in_stream).
 */
const APPEND_FEW_V2 = `
      -- how many of the ids a stream holds, and the newest of them: one probe of the unique index per id
      -- (a single statement over the ids was planned as a scan of the stream's whole range)
      create or replace function es.ids_in_stream(p_stream text, p_ids uuid[])
      returns table (n_found int, last_revision bigint, last_position bigint, last_tx text)
      language plpgsql
      set enable_seqscan = off
      set plan_cache_mode = force_generic_plan
      as $fn$
      declare
        v_id uuid;
        v_rev bigint;
        v_gp bigint;
        v_tx text;
      begin
        n_found := 0;
        foreach v_id in array p_ids loop
          select e.stream_revision, e.global_position, e.transaction_id::text into v_rev, v_gp, v_tx
            from es.events e where e.stream_id = p_stream and e.event_id = v_id;
          if v_rev is not null then
            n_found := n_found + 1;
            if last_revision is null or v_rev > last_revision then
              last_revision := v_rev; last_position := v_gp; last_tx := v_tx;
            end if;
          end if;
        end loop;
        return next;
      end
      $fn$;

      create or replace function es.append_few(p_streams text[], p_expected text[], p_counts int[], p_ids uuid[], p_types text[], p_data json[], p_meta json[])
      returns table (idx int, outcome text, actual bigint, next_revision bigint, global_position bigint, transaction_id text)
      language plpgsql
      set enable_seqscan = off
      set plan_cache_mode = force_generic_plan
      as $fn$
      #variable_conflict use_column
      declare
        v_i int;
        v_off int := 0;
        v_n int;
        v_stream text;
        v_expected text;
        v_ids uuid[];
        v_actual bigint;
        v_found int;
        v_written int;
        v_dup_rev bigint;
        v_first bigint;
        v_next bigint;
        v_gp bigint;
        v_tx text;
      begin
        -- streams in the order given (the caller sorts them, so that two groups lock stream rows in the same order)
        for v_i in 1 .. coalesce(array_length(p_streams, 1), 0) loop
          v_stream := p_streams[v_i];
          v_expected := p_expected[v_i];
          v_n := p_counts[v_i];
          v_ids := p_ids[v_off + 1 : v_off + v_n];
          v_actual := null;
          select s.revision into v_actual from es.streams s where s.stream_id = v_stream for update;
          if v_actual is null and v_expected not in ('no_stream', 'any') then
            -- a revision expected of a stream that does not exist (nor do its events)
            return query select v_i, 'conflict'::text, v_actual, null::bigint, null::bigint, null::text;
          elsif v_actual is not null and v_expected <> 'any' and (v_expected = 'no_stream' or v_actual <> v_expected::bigint) then
            -- not where the caller expected: written before (a retry), else a conflict
            select f.n_found, f.last_revision, f.last_position, f.last_tx into v_found, v_dup_rev, v_gp, v_tx
              from es.ids_in_stream(v_stream, v_ids) as f;
            if v_found = v_n then
              return query select v_i, 'duplicate'::text, v_actual, v_dup_rev, v_gp, v_tx;
            else
              return query select v_i, 'conflict'::text, v_actual, null::bigint, null::bigint, null::text;
            end if;
          else
            -- where the caller expected (or 'any'): written unless an id is there already (the unique index says)
            v_first := coalesce(v_actual + 1, 0);
            v_next := v_first + v_n - 1;
            if v_n = 1 then
              v_gp := null;
              insert into es.events as ev (stream_id, stream_revision, event_id, type, data, metadata)
              values (v_stream, v_first, p_ids[v_off + 1], p_types[v_off + 1], p_data[v_off + 1], p_meta[v_off + 1])
              on conflict (stream_id, event_id) do nothing
              returning ev.global_position, ev.transaction_id::text into v_gp, v_tx;
              v_written := case when v_gp is null then 0 else 1 end;
            else
              with ins as (
                insert into es.events as ev (stream_id, stream_revision, event_id, type, data, metadata)
                select v_stream, v_first + t.ord - 1, t.id, t.type, t.data, t.metadata
                from unnest(v_ids, p_types[v_off + 1 : v_off + v_n], p_data[v_off + 1 : v_off + v_n], p_meta[v_off + 1 : v_off + v_n])
                     with ordinality as t(id, type, data, metadata, ord)
                order by t.ord
                on conflict (stream_id, event_id) do nothing
                returning ev.global_position, ev.transaction_id)
              select count(*), max(ins.global_position), max(ins.transaction_id::text) into v_written, v_gp, v_tx from ins;
            end if;
            if v_written = v_n then
              if v_actual is null then
                insert into es.streams as s (stream_id, revision) values (v_stream, v_next)
                  on conflict (stream_id) do update set revision = excluded.revision;
              else
                update es.streams s set revision = v_next where s.stream_id = v_stream;
              end if;
              return query select v_i, 'ok'::text, v_actual, v_next, v_gp, v_tx;
            elsif v_written = 0 then
              select f.last_revision, f.last_position, f.last_tx into v_dup_rev, v_gp, v_tx from es.ids_in_stream(v_stream, v_ids) as f;
              return query select v_i, 'duplicate'::text, v_actual, v_dup_rev, v_gp, v_tx;
            else
              -- some of the ids were there: nothing of this append stays
              delete from es.events e where e.stream_id = v_stream and e.stream_revision between v_first and v_next;
              return query select v_i, 'conflict'::text, v_actual, null::bigint, null::bigint, null::text;
            end if;
          end if;
          v_off := v_off + v_n;
        end loop;
        -- es_appended: announced by the caller (EventStore007)
      end
      $fn$;
`;

/** es.append_events, second version: the one-stream case of es.append_few (same rules, one definition of them). */
const APPEND_EVENTS_V2 = `
      create or replace function es.append_events(p_stream text, p_expected text, p_ids uuid[], p_types text[], p_data json[], p_meta json[])
      returns table (outcome text, actual bigint, next_revision bigint, global_position bigint, transaction_id text)
      language sql
      set enable_seqscan = off
      set plan_cache_mode = force_generic_plan
      as $fn$
        select f.outcome, f.actual, f.next_revision, f.global_position, f.transaction_id
        from es.append_few(array[p_stream], array[p_expected], array[cardinality(p_ids)], p_ids, p_types, p_data, p_meta) as f
      $fn$;
`;

/** A first definition restored with what later migrations changed in it: json[] (008), the caller's announcement (007), its settings (005, 009). */
const restoredV1 = (sql: string, signature: string): string => `
      ${sql.replaceAll('jsonb[]', 'json[]').replace(NOTIFY_IN_FUNCTION, NOTIFY_BY_CALLER)}
      alter function ${signature} set enable_seqscan = off;
      alter function ${signature} set plan_cache_mode = force_generic_plan;
`;

export const EventStoreAppend010_1765700000000 = sqlMigration('EventStoreAppend010_1765700000000', {
  up: APPEND_FEW_V2 + APPEND_EVENTS_V2,
  down: restoredV1(APPEND_FEW_V1, SMALL_APPENDS[1]) + restoredV1(APPEND_EVENTS_V1, SMALL_APPENDS[0]) + `
      drop function es.ids_in_stream(text, uuid[]);
`,
});

/**
 * es.append_few, third version (issue 7, nineteenth round): an append may take a claim (AppendClaim),
 * a name unique across the store while it lasts, in the same transaction as its events. The claim is
 * taken before the stream's row is locked: free (or lapsed) → taken; held by the same stream with
 * the same fingerprint → kept (a retry: the stream decides, as before); else the append's outcome is
 * `claimed` and nothing of it is written. A claim taken by an append that then conflicts is given
 * back in the same transaction. Without claims (the parameters null) it is the second version.
 */
const APPEND_FEW_V3 = `
      create table es.claims (
        name text primary key,
        stream_id text not null,
        fingerprint text not null,
        expires_at timestamptz not null
      );
      drop function es.append_events(text, text, uuid[], text[], json[], json[]);
      drop function es.append_few(text[], text[], int[], uuid[], text[], json[], json[]);

      create function es.append_few(p_streams text[], p_expected text[], p_counts int[], p_ids uuid[], p_types text[], p_data json[], p_meta json[],
                                    p_claims text[] default null, p_fingerprints text[] default null, p_claim_seconds int[] default null)
      returns table (idx int, outcome text, actual bigint, next_revision bigint, global_position bigint, transaction_id text)
      language plpgsql
      set enable_seqscan = off
      set plan_cache_mode = force_generic_plan
      as $fn$
      #variable_conflict use_column
      declare
        v_i int;
        v_off int := 0;
        v_n int;
        v_stream text;
        v_expected text;
        v_ids uuid[];
        v_actual bigint;
        v_found int;
        v_written int;
        v_dup_rev bigint;
        v_first bigint;
        v_next bigint;
        v_gp bigint;
        v_tx text;
        v_claim text;
        v_took boolean;
        v_owner text;
        v_fp text;
      begin
        -- streams in the order given (the caller sorts them, so that two groups lock stream rows in the same order)
        for v_i in 1 .. coalesce(array_length(p_streams, 1), 0) loop
          v_stream := p_streams[v_i];
          v_expected := p_expected[v_i];
          v_n := p_counts[v_i];
          v_ids := p_ids[v_off + 1 : v_off + v_n];
          v_claim := case when p_claims is null then null else p_claims[v_i] end;
          v_took := false;
          if v_claim is not null then
            -- the claim first: free or lapsed → taken; else it must be this stream's, for the same fingerprint
            insert into es.claims as c (name, stream_id, fingerprint, expires_at)
            values (v_claim, v_stream, p_fingerprints[v_i], now() + make_interval(secs => p_claim_seconds[v_i]))
            on conflict (name) do update set stream_id = excluded.stream_id, fingerprint = excluded.fingerprint, expires_at = excluded.expires_at
              where c.expires_at <= now()
            returning true into v_took;
            if v_took is null then
              v_took := false;
              select c.stream_id, c.fingerprint into v_owner, v_fp from es.claims c where c.name = v_claim;
              if v_owner is distinct from v_stream or v_fp is distinct from p_fingerprints[v_i] then
                return query select v_i, 'claimed'::text, null::bigint, null::bigint, null::bigint, null::text;
                v_off := v_off + v_n;
                continue;
              end if;
            end if;
          end if;
          v_actual := null;
          select s.revision into v_actual from es.streams s where s.stream_id = v_stream for update;
          if v_actual is null and v_expected not in ('no_stream', 'any') then
            -- a revision expected of a stream that does not exist (nor do its events)
            if v_took then delete from es.claims c where c.name = v_claim; end if;
            return query select v_i, 'conflict'::text, v_actual, null::bigint, null::bigint, null::text;
          elsif v_actual is not null and v_expected <> 'any' and (v_expected = 'no_stream' or v_actual <> v_expected::bigint) then
            -- not where the caller expected: written before (a retry), else a conflict
            select f.n_found, f.last_revision, f.last_position, f.last_tx into v_found, v_dup_rev, v_gp, v_tx
              from es.ids_in_stream(v_stream, v_ids) as f;
            if v_found = v_n then
              return query select v_i, 'duplicate'::text, v_actual, v_dup_rev, v_gp, v_tx;
            else
              if v_took then delete from es.claims c where c.name = v_claim; end if;
              return query select v_i, 'conflict'::text, v_actual, null::bigint, null::bigint, null::text;
            end if;
          else
            -- where the caller expected (or 'any'): written unless an id is there already (the unique index says)
            v_first := coalesce(v_actual + 1, 0);
            v_next := v_first + v_n - 1;
            if v_n = 1 then
              v_gp := null;
              insert into es.events as ev (stream_id, stream_revision, event_id, type, data, metadata)
              values (v_stream, v_first, p_ids[v_off + 1], p_types[v_off + 1], p_data[v_off + 1], p_meta[v_off + 1])
              on conflict (stream_id, event_id) do nothing
              returning ev.global_position, ev.transaction_id::text into v_gp, v_tx;
              v_written := case when v_gp is null then 0 else 1 end;
            else
              with ins as (
                insert into es.events as ev (stream_id, stream_revision, event_id, type, data, metadata)
                select v_stream, v_first + t.ord - 1, t.id, t.type, t.data, t.metadata
                from unnest(v_ids, p_types[v_off + 1 : v_off + v_n], p_data[v_off + 1 : v_off + v_n], p_meta[v_off + 1 : v_off + v_n])
                     with ordinality as t(id, type, data, metadata, ord)
                order by t.ord
                on conflict (stream_id, event_id) do nothing
                returning ev.global_position, ev.transaction_id)
              select count(*), max(ins.global_position), max(ins.transaction_id::text) into v_written, v_gp, v_tx from ins;
            end if;
            if v_written = v_n then
              if v_actual is null then
                insert into es.streams as s (stream_id, revision) values (v_stream, v_next)
                  on conflict (stream_id) do update set revision = excluded.revision;
              else
                update es.streams s set revision = v_next where s.stream_id = v_stream;
              end if;
              return query select v_i, 'ok'::text, v_actual, v_next, v_gp, v_tx;
            elsif v_written = 0 then
              select f.last_revision, f.last_position, f.last_tx into v_dup_rev, v_gp, v_tx from es.ids_in_stream(v_stream, v_ids) as f;
              return query select v_i, 'duplicate'::text, v_actual, v_dup_rev, v_gp, v_tx;
            else
              -- some of the ids were there: nothing of this append stays
              delete from es.events e where e.stream_id = v_stream and e.stream_revision between v_first and v_next;
              if v_took then delete from es.claims c where c.name = v_claim; end if;
              return query select v_i, 'conflict'::text, v_actual, null::bigint, null::bigint, null::text;
            end if;
          end if;
          v_off := v_off + v_n;
        end loop;
        -- es_appended: announced by the caller (EventStore007)
      end
      $fn$;
` + APPEND_EVENTS_V2;

export const EventStoreClaims011_1765900000000 = sqlMigration('EventStoreClaims011_1765900000000', {
  up: APPEND_FEW_V3,
  down: `
      drop function es.append_events(text, text, uuid[], text[], json[], json[]);
      drop function es.append_few(text[], text[], int[], uuid[], text[], json[], json[], text[], text[], int[]);
      drop table es.claims;
` + APPEND_FEW_V2 + APPEND_EVENTS_V2,
});

/**
 * The group append plans its statements once per connection (issue 7, twenty-sixth round), as the
 * small appends do since EventStorePlans009. Left to PostgreSQL's default (`plan_cache_mode = auto`)
 * every connection planned es.append_set's statements for the call's values on its first five calls,
 * and those custom plans, made on statistics that lag a fast-growing store, hash-joined a scan of
 * `events_event_id` (thousands of index entries: 40–80 ms a call at the start of the ingest
 * benchmark's measured load, against 15–20 ms for the generic plan's one probe per event); the
 * plans are made again on each connection after every ANALYZE of es.events. A pool of 30 connections,
 * most of them used now and then, made 65 plans for 164 calls in one run (`pg_stat_statements`,
 * `track_planning`). The generic plan assumes ten rows for each array, so it probes the indexes per
 * row (enable_seqscan = off, EventStore005, keeps it off sequential scans).
 */
export const EventStorePlans012_1766200000000 = sqlMigration('EventStorePlans012_1766200000000', {
  up: `
      alter function es.append_set(text[], text[], int[], uuid[], text[], json[], json[]) set plan_cache_mode = force_generic_plan;
    `,
  down: `
      alter function es.append_set(text[], text[], int[], uuid[], text[], json[], json[]) reset plan_cache_mode;
    `,
});

/** es.append_few as EventStoreClaims011 defined it (its function alone), `create or replace`. */
const APPEND_FEW_V3_FUNCTION = APPEND_FEW_V3.slice(APPEND_FEW_V3.indexOf('      create function es.append_few(')).replace('create function', 'create or replace function');

/** One text of a definition replaced by another, or an error at load if the text is not there (a definition edited since). */
const edited = (sql: string, edits: [string, string][]): string => edits.reduce((out, [from, to]) => {
  if (!out.includes(from)) throw new Error(`edited: not in the definition: ${from.trim().slice(0, 80)}`);
  return out.replace(from, to);
}, sql);

/**
 * es.append_few, fourth version (issue 7, twenty-sixth round): the stream's head is moved in the
 * statement that locks it. The third version read the stream's row `for update` (a row lock, itself
 * a WAL record and a write of the row's header) and updated it after the insert: two statements and
 * two writes of the row for every stream of every append. Now one `update … returning` locks the row
 * and moves its revision past the append's events, and answers the revision before; an append that
 * writes nothing (not where the caller expected: a retry or a conflict; or ids already there) moves it
 * back. A new stream has no row to update, and is inserted after its events as before. The outcomes,
 * the claims and the lock order (the caller's stream order) are unchanged.
 */
/** The stream's revision moved back to what it was before the append (which wrote nothing). */
const MOVE_BACK = 'update es.streams s set revision = v_actual where s.stream_id = v_stream;';
const APPEND_FEW_V4_FUNCTION = edited(APPEND_FEW_V3_FUNCTION, [
  [`          select s.revision into v_actual from es.streams s where s.stream_id = v_stream for update;
`, `          -- the row locked and its revision moved past this append's events in one statement (the revision before
          -- it is answered); moved back below when nothing of the append is written. No row: a new stream.
          update es.streams s set revision = s.revision + v_n where s.stream_id = v_stream
            returning s.revision - v_n into v_actual;
`],
  [`            -- not where the caller expected: written before (a retry), else a conflict
`, `            -- not where the caller expected: written before (a retry), else a conflict
            ${MOVE_BACK}
`],
  [`              if v_actual is null then
                insert into es.streams as s (stream_id, revision) values (v_stream, v_next)
                  on conflict (stream_id) do update set revision = excluded.revision;
              else
                update es.streams s set revision = v_next where s.stream_id = v_stream;
              end if;
`, `              if v_actual is null then
                insert into es.streams as s (stream_id, revision) values (v_stream, v_next)
                  on conflict (stream_id) do update set revision = excluded.revision;
              end if;
`],
  [`            elsif v_written = 0 then
              select f.last_revision`, `            elsif v_written = 0 then
              if v_actual is not null then ${MOVE_BACK} end if;
              select f.last_revision`],
  [`              delete from es.events e where e.stream_id = v_stream and e.stream_revision between v_first and v_next;
`, `              delete from es.events e where e.stream_id = v_stream and e.stream_revision between v_first and v_next;
              if v_actual is not null then ${MOVE_BACK} end if;
`],
]);

export const EventStoreAppend013_1766300000000 = sqlMigration('EventStoreAppend013_1766300000000', {
  up: APPEND_FEW_V4_FUNCTION,
  down: APPEND_FEW_V3_FUNCTION,
});

export const EVENT_STORE_MIGRATIONS: MigrationClass[] = [
  EventStore001_1764000001000,
  EventStore002_1764000002000,
  EventStore003_1764000003000,
  EventStore004_1764800000000,
  EventStore005_1764900000000,
  EventStore006_1765000000000,
  EventStoreAnnounce007_1765100002000,
  EventStoreJson008_1765300000000,
  EventStorePlans009_1765500000000,
  EventStoreAppend010_1765700000000,
  EventStoreClaims011_1765900000000,
  EventStorePlans012_1766200000000,
  EventStoreAppend013_1766300000000,
];

interface AppendItem { streamId: string; events: NewEvent[]; expected: ExpectedRevision; claim?: AppendClaim }
export type AppendRow = { outcome: string; actual: string | null; next_revision: string | null; global_position: string | null; transaction_id: string | null };

/** Errors that abort a whole group (a race with another process creating a stream, a deadlock): the group is tried again. */
const RETRY_GROUP = new Set(['23505', '40P01']);

type Row = {
  global_position: string; transaction_id: string; stream_id: string; stream_revision: string; event_id: string;
  type: string; data: unknown; metadata: Record<string, unknown>; created_at: Date;
};

/**
 * The columns a Row holds, named: a prepared statement's result may not change shape, and a
 * `select *` would (PostgreSQL: "cached plan must not change result type") on every connection of a
 * running process once a migration added a column to es.events.
 */
const EVENT_COLUMNS = 'global_position, transaction_id, stream_id, stream_revision, event_id, type, data, metadata, created_at';
/** The same columns of the alias `e`. */
const E_EVENT_COLUMNS = EVENT_COLUMNS.split(', ').map((c) => `e.${c}`).join(', ');

const toRecorded = (r: Row): RecordedEvent => ({
  id: r.event_id,
  streamId: r.stream_id,
  revision: BigInt(r.stream_revision),
  type: r.type,
  data: r.data,
  metadata: r.metadata,
  position: { commit: BigInt(r.transaction_id), prepare: BigInt(r.global_position) },
  createdAt: r.created_at,
});

const filterSql = (f: SubscriptionFilter | undefined, params: unknown[]): string => {
  let sql = '';
  if (f?.streamPrefixes?.length) {
    params.push(f.streamPrefixes.map((p) => p.replace(/[\\%_]/g, (c) => '\\' + c) + '%'));
    sql += ` and stream_id like any((select $${params.length}::text[])::text[])`;
  }
  if (f?.eventTypes?.length) {
    params.push(f.eventTypes);
    sql += ` and type = any((select $${params.length}::text[])::text[])`;
  }
  return sql;
};

/**
 * A filtered page's statement, prepared under a name of its text (a handful per process: one per
 * filter shape). Its plan is index order on events_global whatever the values, and parsing and
 * planning its five parts cost about as much as running it (0.3 + 0.5 ms against 1 ms, measured in
 * the distributed topology, where every service with a filtered projection reads the store itself).
 * Its limits and the filter's lists are read through sub-selects (`limit (select $4::int)`): a plan
 * made for the values knew them, the generic plan could not, the two costed differently, and the
 * statement was planned anew on every call (pg_prepared_statements: 200 custom plans of 200).
 */
const filteredPageQuery = preparedShapes('es_filtered');

/**
 * One stream's events from a revision on (the primary key), prepared. The revision and the limit are
 * read through sub-selects, so that the plan for the values and the generic plan cost the same and
 * the generic one is used (see unknownArrayLengths in @loyalty/platform).
 */
const READ_STREAM_SQL = prepared('es_read_stream',
  `select ${EVENT_COLUMNS} from es.events where stream_id = $1 and stream_revision >= (select $2::bigint) order by stream_revision limit (select $3::bigint)`);
/**
 * Many stream ranges in one statement, prepared: each range read through the primary key (stream,
 * revision). As a plain join, on a store whose statistics lagged, PostgreSQL hash-joined the whole of
 * es.events (in parallel) per read; the `lateral` subquery leaves no plan but the probe.
 */
const READ_STREAMS_SQL = prepared('es_read_streams',
  `select ${E_EVENT_COLUMNS}, q.n from unnest($1::text[], $2::bigint[], $3::bigint[]) with ordinality as q(s, f, t, n)
     cross join lateral (
       select ${EVENT_COLUMNS} from es.events x
        where x.stream_id = q.s and x.stream_revision >= q.f and (q.t is null or x.stream_revision <= q.t)
        order by x.stream_revision) e
    order by q.n, e.stream_revision`);
/** The appends' calls, prepared: parsed once per connection (the functions cache their own plans). */
/**
 * The events' data and metadata travel as one JSON array each (`$n::json`), split into the
 * functions' json[] in order: as array parameters every event's JSON text was escaped again
 * for PostgreSQL's array syntax, character by character (the `pg` driver's escapeElement: 2.4 % of
 * the service's CPU in the ingest benchmark). `json`, not `jsonb`: see EventStoreJson008.
 */
const jsonArray = (n: number): string => `array(select e from json_array_elements($${n}::json) with ordinality as t(e, i) order by i)`;
/** One JSON array of the events' data (or metadata), for a jsonArray parameter. */
const jsonArrayOf = (values: unknown[]): string => JSON.stringify(values);

/**
 * Whether JSON text (JSON.stringify's) holds a NUL character (`\u0000` not itself escaped). A json
 * column would store it, but no text column of the read models can hold it: an event carrying one
 * is refused at the append, as jsonb refused it (the gateway refuses NUL in requests before that).
 */
const hasNul = (json: string): boolean => {
  for (let i = json.indexOf('\\u0000'); i >= 0; i = json.indexOf('\\u0000', i + 1)) {
    let backslashes = 0;
    for (let k = i - 1; k >= 0 && json[k] === '\\'; k--) backslashes++;
    if (backslashes % 2 === 0) return true;
  }
  return false;
};

/** The error PostgreSQL gave for a NUL in a jsonb value, for an append that carries one. */
const NUL_REFUSED = '22P05';
const nulRefused = (streamId: string): Error =>
  Object.assign(new Error(`an event of ${streamId} holds a NUL character (\\u0000), which the event store cannot keep`), { code: NUL_REFUSED });
const APPEND_SET_SQL = prepared('es_append_set', `select * from es.append_set($1::text[], $2::text[], $3::int[], $4::uuid[], $5::text[], ${jsonArray(6)}, ${jsonArray(7)})`);
const APPEND_FEW_SQL = prepared('es_append_few', `select * from es.append_few($1::text[], $2::text[], $3::int[], $4::uuid[], $5::text[], ${jsonArray(6)}, ${jsonArray(7)})`);
/** The same with claims (AppendClaim): their names, fingerprints and seconds, one per stream (null where an append takes none). */
const APPEND_FEW_CLAIMS_SQL = prepared('es_append_few_claims',
  `select * from es.append_few($1::text[], $2::text[], $3::int[], $4::uuid[], $5::text[], ${jsonArray(6)}, ${jsonArray(7)}, $8::text[], $9::text[], $10::int[])`);
/** The claims' parameters of appends (APPEND_FEW_CLAIMS_SQL), in their order. */
const claimParams = (items: readonly { claim?: AppendClaim }[]): string[] => [
  pgArray(items.map((it) => it.claim?.name ?? null)), pgArray(items.map((it) => it.claim?.fingerprint ?? null)),
  pgArray(items.map((it) => it.claim?.ttlSeconds ?? null)),
];
/** Groups of up to this many streams go through es.append_few (a loop), larger ones through es.append_set (set-based): EventStore006. */
const APPEND_FEW_MAX = 20;
/** The announcement of appends (after their commit), prepared; its payload names the announcing store. */
const ANNOUNCE_SQL = prepared('es_announce', `select pg_notify('es_appended', $1::text)`);

/**
 * es.append_few's first seven arguments for appends that a service's own statement writes in the
 * same transaction as rows of its own (ledger.enrol_new: an email's identity claimed and its member
 * created together): streams, expected revisions, event counts, ids, types, and the events' data and
 * metadata as JSON arrays. Throws, as append() refuses it, for an event that holds a NUL. The caller tells the store
 * afterwards (PostgresEventStore.appendedElsewhere) and reads each stream's row with appendOutcomeOf.
 */
export const appendFewArguments = (appends: readonly { streamId: string; events: readonly NewEvent[]; expected: ExpectedRevision }[]): string[] => {
  const events = appends.flatMap((a) => a.events);
  const data = jsonArrayOf(events.map((e) => e.data));
  const metadata = jsonArrayOf(events.map((e) => e.metadata ?? {}));
  if (hasNul(data) || hasNul(metadata)) throw nulRefused(appends.map((a) => a.streamId).join(', '));
  return [
    pgArray(appends.map((a) => a.streamId)), pgArray(appends.map((a) => (typeof a.expected === 'bigint' ? a.expected.toString() : a.expected))),
    pgArray(appends.map((a) => a.events.length)), pgArray(events.map((e) => e.id)), pgArray(events.map((e) => e.type)), data, metadata,
  ];
};

/** An es.append_few row (idx, outcome, actual, next_revision, global_position, transaction_id) as append() answers it: a result, or the error it throws. */
export const appendOutcomeOf = (streamId: string, expected: ExpectedRevision, r: AppendRow | undefined, claim?: AppendClaim): AppendResult | Error => {
  if (r?.outcome === 'claimed') return new ClaimTakenError(streamId, claim?.name ?? '');
  if (!r || r.outcome === 'conflict') {
    return new WrongExpectedRevisionError(streamId, expected, r?.actual == null ? 'no_stream' : BigInt(r.actual));
  }
  // the transaction id (xid8) orders commits; the largest global position of the append is its position
  return { nextRevision: BigInt(r.next_revision!), position: { commit: BigInt(r.transaction_id!), prepare: BigInt(r.global_position!) } };
};

export interface PostgresEventStoreOptions {
  /** Test-only: awaited after an append's rows are written, just before COMMIT (to delay commits out of order). */
  beforeCommit?: () => Promise<void>;
  /** Appends that arrive while one is being written share the next transaction (default true). */
  groupCommit?: boolean;
}

/**
 * PostgreSQL adapter. Global order is (transaction id, sequence); readers only see rows whose
 * transaction id is below the oldest transaction still running (pg_snapshot_xmin), so an append
 * that commits late can never be skipped by a subscriber that has moved past it.
 */
export class PostgresEventStore implements EventStore {
  private listener: PoolClient | null = null;
  private listening: Promise<void> | null = null;
  private readonly wakers = new Set<() => void>();
  private closed = false;

  private readonly group: GroupCommitter<AppendItem, AppendResult> | null;
  /** Stream reads that arrive while one is running share the next query. */
  private readonly reads: GroupCommitter<StreamRange, RecordedEvent[]> | null;

  constructor(private readonly pool: Pool, private readonly pollMs = 500, private readonly options: PostgresEventStoreOptions = {}) {
    this.group = options.beforeCommit || options.groupCommit === false ? null : new GroupCommitter((items) => this.appendGroup(items), 500, 2);
    this.reads = options.groupCommit === false ? null : new GroupCommitter((items) => this.readStreams(items));
  }

  /** Many stream ranges in one statement (the coalesced `readStream`s, and batch readers such as cold projection folds). */
  async readStreams(items: readonly StreamRange[]): Promise<RecordedEvent[][]> {
    if (!items.length) return [];
    const { rows } = await this.pool.query<Row & { n: string }>(
      READ_STREAMS_SQL([items.map((i) => i.streamId), items.map((i) => i.from.toString()), items.map((i) => (i.to === undefined ? null : i.to.toString()))]));
    const out: RecordedEvent[][] = items.map(() => []);
    for (const r of rows) out[Number(r.n) - 1].push(toRecorded(r));
    return out;
  }

  readonly claims = true;

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision, options?: AppendOptions): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event');
    const claim = options?.claim;
    if (claim) this.purgeClaimsLater();
    const result = this.group ? await this.group.submit({ streamId, events, expected, claim }) : await this.appendAlone(streamId, events, expected, claim);
    this.announce();
    return result;
  }

  /** Lapsed claims are deleted hourly once this store has taken one (a lapsed name is free to take anyway). */
  private claimsPurge: NodeJS.Timeout | null = null;
  private purgeClaimsLater(): void {
    if (this.claimsPurge || this.closed) return;
    const purge = () => void this.pool.query('delete from es.claims where expires_at <= now()').catch(() => undefined);
    this.claimsPurge = setInterval(purge, 3_600_000);
    this.claimsPurge.unref();
    purge();
  }

  /** At most one NOTIFY es_appended per this many ms (the appends' own notifications were dropped: EventStore007). */
  static ANNOUNCE_MS = 10;
  private announceTimer: NodeJS.Timeout | null = null;
  private lastAnnounce = 0;
  /**
   * The payload of this store's NOTIFYs: its own listener ignores them (its subscriptions were
   * woken when the append returned), so an announcement does not make them read again.
   */
  private readonly announcer = randomUUID();

  /**
   * After an append committed: this process's subscriptions are woken now, other processes' by a
   * NOTIFY sent at most ANNOUNCE_MS after the previous one. An append made while one is pending is
   * covered by it (it is sent after that append committed); every append is thus announced within
   * ANNOUNCE_MS and a round trip, and under load one NOTIFY covers many appends.
   */
  private announce(): void {
    this.poke();
    if (this.announceTimer || this.closed) return;
    const wait = Math.max(0, this.lastAnnounce + PostgresEventStore.ANNOUNCE_MS - Date.now());
    this.announceTimer = setTimeout(() => void this.notifyNow(), wait);
  }

  private async notifyNow(): Promise<void> {
    if (this.announceTimer) clearTimeout(this.announceTimer);
    this.announceTimer = null;
    this.lastAnnounce = Date.now();
    // lost (database trouble): the other processes' subscriptions poll (pollMs)
    await this.pool.query(ANNOUNCE_SQL([this.announcer])).catch(() => undefined);
  }

  /** One group of appends (group commit): as few statements, so transactions, as its streams allow. */
  private async appendGroup(items: AppendItem[]): Promise<GroupOutcome<AppendResult>[]> {
    if (items.length === 1) return [await this.appendAlone(items[0].streamId, items[0].events, items[0].expected, items[0].claim).catch((e: Error) => e)];
    // a stream appears once per statement; a second append to it (rare: two writers of one stream in one
    // group) goes in the next statement, after the first one's outcome is known
    const seen = new Set<string>();
    const now: number[] = [];
    const later: number[] = [];
    items.forEach((it, i) => {
      if (seen.has(it.streamId)) later.push(i);
      else {
        seen.add(it.streamId);
        now.push(i);
      }
    });
    const out: GroupOutcome<AppendResult>[] = new Array(items.length);
    const first = await this.appendSet(now.map((i) => items[i]));
    now.forEach((i, k) => { out[i] = first[k]; });
    if (later.length) {
      const rest = await this.appendGroup(later.map((i) => items[i]));
      later.forEach((i, k) => { out[i] = rest[k]; });
    }
    return out;
  }

  /**
   * Appends to distinct streams in one statement (es.append_set), streams in a fixed order so that two
   * processes' groups lock stream rows in the same order. A group aborted by a race is tried again;
   * a group that fails otherwise (one bad event) is split, so only the bad append fails.
   */
  private async appendSet(items: AppendItem[]): Promise<GroupOutcome<AppendResult>[]> {
    if (items.length === 1) return [await this.appendAlone(items[0].streamId, items[0].events, items[0].expected, items[0].claim).catch((e: Error) => e)];
    const order = items.map((_, i) => i).sort((a, b) => (items[a].streamId < items[b].streamId ? -1 : items[a].streamId > items[b].streamId ? 1 : a - b));
    const sorted = order.map((i) => items[i]);
    let params: string[];
    try {
      params = appendFewArguments(sorted);
    } catch (e) {
      if ((e as { code?: string }).code !== NUL_REFUSED) throw e;
      // an event with a NUL fails its own append only (each append alone: the bad one is refused)
      return Promise.all(items.map((it) => this.appendAlone(it.streamId, it.events, it.expected, it.claim).catch((err: Error) => err)));
    }
    // appends that take claims go through es.append_few whatever the group's size (es.append_set takes none)
    const claims = sorted.some((it) => it.claim);
    const sql = claims ? APPEND_FEW_CLAIMS_SQL([...params, ...claimParams(sorted)]) : (sorted.length <= APPEND_FEW_MAX ? APPEND_FEW_SQL : APPEND_SET_SQL)(params);
    for (let attempt = 0; ; attempt++) {
      try {
        const { rows } = await this.pool.query<AppendRow & { idx: number }>(sql);
        const out: GroupOutcome<AppendResult>[] = new Array(items.length);
        for (const r of rows) {
          const it = sorted[r.idx - 1];
          out[order[r.idx - 1]] = appendOutcomeOf(it.streamId, it.expected, r, it.claim);
        }
        return out;
      } catch (e) {
        if (RETRY_GROUP.has((e as { code?: string }).code ?? '') && attempt < 3) continue;
        return Promise.all(items.map((it) => this.appendAlone(it.streamId, it.events, it.expected, it.claim).catch((err: Error) => err)));
      }
    }
  }

  /**
   * After appends that another statement wrote through es.append_few (appendFewArguments): this
   * process's subscriptions are woken and the other processes' are told, as after append().
   */
  appendedElsewhere(): void {
    this.announce();
  }

  private async appendAlone(streamId: string, events: NewEvent[], expected: ExpectedRevision, claim?: AppendClaim): Promise<AppendResult> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.appendOnce(streamId, events, expected, claim);
      } catch (e) {
        // 23505: a concurrent append created this stream (or wrote these ids) first; there was no stream row to
        // lock. It has committed by now, so a retry locks its row and decides properly: `any` appends after it,
        // a duplicate of it is idempotent, anything else is a conflict with the actual revision.
        if ((e as { code?: string }).code !== '23505') throw e;
        if (attempt >= 2) throw new WrongExpectedRevisionError(streamId, expected, await this.revisionOf(streamId));
      }
    }
  }

  private async revisionOf(streamId: string): Promise<bigint | 'no_stream'> {
    const { rows } = await this.pool.query<{ revision: string }>('select revision from es.streams where stream_id = $1', [streamId]);
    return rows.length ? BigInt(rows[0].revision) : 'no_stream';
  }

  private async appendOnce(streamId: string, events: NewEvent[], expected: ExpectedRevision, claim?: AppendClaim): Promise<AppendResult> {
    if (!this.options.beforeCommit) return this.appendInOneTrip(streamId, events, expected, claim);
    if (claim) throw new Error('claims are taken by the one-statement append only (not with the test-only beforeCommit)');
    if (hasNul(jsonArrayOf(events.map((e) => [e.data, e.metadata ?? {}])))) throw nulRefused(streamId);
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      const cur = await client.query<{ revision: string }>('select revision from es.streams where stream_id = $1 for update', [streamId]);
      const actual: bigint | 'no_stream' = cur.rowCount ? BigInt(cur.rows[0].revision) : 'no_stream';

      // Idempotent append: every id already in the stream means this exact append happened before.
      const ids = events.map((e) => e.id);
      const existing = await client.query<Row>(
        'select * from es.events where stream_id = $1 and event_id = any($2::uuid[]) order by stream_revision', [streamId, ids]);
      if (existing.rowCount === events.length) {
        await client.query('commit');
        const last = toRecorded(existing.rows[existing.rows.length - 1]);
        return { nextRevision: last.revision, position: last.position };
      }
      if (existing.rowCount) {
        throw new WrongExpectedRevisionError(streamId, expected, actual);
      }
      if (expected === 'no_stream' ? actual !== 'no_stream' : expected !== 'any' && actual !== expected) {
        throw new WrongExpectedRevisionError(streamId, expected, actual);
      }
      const first = actual === 'no_stream' ? 0n : actual + 1n;
      const inserted = await client.query<{ global_position: string; transaction_id: string; stream_revision: string }>(
        `insert into es.events (stream_id, stream_revision, event_id, type, data, metadata)
         select $1, $2::bigint + ord - 1, id, type, data, metadata
         from unnest($3::uuid[], $4::text[], $5::json[], $6::json[]) with ordinality as t(id, type, data, metadata, ord)
         returning global_position, transaction_id, stream_revision`,
        [streamId, first.toString(), ids, events.map((e) => e.type), events.map((e) => JSON.stringify(e.data)),
          events.map((e) => JSON.stringify(e.metadata ?? {}))],
      );
      const next = first + BigInt(events.length) - 1n;
      await client.query(
        'insert into es.streams (stream_id, revision) values ($1, $2) on conflict (stream_id) do update set revision = excluded.revision',
        [streamId, next.toString()]);
      await client.query(`select pg_notify('es_appended', '')`);
      if (this.options.beforeCommit) await this.options.beforeCommit();
      await client.query('commit');
      const last = inserted.rows.reduce((a, b) => (BigInt(a.global_position) > BigInt(b.global_position) ? a : b));
      return { nextRevision: next, position: { commit: BigInt(last.transaction_id), prepare: BigInt(last.global_position) } };
    } catch (e) {
      await client.query('rollback').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }

  /**
   * The append as one statement (es.append_few with one stream, which es.append_events wraps since
   * EventStoreAppend010: called directly, without the wrapper's own call): one round trip, its own transaction.
   */
  private async appendInOneTrip(streamId: string, events: NewEvent[], expected: ExpectedRevision, claim?: AppendClaim): Promise<AppendResult> {
    const params = appendFewArguments([{ streamId, events, expected }]);
    const { rows } = await this.pool.query<AppendRow>(claim ? APPEND_FEW_CLAIMS_SQL([...params, ...claimParams([{ claim }])]) : APPEND_FEW_SQL(params));
    const out = appendOutcomeOf(streamId, expected, rows[0], claim);
    if (out instanceof Error) throw out;
    return out;
  }

  async readStream(streamId: string, fromRevision = 0n, maxCount?: number): Promise<RecordedEvent[]> {
    // the whole rest of the stream: shared with the reads of other streams that arrive meanwhile
    if (this.reads && maxCount === undefined) return this.reads.submit({ streamId, from: fromRevision });
    const { rows } = await this.pool.query<Row>(READ_STREAM_SQL([streamId, fromRevision.toString(), maxCount ?? 1_000_000_000]));
    return rows.map(toRecorded);
  }

  /**
   * The newest unfiltered events read by any subscriber of this store: a complete, gap-free run of
   * the global order after `from` (readAll returns everything visible after its start, in order;
   * a page read from where the run ends extends it), at most RECENT_EVENTS long, so the other
   * subscribers of the process anywhere inside it are served from memory instead of each reading
   * the same rows again (measured before the run was kept: every event read about three times).
   */
  private recent: { from: Position; events: RecordedEvent[] } | null = null;
  private static readonly RECENT_EVENTS = 5_000;
  /** A filtered page looks at no more than this many events of the store (matching or not). */
  static FILTER_WINDOW = 2_000;
  /** The page a filtered reader at the end of the run reads unfiltered (the projection runners' own page size, so the reads are shared). */
  private static readonly SHARED_PAGE = 1_000;
  /** Unfiltered reads under way, by start position: a subscriber at the same place waits for that read instead of issuing its own. */
  private readonly reading = new Map<string, { maxCount: number; page: Promise<{ events: RecordedEvent[]; held: boolean }> }>();

  async readAll(after: Position, maxCount: number, filter?: SubscriptionFilter): Promise<RecordedEvent[]> {
    return (await this.readPage(after, maxCount, filter)).events;
  }

  readonly reportsSkipped = true;

  /**
   * The visible events after `after` (below the watermark, in global order), and whether committed
   * events wait above the watermark when none is visible (`held`: an older transaction is still open).
   * A filtered read also says how far it has looked (`horizon`) when it found every matching event
   * up to there: the reader may move past the events the filter left out.
   */
  private async readPage(after: Position, maxCount: number, filter?: SubscriptionFilter): Promise<Page> {
    const unfiltered = !filter?.streamPrefixes?.length && !filter?.eventTypes?.length;
    const page = this.recent;
    if (page && page.events.length && comparePositions(after, page.from) >= 0) {
      // `after` is inside the page (or at its start): what follows it there, if anything
      const i = comparePositions(after, page.from) === 0 ? 0 : indexAfter(page.events, after);
      if (i >= 0 && i < page.events.length) {
        if (unfiltered) return { events: page.events.slice(i, i + maxCount), held: false };
        return filterRun(page.events, i, maxCount, filter);
      }
      if (!unfiltered && i === page.events.length) {
        // At the run's end: what follows is read once, unfiltered, for every reader of the process
        // (the unfiltered readers ask for the same page and share the read, and it extends the run),
        // and filtered here. Each filtered reader asking the store itself cost PostgreSQL a window
        // of up to FILTER_WINDOW rows per page: five times the unfiltered read (measured, ingest).
        const next = await this.readPage(after, Math.max(maxCount, PostgresEventStore.SHARED_PAGE));
        if (!next.events.length) return { events: [], held: next.held };
        return filterRun(next.events, 0, maxCount, filter);
      }
    }
    if (unfiltered) {
      const key = `${after.commit}:${after.prepare}`;
      const under = this.reading.get(key);
      if (under && under.maxCount >= maxCount) {
        const page = await under.page;
        return { events: page.events.slice(0, maxCount), held: page.held };
      }
      const page = this.queryPage(after, maxCount, filter);
      this.reading.set(key, { maxCount, page });
      try {
        return await page;
      } finally {
        if (this.reading.get(key)?.page === page) this.reading.delete(key);
      }
    }
    return this.queryPage(after, maxCount, filter);
  }

  private async queryPage(after: Position, maxCount: number, filter?: SubscriptionFilter): Promise<Page> {
    const unfiltered = !filter?.streamPrefixes?.length && !filter?.eventTypes?.length;
    if (!unfiltered) return this.queryFilteredPage(after, maxCount, filter);
    // One query answers both: the visible events (below the watermark) and, only when there are none,
    // the first event above it (`held`: committed events may wait there while an older transaction is
    // open). The rows above the watermark used to come back with the visible ones, up to the page's
    // length, their data decoded and dropped, to be read again by the next page: under a steady stream
    // of group commits the page read about 1.6 rows for every event it delivered (ingest benchmark).
    const params: unknown[] = [after.commit.toString(), after.prepare.toString(), maxCount];
    const { rows } = await this.pool.query<Row & { visible: boolean }>(
      `with v as (
         select *, true as visible from es.events
          where (transaction_id, global_position) > ($1::text::xid8, $2::bigint)
            and transaction_id < pg_snapshot_xmin(pg_current_snapshot())
          order by transaction_id, global_position limit $3)
       select * from (
         select * from v
         union all
         (select *, false from es.events
           where not exists (select 1 from v) and (transaction_id, global_position) > ($1::text::xid8, $2::bigint)
           order by transaction_id, global_position limit 1)) page
       order by transaction_id, global_position`, params);
    const events: RecordedEvent[] = [];
    for (const r of rows) {
      if (!r.visible) break;
      events.push(toRecorded(r));
    }
    if (events.length) this.rememberPage(after, events);
    return { events, held: events.length === 0 && rows.length > 0 };
  }

  /**
   * The matching events after `after`, and the newest visible event of the store as the horizon, in
   * ONE statement (one snapshot, one watermark): when the page holds every matching event up to the
   * watermark (fewer rows than asked, or it reached a row above the watermark), nothing between the
   * last of them and the horizon matches, so the reader may move to the horizon. Only matching rows
   * are sent: a service whose read model takes a few kinds of events no longer receives and decodes
   * every event of the store (distributed mode: each process reads the store for itself).
   */
  private async queryFilteredPage(after: Position, maxCount: number, filter?: SubscriptionFilter): Promise<Page> {
    // The events after `after` are read in the global index's order, at most WINDOW of them, and
    // only the matching ones are sent. The window keeps only the columns the filter tests; the
    // matching rows are read whole afterwards (copying every row's data into the window cost about
    // 2.5 µs a row, most of a page's time when few rows match). Filtering the whole rest of the store instead let PostgreSQL
    // (estimating few matches) gather every later event in a bitmap and sort it, per page: a reader
    // behind by 20,000 events paid for all of them on every page.
    const window = Math.max(PostgresEventStore.FILTER_WINDOW, maxCount);
    const params: unknown[] = [after.commit.toString(), after.prepare.toString(), maxCount, window];
    const { rows } = await this.pool.query<Partial<Row> & {
      visible: boolean | null; h_tx: string | null; h_gp: string | null; n_raw: number; r_tx: string | null; r_gp: string | null; r_held: boolean | null;
    }>(filteredPageQuery(
      `with w as (select pg_snapshot_xmin(pg_current_snapshot()) as xmin),
       raw as materialized (
         select transaction_id, global_position, stream_id, type from es.events
          where (transaction_id, global_position) > ($1::text::xid8, $2::bigint)
         order by transaction_id, global_position limit (select $4::int)),
       h as (select x.transaction_id::text as h_tx, x.global_position as h_gp from es.events x, w
             where x.transaction_id < w.xmin order by x.transaction_id desc, x.global_position desc limit 1),
       r as (select count(*)::int as n_raw, bool_or(raw.transaction_id >= w.xmin) as r_held from raw, w),
       r_end as (select raw.transaction_id::text as r_tx, raw.global_position as r_gp from raw
                 order by raw.transaction_id desc, raw.global_position desc limit 1)
       select p.*, h.h_tx, h.h_gp, r.n_raw, r.r_held, r_end.r_tx, r_end.r_gp from (select 1) one
       left join h on true
       cross join r
       left join r_end on true
       left join lateral (
         select ${E_EVENT_COLUMNS}, e.transaction_id < w.xmin as visible
           from (select m.* from raw m where true ${filterSql(filter, params)}
                  order by m.transaction_id, m.global_position limit (select $3::int)) m
           join es.events e on e.transaction_id = m.transaction_id and e.global_position = m.global_position, w
          order by e.transaction_id, e.global_position
       ) p on true`, params));
    const found = rows.filter((r) => r.stream_id !== null && r.stream_id !== undefined);
    const events: RecordedEvent[] = [];
    let heldRow = false;
    for (const r of found) {
      if (!r.visible) { heldRow = true; break; }
      events.push(toRecorded(r as Row));
    }
    const h = rows[0];
    const complete = found.length < maxCount || heldRow;
    let horizon: Position | undefined;
    if (complete && h) {
      if (h.n_raw >= window && !h.r_held && h.r_tx != null && h.r_gp != null) {
        // a full window, every row of it visible: every match up to its last row was sent
        horizon = { commit: BigInt(h.r_tx), prepare: BigInt(h.r_gp) };
      } else if (h.h_tx != null && h.h_gp != null) {
        // the window reached the end of the store or a row above the watermark: every visible row was in it
        horizon = { commit: BigInt(h.h_tx), prepare: BigInt(h.h_gp) };
      }
    }
    return { events, held: events.length === 0 && found.length > 0, horizon };
  }

  /** Extends the run of recent events with a page read from where it ends; a newer page starts a new run; an older one leaves it. */
  private rememberPage(after: Position, events: RecordedEvent[]): void {
    const run = this.recent;
    const end = run && run.events.length ? run.events[run.events.length - 1].position : null;
    if (run && end && comparePositions(after, end) < 0 && comparePositions(after, run.from) >= 0) {
      // a page that starts inside the run (a read that began before another one extended it): what
      // it holds after the run's end follows the run without a gap
      const k = events.findIndex((e) => comparePositions(e.position, end) > 0);
      if (k >= 0) this.rememberPage(end, events.slice(k));
      return;
    }
    if (run && end && comparePositions(after, end) === 0) {
      let merged = run.events.concat(events);
      let from = run.from;
      const cut = merged.length - PostgresEventStore.RECENT_EVENTS;
      if (cut > 0) {
        from = merged[cut - 1].position;
        merged = merged.slice(cut);
      }
      this.recent = { from, events: merged };
    } else if (!end || comparePositions(after, end) > 0) {
      this.recent = { from: after, events };
    }
  }

  /**
   * How far a reader at `after` is behind (issue 11, projection lag on /metrics and /readyz): the
   * visible events after it (counted up to `cap`) and the age of the oldest of them. One range scan
   * of the global index.
   */
  async lagAfter(after: Position, cap = 100_000): Promise<{ events: number; seconds: number }> {
    const { rows } = await this.pool.query<{ n: number; age: number | null }>(
      `select count(*)::int as n, extract(epoch from clock_timestamp() - min(created_at))::float8 as age from (
         select created_at from es.events
          where (transaction_id, global_position) > ($1::text::xid8, $2::bigint)
            and transaction_id < pg_snapshot_xmin(pg_current_snapshot())
          order by transaction_id, global_position limit $3) pending`,
      [after.commit.toString(), after.prepare.toString(), cap]);
    return { events: rows[0].n, seconds: Math.max(0, rows[0].age ?? 0) };
  }

  async headPosition(): Promise<Position> {
    const { rows } = await this.pool.query<{ transaction_id: string; global_position: string }>(
      `select transaction_id, global_position from es.events
       where transaction_id < pg_snapshot_xmin(pg_current_snapshot())
       order by transaction_id desc, global_position desc limit 1`);
    return rows.length ? { commit: BigInt(rows[0].transaction_id), prepare: BigInt(rows[0].global_position) } : START;
  }

  /**
   * The newest committed event, whether or not a subscriber can see it yet (transactions still
   * running below it hold the watermark back): a read-your-writes target for a reader that must
   * include every write already acknowledged, by any service.
   */
  async committedHead(): Promise<Position> {
    const { rows } = await this.pool.query<{ transaction_id: string; global_position: string }>(
      'select transaction_id, global_position from es.events order by transaction_id desc, global_position desc limit 1');
    return rows.length ? { commit: BigInt(rows[0].transaction_id), prepare: BigInt(rows[0].global_position) } : START;
  }

  subscribe(options: SubscribeOptions): Subscription {
    let position = options.from;
    let stopped = false;
    let wake: (() => void) | null = null;
    // A poke that arrives while a read is in flight must not be lost, or the subscriber sleeps a whole pollMs.
    let poked = false;
    const waker = () => { poked = true; wake?.(); };
    this.wakers.add(waker);
    void this.ensureListener();
    const batchSize = options.batchSize ?? 500;
    let held = 0; // consecutive empty reads while committed events wait above the watermark
    let atTail = false; // the last read found fewer events than a batch (or nothing): new ones arrive in dribs
    let hurry: (() => void) | null = null;
    const loop = (async () => {
      while (!stopped) {
        const linger = atTail && options.linger ? options.linger() : 0;
        if (linger > 0) {
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, linger);
            hurry = () => { clearTimeout(t); resolve(); };
          });
          hurry = null;
        }
        poked = false;
        try {
          const page = await this.readPage(position, batchSize, options.filter);
          const events = page.events;
          if (events.length) {
            held = 0;
            atTail = events.length < batchSize;
            await options.onEvents(events);
            position = events[events.length - 1].position;
          }
          // every matching event up to the horizon was delivered: move past the ones filtered out
          if (page.horizon && options.onSkipped && comparePositions(page.horizon, position) > 0) {
            position = page.horizon;
            options.onSkipped(position);
            // the end of the recent run is not the end of the store: read on
            if (page.recent) continue;
          }
          if (events.length) continue;
          // Committed events can sit above the watermark while any older transaction (in any database of the
          // cluster) is still open; no NOTIFY follows when it ends, so look again soon rather than after pollMs.
          held = page.held ? held + 1 : 0;
        } catch (e) {
          options.onError?.(e);
        }
        atTail = true;
        if (stopped) break;
        if (poked) continue;
        void this.ensureListener(); // re-LISTEN if the connection was lost
        const delay = held ? Math.min(this.pollMs, 5 * 2 ** Math.min(held, 12)) : this.pollMs;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, delay);
          wake = () => { clearTimeout(t); resolve(); };
        });
        wake = null;
      }
    })();
    return {
      hurry: () => hurry?.(),
      stop: async () => {
        stopped = true;
        hurry?.();
        wake?.();
        this.wakers.delete(waker);
        await loop;
      },
    };
  }

  /** Wakes subscriptions now (an in-process hint after a local append; NOTIFY covers other processes). */
  poke(): void {
    for (const w of this.wakers) w();
  }

  /** One LISTEN connection per store, however many subscriptions start at once. */
  private ensureListener(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.listening ??= this.listen();
    return this.listening;
  }

  private async listen(): Promise<void> {
    let client: PoolClient | null = null;
    try {
      client = await this.pool.connect();
      const c = client;
      // another store's appends (another process, or an older release's functions: an empty payload)
      c.on('notification', (n) => { if (n.payload !== this.announcer) this.poke(); });
      c.on('error', () => {
        // connection lost: hand it back broken and listen again on the next subscribe; polling delivers meanwhile
        if (this.listener === c) this.dropListener(c, true);
      });
      await c.query('listen es_appended');
      if (this.closed) {
        c.release();
        return;
      }
      this.listener = c;
      this.poke(); // a subscription may have read before LISTEN took effect
    } catch {
      if (client) client.release(true);
      this.listening = null; // polling still delivers
    }
  }

  private dropListener(c: PoolClient, broken: boolean): void {
    this.listener = null;
    this.listening = null;
    c.release(broken || undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.claimsPurge) clearInterval(this.claimsPurge);
    // an announcement still pending goes out now
    if (this.announceTimer) await this.notifyNow();
    await this.listening;
    const c = this.listener;
    if (c) {
      await c.query('unlisten es_appended').catch(() => undefined);
      if (this.listener === c) this.dropListener(c, false);
    }
  }
}

/** A page of a global read: its events, whether events wait above the watermark, and (filtered reads) how far it looked. */
interface Page { events: RecordedEvent[]; held: boolean; horizon?: Position; recent?: boolean }

/**
 * The matching events of a gap-free run from index `from`, at most `maxCount`, and the run's end as
 * the horizon when every match of the rest of the run fitted (the reader may move past the others).
 */
const filterRun = (run: RecordedEvent[], from: number, maxCount: number, filter: SubscriptionFilter | undefined): Page => {
  const events: RecordedEvent[] = [];
  let k = from;
  for (; k < run.length && events.length < maxCount; k++) if (matchesFilter(run[k], filter)) events.push(run[k]);
  const complete = k === run.length || events.length < maxCount;
  return { events, held: false, horizon: complete ? run[run.length - 1].position : undefined, recent: true };
};

/** The index of the first event after `p` when `p` is the position of an event of the page; -1 otherwise. */
const indexAfter = (events: RecordedEvent[], p: Position): number => {
  let lo = 0;
  let hi = events.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const c = comparePositions(events[mid].position, p);
    if (c === 0) return mid + 1;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
};

export { comparePositions };
