import { MigrationClass, sqlMigration } from '@loyalty/platform';

/**
 * Read models of the referral service (schema `referral`), all rebuilt from the event store:
 * referral codes (member streams), the members' paid orders (order streams) and referrals (their
 * own streams). Every row is keyed by tenant: the sandbox wipe deletes a sandbox's rows from REFERRAL_TENANT_TABLES.
 */
export const Referral001_1764000018000 = sqlMigration('Referral001_1764000018000', {
  legacyId: 'referral-001',
  up: `
      create schema if not exists referral;
      create table referral.codes (
        tenant text not null,
        code text not null,
        member_id text not null,
        primary key (tenant, code)
      );
      create index codes_member on referral.codes (tenant, member_id);
      create table referral.paid_orders (
        tenant text not null,
        order_ref text not null,
        member_id text not null,
        gross_cents bigint not null,
        paid_at timestamptz not null,
        cancelled boolean not null default false,
        primary key (tenant, order_ref)
      );
      create index paid_orders_member on referral.paid_orders (tenant, member_id);
      create table referral.referrals (
        tenant text not null,
        id text not null,
        friend_id text not null,
        advocate_id text not null,
        code text not null,
        status text not null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        revision bigint not null,
        primary key (tenant, id)
      );
      create unique index referrals_friend on referral.referrals (tenant, friend_id);
      create index referrals_advocate on referral.referrals (tenant, advocate_id, created_at);
      create index referrals_id on referral.referrals (id);
      create index referrals_qualified on referral.referrals (updated_at) where status = 'qualified';
    `,
  down: `
      drop schema if exists referral cascade;
    `,
});

export const REFERRAL_MIGRATIONS: MigrationClass[] = [
  Referral001_1764000018000,
];

/** This service's tables keyed by `tenant` (children before parents): the sandbox wipe deletes a sandbox's rows from them. */
export const REFERRAL_TENANT_TABLES = ['referral.codes', 'referral.paid_orders', 'referral.referrals'] as const;
