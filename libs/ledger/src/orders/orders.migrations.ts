import { MigrationClass, sqlMigration } from '@loyalty/platform';

/** Tables of order processing (ledger schema). */
export const LedgerOrders001_1764000013000 = sqlMigration('LedgerOrders001_1764000013000', {
  legacyId: 'ledger-orders-001',
  up: `
      create schema if not exists ledger;
      -- which member stream holds a ledger entry: the admin plane names an entry by its id alone
      create table ledger.entry_index (
        entry_id text primary key,
        tenant text not null,
        member_id text not null
      );
      -- campaign budgets: what each campaign rule has issued in a programme partition
      create table ledger.campaign_budgets (
        tenant text not null,
        rule_id text not null,
        issued_cents bigint not null default 0,
        primary key (tenant, rule_id)
      );
      -- one claim per earn cause, so a retried order event claims the same amount again (idempotent)
      create table ledger.campaign_budget_claims (
        tenant text not null,
        rule_id text not null,
        cause text not null,
        amount_cents bigint not null,
        created_at timestamptz not null default now(),
        primary key (tenant, rule_id, cause)
      );
    `,
  down: `
      drop table if exists ledger.entry_index, ledger.campaign_budgets, ledger.campaign_budget_claims cascade;
    `,
});

export const ORDER_MIGRATIONS: MigrationClass[] = [
  LedgerOrders001_1764000013000,
];
