import { MigrationClass, sqlMigration } from '@loyalty/platform';
import { LEDGER_TIME_MIGRATIONS } from './sweeps/time.migrations';
import { ORDER_MIGRATIONS } from './orders/orders.migrations';
import { FINANCE_MIGRATIONS } from './finance/finance.migrations';
import { LedgerEnrolNew001_1766100000000 } from './members/enrol-new.migrations';

export const Ledger001_1764000011000 = sqlMigration('Ledger001_1764000011000', {
  legacyId: 'ledger-001',
  up: `
      create schema if not exists ledger;
      -- identity index: written by commands (claims), so one email/phone/ref maps to one member
      create table ledger.identities (
        tenant text not null, kind text not null, value text not null, member_id text not null,
        created_at timestamptz not null default now(),
        primary key (tenant, kind, value)
      );
      create index identities_member on ledger.identities (tenant, member_id);
      -- per-member data keys; erasure deletes the key, which shreds the PII sealed in the event store
      create table ledger.member_keys (tenant text not null, member_id text not null, key bytea not null, primary key (tenant, member_id));
      -- read model for lists, filters and liability
      create table ledger.members (
        seq bigserial not null unique,
        tenant text not null,
        member_id text not null,
        email text, phone text, external_ref text,
        state text not null,
        available_cents bigint not null default 0,
        pending_cents bigint not null default 0,
        reserved_cents bigint not null default 0,
        lifetime_earned_cents bigint not null default 0,
        lifetime_redeemed_cents bigint not null default 0,
        revision bigint not null,
        created_at timestamptz not null,
        primary key (tenant, member_id)
      );
      create index members_email on ledger.members (tenant, email);
      create index members_state on ledger.members (tenant, state, seq);
    `,
  down: `
      drop schema if exists ledger cascade;
    `,
});

export const LEDGER_MIGRATIONS: MigrationClass[] = [
  Ledger001_1764000011000,
  ...LEDGER_TIME_MIGRATIONS,
  ...ORDER_MIGRATIONS,
  ...FINANCE_MIGRATIONS,
  LedgerEnrolNew001_1766100000000,
];
