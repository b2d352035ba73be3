import { MigrationClass, sqlMigration } from '@loyalty/platform';

/** Read models of the time-based and programme-level behaviour (schema `ledger`). */
export const LedgerTime001_1764000012000 = sqlMigration('LedgerTime001_1764000012000', {
  legacyId: 'ledger-time-001',
  up: `
      -- what falls due per member: return-window releases, dated lot expiries, inactivity (due_at =
      -- last activity; the programme's days are added when sweeping) and tier reviews
      create table ledger.due_items (
        tenant text not null, member_id text not null, kind text not null, entry_id text not null default '',
        due_at timestamptz not null,
        primary key (tenant, member_id, kind, entry_id)
      );
      create index due_items_due on ledger.due_items (tenant, due_at);
      create index due_items_all_due on ledger.due_items (due_at);
      -- migration import batches: one adjust entry per member, and the entry that reversed it
      create table ledger.migration_entries (
        tenant text not null, batch_id text not null, member_id text not null, entry_id text not null,
        amount_cents bigint not null, created_at timestamptz not null, reversed_by text,
        primary key (batch_id, entry_id)
      );
      create index migration_entries_entry on ledger.migration_entries (entry_id);
    `,
  down: `
      drop table if exists ledger.due_items, ledger.migration_entries cascade;
    `,
});

export const LEDGER_TIME_MIGRATIONS: MigrationClass[] = [
  LedgerTime001_1764000012000,
];
