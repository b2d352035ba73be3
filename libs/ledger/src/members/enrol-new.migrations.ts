import { sqlMigration } from '@loyalty/platform';

/**
 * Throughput (issue 7, twenty-fourth round): a new member's email claimed and the member created in
 * one statement, so one transaction and one commit. Before, an enrolment by email alone waited for
 * two group commits in a row: the identity claim (ledger.identities and the member's PII key), then
 * the member stream's creation. The statement runs a group of enrolments:
 *   1. the emails are claimed for their minted member ids by one insert, in (tenant, value) order as
 *      every claim of the ledger takes identity rows; a taken email answers its owner (an earlier item
 *      of the same group included), a claim won answers the minted id;
 *   2. the winners' PII keys are stored, and their streams created by the event store's own group
 *      append (es.append_few for up to 20 streams, es.append_set beyond, as PostgresEventStore
 *      chooses; its seven arguments are given for every item and the losers' left out), in stream
 *      order as every group append locks streams;
 *   3. a creation es.append_few did not write (a conflict: the stream exists) gives its claim and key
 *      back in the same transaction, and answers no owner (the caller looks again), nor do the items
 *      of the group that found it the owner: nothing of a creation that did not happen stays.
 * Answers one row per item: n (1-based), the email's owner, and the creation's es.append_few row
 * (outcome null for an item whose claim was lost). The caller announces the appends
 * (PostgresEventStore.appendedElsewhere).
 */
export const LedgerEnrolNew001_1766100000000 = sqlMigration('LedgerEnrolNew001_1766100000000', {
  up: `
      create function ledger.enrol_new(p_tenants text[], p_values text[], p_member_ids text[], p_keys bytea[],
                                       p_streams text[], p_expected text[], p_counts int[], p_ids uuid[], p_types text[], p_data json, p_meta json)
      returns table (n int, owner text, outcome text, actual bigint, next_revision bigint, global_position bigint, transaction_id text)
      language plpgsql
      set enable_seqscan = off
      set plan_cache_mode = force_generic_plan
      as $fn$
      declare
        v_count int := cardinality(p_tenants);
        v_data json[] := array(select t.e from json_array_elements(p_data) with ordinality as t(e, i) order by t.i);
        v_meta json[] := array(select t.e from json_array_elements(p_meta) with ordinality as t(e, i) order by t.i);
        -- each item's events start after this many of the group's
        v_off int[] := array(select (coalesce(sum(t.c) over (order by t.i rows between unbounded preceding and 1 preceding), 0))::int
                               from unnest(p_counts) with ordinality as t(c, i) order by t.i);
        v_owner text[];
        v_won int[];
        v_back text[] := '{}';
        v_i int;
        w_streams text[];
        w_expected text[];
        w_counts int[];
        w_ids uuid[];
        w_types text[];
        w_data json[];
        w_meta json[];
        a_idx int[];
        a_outcome text[];
        a_actual bigint[];
        a_next bigint[];
        a_gp bigint[];
        a_tx text[];
        v_k int;
      begin
        -- 1. the claims: one insert in (tenant, value) order; an email twice in the group goes to its first item
        with q as (select t.tn, t.v, t.m, t.i::int as i from unnest(p_tenants, p_values, p_member_ids) with ordinality as t(tn, v, m, i)),
             ins as (
               insert into ledger.identities (tenant, kind, value, member_id)
               select distinct on (q.tn, q.v) q.tn, 'email', q.v, q.m from q order by q.tn, q.v, q.i
               on conflict (tenant, kind, value) do nothing
               returning member_id)
        select coalesce(array_agg(q.i order by q.i), '{}') into v_won from q join ins on ins.member_id = q.m;
        -- every item's owner (this statement sees the rows the one above inserted)
        v_owner := array(select x.member_id from unnest(p_tenants, p_values) with ordinality as t(tn, v, i)
                           left join lateral (
                             select y.member_id from ledger.identities y where y.tenant = t.tn and y.kind = 'email' and y.value = t.v) x on true
                          order by t.i);
        -- 2. the winners' keys, and their streams in stream order (as every group append locks them)
        insert into ledger.member_keys (tenant, member_id, key)
        select p_tenants[w], p_member_ids[w], p_keys[w] from unnest(v_won) as w order by 1, 2
        on conflict do nothing;
        v_won := array(select w from unnest(v_won) as w order by p_streams[w], w);
        if cardinality(v_won) > 0 then
          select array_agg(p_streams[w] order by o), array_agg(p_expected[w] order by o), array_agg(p_counts[w] order by o)
            into w_streams, w_expected, w_counts from unnest(v_won) with ordinality as u(w, o);
          select array_agg(p_ids[k] order by o, k), array_agg(p_types[k] order by o, k), array_agg(v_data[k] order by o, k), array_agg(v_meta[k] order by o, k)
            into w_ids, w_types, w_data, w_meta
            from unnest(v_won) with ordinality as u(w, o), generate_series(v_off[w] + 1, v_off[w] + p_counts[w]) as k;
          -- the event store's own choice: a loop of single-row statements for a few streams, set-based beyond (APPEND_FEW_MAX)
          if cardinality(v_won) <= 20 then
            select array_agg(a.idx order by a.idx), array_agg(a.outcome order by a.idx), array_agg(a.actual order by a.idx),
                   array_agg(a.next_revision order by a.idx), array_agg(a.global_position order by a.idx), array_agg(a.transaction_id order by a.idx)
              into a_idx, a_outcome, a_actual, a_next, a_gp, a_tx
              from es.append_few(w_streams, w_expected, w_counts, w_ids, w_types, w_data, w_meta) a;
          else
            select array_agg(a.idx order by a.idx), array_agg(a.outcome order by a.idx), array_agg(a.actual order by a.idx),
                   array_agg(a.next_revision order by a.idx), array_agg(a.global_position order by a.idx), array_agg(a.transaction_id order by a.idx)
              into a_idx, a_outcome, a_actual, a_next, a_gp, a_tx
              from es.append_set(w_streams, w_expected, w_counts, w_ids, w_types, w_data, w_meta) a;
          end if;
          for v_k in 1 .. coalesce(cardinality(a_idx), 0) loop
            v_i := v_won[a_idx[v_k]];
            -- 3. a creation not written gives its claim and key back
            if a_outcome[v_k] is distinct from 'ok' then
              delete from ledger.identities x
               where x.tenant = p_tenants[v_i] and x.kind = 'email' and x.value = p_values[v_i] and x.member_id = p_member_ids[v_i];
              delete from ledger.member_keys k where k.tenant = p_tenants[v_i] and k.member_id = p_member_ids[v_i];
              v_back := v_back || p_member_ids[v_i];
              v_owner[v_i] := null;
            end if;
            n := v_i; owner := v_owner[v_i]; outcome := a_outcome[v_k]; actual := a_actual[v_k];
            next_revision := a_next[v_k]; global_position := a_gp[v_k]; transaction_id := a_tx[v_k];
            return next;
          end loop;
        end if;
        for v_i in 1 .. v_count loop
          continue when v_i = any(v_won);
          -- an owner earlier in the group whose creation was given back owns nothing: look again
          n := v_i; owner := case when v_owner[v_i] = any(v_back) then null else v_owner[v_i] end;
          outcome := null; actual := null; next_revision := null; global_position := null; transaction_id := null;
          return next;
        end loop;
      end
      $fn$;
    `,
  down: `
      drop function if exists ledger.enrol_new(text[], text[], text[], bytea[], text[], text[], int[], uuid[], text[], json, json);
    `,
});
