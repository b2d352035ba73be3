import { MigrationClass, sqlMigration } from '@loyalty/platform';

/**
 * Schema `webhook`: endpoints, the durable delivery queue and its attempt log, and the lots the
 * expiring-soon sweep watches. Every table is keyed by tenant (the sandbox wipe relies on it).
 */
export const Webhook001_1764000017000 = sqlMigration('Webhook001_1764000017000', {
  legacyId: 'webhook-001',
  up: `
      create schema if not exists webhook;
      create table webhook.endpoints (
        tenant text not null,
        id text not null,
        url text not null,
        events text[] not null,
        secret text not null,
        status text not null default 'active',
        failure_count integer not null default 0,
        disabled_at timestamptz,
        deleted_at timestamptz,
        created_at timestamptz not null default now(),
        primary key (tenant, id)
      );
      create index endpoints_live on webhook.endpoints (tenant, created_at) where deleted_at is null;

      create table webhook.deliveries (
        tenant text not null,
        id text not null,
        seq bigserial not null,
        endpoint_id text not null,
        -- what caused it (event id + kind…): one delivery per cause and endpoint, however often the events are replayed
        source_key text not null,
        -- deliveries of one subject (a member) to one endpoint go out one at a time, in order
        subject text not null,
        kind text not null,
        payload text not null,
        -- pending | sending | delivered | failed | cancelled
        status text not null default 'pending',
        attempts integer not null default 0,
        next_attempt_at timestamptz not null default now(),
        locked_until timestamptz,
        last_status_code integer,
        last_error text,
        delivered_at timestamptz,
        created_at timestamptz not null default now(),
        primary key (tenant, id),
        unique (tenant, endpoint_id, source_key)
      );
      create index deliveries_due on webhook.deliveries (seq) where status = 'pending';
      create index deliveries_sending on webhook.deliveries (tenant, endpoint_id, subject) where status = 'sending';
      create index deliveries_by_endpoint on webhook.deliveries (tenant, endpoint_id, seq desc);

      create table webhook.attempts (
        tenant text not null,
        delivery_id text not null,
        attempt integer not null,
        status_code integer,
        ok boolean not null,
        error text,
        response_excerpt text,
        duration_ms integer not null,
        attempted_at timestamptz not null default now(),
        primary key (tenant, delivery_id, attempt)
      );

      -- a read model (rebuilt from the events): each member's unspent dated lots
      create table webhook.lot_watch (
        tenant text not null,
        member_id text not null,
        lot_id text not null,
        remaining_cents bigint not null,
        expires_at timestamptz not null,
        primary key (tenant, member_id, lot_id)
      );
      create index lot_watch_due on webhook.lot_watch (tenant, expires_at);
      -- the sweep's own record: which lots were announced (once per lot, whatever a rebuild does)
      create table webhook.lot_notices (
        tenant text not null,
        member_id text not null,
        lot_id text not null,
        notified_at timestamptz not null default now(),
        primary key (tenant, member_id, lot_id)
      );
    `,
  down: `
      drop schema if exists webhook cascade;
    `,
});

export const WEBHOOK_MIGRATIONS: MigrationClass[] = [
  Webhook001_1764000017000,
];

/** This service's tables keyed by `tenant` (children before parents): the sandbox wipe deletes a sandbox's rows from them. */
export const WEBHOOK_TENANT_TABLES = ['webhook.attempts', 'webhook.deliveries', 'webhook.endpoints', 'webhook.lot_notices', 'webhook.lot_watch'] as const;
