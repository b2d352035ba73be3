import { MigrationClass, sqlMigration } from '@loyalty/platform';

export const Gateway001_1764000008000 = sqlMigration('Gateway001_1764000008000', {
  legacyId: 'gateway-001',
  up: `
      create schema if not exists gateway;
      create table gateway.api_keys (
        id text primary key,
        program_id text not null,
        mode text not null check (mode in ('live','test')),
        name text,
        prefix text not null,
        hash bytea not null,
        scopes text[] not null,
        rate_burst int,
        rate_per_second int,
        created_at timestamptz not null default now(),
        expires_at timestamptz,
        revoked_at timestamptz,
        rotated_to text
      );
      create index api_keys_prefix on gateway.api_keys (prefix);
      create table gateway.idempotency (
        tenant text not null,
        key text not null,
        request_hash text not null,
        state text not null,
        response_status int,
        response_body jsonb,
        created_at timestamptz not null default now(),
        primary key (tenant, key)
      );
      create table gateway.rejected_calls (
        id bigserial primary key,
        program_id text not null,
        mode text not null,
        key_id text,
        method text not null,
        path text not null,
        status int not null,
        slug text,
        detail text,
        request_id text,
        at timestamptz not null default now()
      );
      create index rejected_calls_program on gateway.rejected_calls (program_id, at);
    `,
  down: `
      drop schema if exists gateway cascade;
    `,
});

export const Gateway002_1764000009000 = sqlMigration('Gateway002_1764000009000', {
  legacyId: 'gateway-002',
  up: `create index if not exists idempotency_created_at on gateway.idempotency (created_at);`,
  down: `
      drop index if exists gateway.idempotency_created_at;
    `,
});

// Gateways cache keys by prefix; every change of a key (revocation, rotation, a wipe) is announced
// so that each replica drops it at once (ApiKeysService).
export const Gateway003_1764000010000 = sqlMigration('Gateway003_1764000010000', {
  legacyId: 'gateway-003',
  up: `
      create or replace function gateway.notify_key_changed() returns trigger language plpgsql as $fn$
      begin
        perform pg_notify('api_key_changed', coalesce(new.prefix, old.prefix));
        return null;
      end $fn$;
      create trigger api_keys_changed after insert or update or delete on gateway.api_keys
        for each row execute function gateway.notify_key_changed();
    `,
  down: `
      drop trigger if exists api_keys_changed on gateway.api_keys;
      drop function if exists gateway.notify_key_changed();
    `,
});

// The results of Idempotency-Keys recorded together (issue 7): one primary-key probe per key, in a
// function so that the call can be a prepared statement on its generic plan. As an
// \`update … from unnest(…)\` the statement was parsed and planned on every call (0.25 ms a call in
// the reserve benchmark, more than running it), and a generic plan of it made while the table was
// small could hash-join a sequential scan of the table and keep doing so as it grew.
export const GatewayIdempotencyDone004_1765100000000 = sqlMigration('GatewayIdempotencyDone004_1765100000000', {
  up: `
      create or replace function gateway.idempotency_done(p_tenants text[], p_keys text[], p_status int[], p_bodies text[])
      returns void language plpgsql
      set enable_seqscan = off
      as $fn$
      begin
        for i in 1 .. coalesce(array_length(p_tenants, 1), 0) loop
          update gateway.idempotency set state = 'done', response_status = p_status[i], response_body = p_bodies[i]::jsonb
           where tenant = p_tenants[i] and key = p_keys[i];
        end loop;
      end $fn$;
    `,
  down: `
      drop function if exists gateway.idempotency_done(text[], text[], int[], text[]);
    `,
});

export const GATEWAY_MIGRATIONS: MigrationClass[] = [
  Gateway001_1764000008000,
  Gateway002_1764000009000,
  Gateway003_1764000010000,
  GatewayIdempotencyDone004_1765100000000,
];
