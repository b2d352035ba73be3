import { MigrationClass, sqlMigration } from '@loyalty/platform';

const SUMS = `
  d_available bigint not null default 0, d_pending bigint not null default 0, d_negative bigint not null default 0,
  d_members bigint not null default 0, d_issued bigint not null default 0, d_lifetime_redeemed bigint not null default 0,
  earned bigint not null default 0, adjusted bigint not null default 0, redeemed bigint not null default 0,
  restored bigint not null default 0, expired bigint not null default 0, reversed bigint not null default 0,
  rejected bigint not null default 0`;

/**
 * The finance read model (decisions §9a), owned by the ledger's FinanceProjection:
 * - finance_movements: one row per member event that changed a liability figure, at its programme time
 *   (the differences of available, pending, negative balance, members, lifetime figures, and the
 *   change of outstanding booked under its movement kind);
 * - finance_daily: the same sums per programme partition and UTC day (programme time), so a figure at T
 *   is the days before T's day plus the movements of T's day up to T;
 * - finance_entries: every entry of the partition with its current status, for GET /v1/ledger-entries.
 */
export const LedgerFinance001_1764000014000 = sqlMigration('LedgerFinance001_1764000014000', {
  legacyId: 'ledger-finance-001',
  up: `
      create schema if not exists ledger;
      create table ledger.finance_movements (
        tenant text not null,
        at timestamptz not null,
        seq bigserial not null,
        member_id text not null,
        event_id text not null,
        ${SUMS},
        primary key (tenant, at, seq)
      );
      create table ledger.finance_daily (
        tenant text not null,
        day date not null,
        ${SUMS},
        primary key (tenant, day)
      );
      create table ledger.finance_entries (
        tenant text not null,
        id text not null,
        member_id text not null,
        type text not null,
        status text not null,
        amount_cents bigint not null,
        reason_code text, rule text, parent_entry_id text, order_ref text,
        release_at timestamptz, expires_at timestamptz,
        created_at timestamptz not null,
        primary key (tenant, id)
      );
      create index finance_entries_period on ledger.finance_entries (tenant, created_at, id);
      create index finance_entries_type on ledger.finance_entries (tenant, type, created_at, id);
    `,
  down: `
      drop table if exists ledger.finance_movements, ledger.finance_daily, ledger.finance_entries cascade;
    `,
});

/**
 * Issue 13: the member's ledger (GET /v1/members/{id}/ledger) is read from here in recording order
 * (the member stream revision of the entry's event), since the member aggregate no longer holds
 * closed entries; existing rows are numbered from the PostgreSQL event store when it is in this
 * database (an EventStoreDB deployment numbers them with `npm run rebuild`; until then they come first).
 */
export const LedgerFinance002_1764000020000 = sqlMigration('LedgerFinance002_1764000020000', {
  up: `
      alter table ledger.finance_entries add column member_rev bigint not null default -1;
      do $$ begin
        if to_regclass('es.events') is not null then
          update ledger.finance_entries f set member_rev = e.stream_revision
            from es.events e
           where e.stream_id = 'member-' || f.tenant || '-' || f.member_id and e.type = 'EntryRecorded' and e.data->>'id' = f.id;
        end if;
      end $$;
      create index finance_entries_member on ledger.finance_entries (tenant, member_id, member_rev, id);
    `,
  down: `
      drop index if exists ledger.finance_entries_member;
      alter table ledger.finance_entries drop column if exists member_rev;
    `,
});

export const FINANCE_MIGRATIONS: MigrationClass[] = [
  LedgerFinance001_1764000014000,
  LedgerFinance002_1764000020000,
];

/** Column lists shared by the projection and the queries. */
export const SUM_COLUMNS = ['d_available', 'd_pending', 'd_negative', 'd_members', 'd_issued', 'd_lifetime_redeemed',
  'earned', 'adjusted', 'redeemed', 'restored', 'expired', 'reversed', 'rejected'] as const;
export type SumColumn = (typeof SUM_COLUMNS)[number];
