import { sqlMigration } from '@loyalty/platform';

/**
 * Throughput (issue 7, twenty-fourth round): a new member's email claimed and the member created in
 * one statement, so one transaction and one commit. Before, an enrolment by email alone waited for
 * two group commits in a row: the identity claim (ledger.identities and the member's PII key), then
 * the member stream's creation. The statement runs a group of enrolments:
 *   1. each email is claimed for its minted member id, in (tenant, value) order as every claim of the
 *      ledger takes identity rows; a taken email answers its owner (an earlier item of the same group
 *      included), a claim won answers the minted id;
 *   2. the winners' PII keys are stored, and their streams created by es.append_few (its first seven
 *      arguments, for every item: the losers' are left out), in stream order as every group append
 *      locks streams;
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
      as $fn$
      declare
        v_count int := cardinality(p_tenants);
        v_data json[] := array(select t.e from json_array_elements(p_data) with ordinality as t(e, i) order by t.i);
        v_meta json[] := array(select t.e from json_array_elements(p_meta) with ordinality as t(e, i) order by t.i);
        v_owner text[] := array_fill(null::text, array[v_count]);
        v_off int[] := array_fill(0, array[v_count]);
        v_won int[] := '{}';
        v_back text[] := '{}';
        v_taken text;
        v_i int;
        v_o int := 0;
        v_first int;
        v_last int;
        w_streams text[] := '{}';
        w_expected text[] := '{}';
        w_counts int[] := '{}';
        w_ids uuid[] := '{}';
        w_types text[] := '{}';
        w_data json[] := '{}';
        w_meta json[] := '{}';
        r record;
      begin
        for v_i in 1 .. v_count loop
          v_off[v_i] := v_o;
          v_o := v_o + p_counts[v_i];
        end loop;
        -- 1. the claims, in (tenant, value) order
        for v_i in select t.i from unnest(p_tenants, p_values) with ordinality as t(tn, v, i) order by t.tn, t.v, t.i loop
          insert into ledger.identities (tenant, kind, value, member_id) values (p_tenants[v_i], 'email', p_values[v_i], p_member_ids[v_i])
          on conflict (tenant, kind, value) do nothing;
          if found then
            v_owner[v_i] := p_member_ids[v_i];
          else
            select x.member_id into v_taken from ledger.identities x
             where x.tenant = p_tenants[v_i] and x.kind = 'email' and x.value = p_values[v_i];
            v_owner[v_i] := v_taken;
          end if;
        end loop;
        -- 2. the winners' keys and streams, in stream order
        for v_i in select t.i from unnest(p_streams) with ordinality as t(s, i) order by t.s, t.i loop
          continue when v_owner[v_i] is distinct from p_member_ids[v_i];
          v_won := v_won || v_i;
          v_first := v_off[v_i] + 1;
          v_last := v_off[v_i] + p_counts[v_i];
          w_streams := w_streams || p_streams[v_i];
          w_expected := w_expected || p_expected[v_i];
          w_counts := w_counts || p_counts[v_i];
          w_ids := w_ids || p_ids[v_first:v_last];
          w_types := w_types || p_types[v_first:v_last];
          w_data := w_data || v_data[v_first:v_last];
          w_meta := w_meta || v_meta[v_first:v_last];
          insert into ledger.member_keys (tenant, member_id, key) values (p_tenants[v_i], p_member_ids[v_i], p_keys[v_i])
          on conflict do nothing;
        end loop;
        if cardinality(v_won) > 0 then
          for r in select * from es.append_few(w_streams, w_expected, w_counts, w_ids, w_types, w_data, w_meta) loop
            v_i := v_won[r.idx];
            -- 3. a creation not written gives its claim and key back
            if r.outcome is distinct from 'ok' then
              delete from ledger.identities x
               where x.tenant = p_tenants[v_i] and x.kind = 'email' and x.value = p_values[v_i] and x.member_id = p_member_ids[v_i];
              delete from ledger.member_keys k where k.tenant = p_tenants[v_i] and k.member_id = p_member_ids[v_i];
              v_back := v_back || p_member_ids[v_i];
              v_owner[v_i] := null;
            end if;
            n := v_i; owner := v_owner[v_i]; outcome := r.outcome; actual := r.actual;
            next_revision := r.next_revision; global_position := r.global_position; transaction_id := r.transaction_id;
            return next;
          end loop;
        end if;
        for v_i in 1 .. v_count loop
          continue when v_i = any(v_won);
          -- an owner earlier in the group whose creation was given back owns nothing: look again
          n := v_i; owner := case when v_owner[v_i] = any(v_back) then null else v_owner[v_i] end; outcome := null; actual := null; next_revision := null; global_position := null; transaction_id := null;
          return next;
        end loop;
      end
      $fn$;
    `,
  down: `
      drop function if exists ledger.enrol_new(text[], text[], text[], bytea[], text[], text[], int[], uuid[], text[], json, json);
    `,
});
