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

export const REDEMPTION_MIGRATIONS: MigrationClass[] = [
  Redemption001_1764000016000,
];

/** This service's tables keyed by `tenant`: the sandbox wipe deletes a sandbox's rows from them. */
export const REDEMPTION_TENANT_TABLES = ['redemption.redemptions', 'redemption.reservations'] as const;
