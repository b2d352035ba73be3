import { MigrationClass, sqlMigration } from '@loyalty/platform';

/** Read models of the redemption service (schema `redemption`): lookups by id and code, and due rows for the expiry sweep. */
export const Redemption001_1764000016000 = sqlMigration('Redemption001_1764000016000', {
  legacyId: 'redemption-001',
  up: `
      create schema if not exists redemption;
      create table redemption.redemptions (
        tenant text not null,
        id text not null,
        member_id text not null,
        code text not null,
        mode text not null,
        status text not null,
        amount_cents bigint not null,
        order_ref text,
        ledger_entry_id text not null,
        expires_at timestamptz,
        created_at timestamptz not null,
        updated_at timestamptz not null default now(),
        primary key (tenant, id)
      );
      create index redemptions_code on redemption.redemptions (tenant, code);
      create index redemptions_due on redemption.redemptions (tenant, expires_at) where status = 'created' and expires_at is not null;
      create table redemption.reservations (
        tenant text not null,
        id text not null,
        member_id text not null,
        status text not null,
        amount_cents bigint not null,
        cart_ref text,
        order_ref text,
        ledger_entry_id text,
        expires_at timestamptz not null,
        created_at timestamptz not null,
        updated_at timestamptz not null default now(),
        primary key (tenant, id)
      );
      create index reservations_due on redemption.reservations (tenant, expires_at) where status = 'open';
    `,
  down: `
      drop schema if exists redemption cascade;
    `,
});

// Status moves of a batch (issue 7): one primary-key probe per row, in a function so that the call
// can be a prepared statement on its generic plan. As an \`update … from unnest(…)\` each move was
// parsed and planned on every call (0.25 ms a call in the reserve benchmark, more than running it),
// and a generic plan of it made while the table was small could hash-join a sequential scan of the
// table and keep doing so as it grew. A row moves only out of the status named (\`p_from\`), so
// replaying an event changes nothing; a null order_ref or ledger_entry_id leaves the column as it is.
export const RedemptionMoves002_1765100001000 = sqlMigration('RedemptionMoves002_1765100001000', {
  up: `
      create or replace function redemption.move_redemptions(p_from text, p_tenants text[], p_ids text[], p_status text[], p_order_refs text[])
      returns void language plpgsql
      set enable_seqscan = off
      as $fn$
      begin
        for i in 1 .. coalesce(array_length(p_tenants, 1), 0) loop
          update redemption.redemptions set status = p_status[i], order_ref = coalesce(p_order_refs[i], order_ref), updated_at = now()
           where tenant = p_tenants[i] and id = p_ids[i] and status = p_from;
        end loop;
      end $fn$;
      create or replace function redemption.move_reservations(p_from text, p_tenants text[], p_ids text[], p_status text[], p_order_refs text[], p_entry_ids text[])
      returns void language plpgsql
      set enable_seqscan = off
      as $fn$
      begin
        for i in 1 .. coalesce(array_length(p_tenants, 1), 0) loop
          update redemption.reservations
             set status = p_status[i], order_ref = coalesce(p_order_refs[i], order_ref),
                 ledger_entry_id = coalesce(p_entry_ids[i], ledger_entry_id), updated_at = now()
           where tenant = p_tenants[i] and id = p_ids[i] and status = p_from;
        end loop;
      end $fn$;
    `,
  down: `
      drop function if exists redemption.move_redemptions(text, text[], text[], text[], text[]);
      drop function if exists redemption.move_reservations(text, text[], text[], text[], text[], text[]);
    `,
});

/**
 * Which of a group's new voucher codes are taken (issue 7, twelfth round): one probe of the code
 * index per code, in a function whose plans may not read the table sequentially. As a prepared
 * statement, the generic plan made while redemption.redemptions was empty (a new installation, a
 * new benchmark database) was a sequential scan per code, kept until autovacuum next analyzed the
 * table: 2.2 ms a check instead of 0.04 ms once 12,000 redemptions had been written, which halved
 * the redemption rate of a benchmark run.
 */
export const RedemptionCodes003_1765400001000 = sqlMigration('RedemptionCodes003_1765400001000', {
  up: `
      create or replace function redemption.codes_taken(p_tenants text[], p_codes text[])
      returns setof bigint language plpgsql stable
      set enable_seqscan = off
      as $fn$
      begin
        return query
        select q.n from unnest(p_tenants, p_codes) with ordinality as q(tenant, code, n)
          cross join lateral (select 1 from redemption.redemptions r where r.tenant = q.tenant and r.code = q.code limit 1) r;
      end $fn$;
    `,
  down: `
      drop function if exists redemption.codes_taken(text[], text[]);
    `,
});

export const REDEMPTION_MIGRATIONS: MigrationClass[] = [
  Redemption001_1764000016000,
  RedemptionMoves002_1765100001000,
  RedemptionCodes003_1765400001000,
];

/** This service's tables keyed by `tenant`: the sandbox wipe deletes a sandbox's rows from them. */
export const REDEMPTION_TENANT_TABLES = ['redemption.redemptions', 'redemption.reservations'] as const;
