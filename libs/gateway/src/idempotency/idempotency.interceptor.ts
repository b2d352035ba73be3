import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor, OnModuleDestroy, OnModuleInit, SetMetadata, UseInterceptors, applyDecorators } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import { pathOf } from '@loyalty/runtime';
import { hash } from 'node:crypto';
import { Pool } from 'pg';
import { Observable, from, lastValueFrom } from 'rxjs';
import { AppConfig, prepared, problem, validation } from '@loyalty/platform';
import { GroupCommitter } from '@loyalty/event-store';
import { APP_CONFIG, PG_POOL } from '../tokens';
import { GatewayRequest, headerOf } from '../http/request-context';

export const IDEMPOTENT_KEY = 'loyalty:idempotent';
/** A route's Idempotency-Key handling: none, the interceptor's records, or its command's own claim. */
export type IdempotencyMode = boolean | 'command';
/**
 * Marks a non-event write whose Idempotency-Key header is honoured (interface-spec "Errors"). The
 * interceptor is bound to these routes only: reads do not pay for an interceptor chain.
 *
 * `claimedByCommand`: the route's command keeps the key's promises itself, on the PostgreSQL event
 * store (issue 7, nineteenth round): it records the key on the member stream (a retry finds what the
 * first call did and answers as it did) and claims the key, with the request's fingerprint, in the
 * same transaction as its events (AppendClaim: a key held for another member or another body is a
 * 409 `idempotency-key-reused`). The interceptor then only checks the key and hands it on with the
 * fingerprint (`req.idempotency`); no record is written before and after the call. With the
 * EventStoreDB adapter (no claims) such a route is served as any other.
 */
export const Idempotent = (options: { claimedByCommand?: boolean } = {}) =>
  applyDecorators(SetMetadata(IDEMPOTENT_KEY, options.claimedByCommand ? 'command' : true), UseInterceptors(IdempotencyInterceptor));

const RETENTION = "interval '30 days'";
/** A record still in progress after this long belongs to a crashed call and may be taken over. */
const STALE_IN_PROGRESS_SECONDS = 60;

/** The key claims of a group, prepared (parsed once per connection: an insert whose only read is its conflict index). */
const CLAIM_SQL = prepared('idempotency_claim', `with q as (select * from unnest($1::text[], $2::text[], $3::text[]) with ordinality as q(tenant, key, hash, n)),
        firsts as (select distinct on (tenant, key) tenant, key, hash, n from q order by tenant, key, n),
        ins as (
          insert into gateway.idempotency as g (tenant, key, request_hash, state)
          select tenant, key, hash, 'in_progress' from firsts order by tenant, key
          on conflict (tenant, key) do update set request_hash = excluded.request_hash, state = 'in_progress', created_at = now(), response_status = null, response_body = null
            where g.created_at < now() - ${RETENTION}
               or (g.state = 'in_progress' and g.created_at < now() - make_interval(secs => ${STALE_IN_PROGRESS_SECONDS}))
          returning g.tenant, g.key)
   select f.n from firsts f join ins using (tenant, key)`);

/** The results of a group, prepared: a function probing the primary key per key (GatewayIdempotencyDone004). */
const DONE_SQL = prepared('idempotency_done', 'select gateway.idempotency_done($1::text[], $2::text[], $3::int[], $4::text[])');

const canonical = (v: unknown): string => {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v as object).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v ?? null);
};

/**
 * Erasure reaches the idempotency records too: a stored response that shows the erased member
 * (their email and phone) is dropped, so a replay cannot bring the data back. A retry with such a
 * key simply runs again.
 */
export const forgetResponsesAbout = async (pool: Pool, tenant: string, memberId: string): Promise<void> => {
  await pool.query(
    `delete from gateway.idempotency where tenant = $1 and state = 'done' and strpos(response_body::text, $2) > 0`,
    [tenant, JSON.stringify(memberId)]);
};

const checkedKey = (key: string): string => {
  if (key.length === 0 || key.length > 255) {
    throw validation([{ path: '/headers/idempotency-key', message: 'Idempotency-Key must be 1 to 255 characters' }]);
  }
  return key;
};

/** What a key stands for: method, path and body (canonical JSON), hashed. The same key with another fingerprint is a 409. */
const fingerprintOf = (req: GatewayRequest): string =>
  hash('sha256', `${req.method} ${pathOf(req)}\n${canonical(req.body)}`, 'hex');

type Row = { request_hash: string; state: string; response_status: number | null; response_body: unknown; age: number };
type Claim = { tenant: string; key: string; hash: string };
type Result = { tenant: string; key: string; status: number; body: string };

/**
 * Idempotency-Key for writes other than events: same key and body → the original response with
 * `Idempotent-Replay: true`; a different body → 409; while the first call runs → 409 in_progress;
 * failures are not remembered; records live 30 days.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor, OnModuleInit, OnModuleDestroy {
  private purgeTimer: NodeJS.Timeout | null = null;
  /**
   * Claims and results of the calls running at the same time share one statement each (group
   * commit): a reserve-and-confirm run made two single-row transactions per reservation here.
   */
  private readonly claims = new GroupCommitter<Claim, boolean>((items) => this.claimMany(items), 500, 2);
  private readonly results = new GroupCommitter<Result, void>((items) => this.recordMany(items), 500, 2);
  /** Whether routes marked `claimedByCommand` leave the key to their command (the event store takes claims). */
  private readonly commandsClaim: boolean;
  constructor(private readonly reflector: Reflector, @Inject(PG_POOL) private readonly pool: Pool, @Inject(APP_CONFIG) config: AppConfig) {
    this.commandsClaim = config.eventStore === 'postgres';
  }

  /**
   * Takes each key that is free (new, lapsed, or left in progress by a crashed call): true for the
   * items that got theirs. Of two items with one key in a batch only the first can.
   */
  private async claimMany(items: Claim[]): Promise<boolean[]> {
    const { rows } = await this.pool.query<{ n: string }>(CLAIM_SQL([items.map((i) => i.tenant), items.map((i) => i.key), items.map((i) => i.hash)]));
    const won = new Set(rows.map((r) => Number(r.n)));
    return items.map((_, i) => won.has(i + 1));
  }

  private async recordMany(items: Result[]): Promise<void[]> {
    await this.pool.query(DONE_SQL([items.map((i) => i.tenant), items.map((i) => i.key), items.map((i) => i.status), items.map((i) => i.body)]));
    return items.map(() => undefined);
  }

  /** Records are kept 30 days; an hourly purge keeps the table from growing without bound. */
  onModuleInit(): void {
    const purge = () => void this.pool.query(`delete from gateway.idempotency where created_at < now() - ${RETENTION}`).catch(() => undefined);
    purge();
    this.purgeTimer = setInterval(purge, 3_600_000);
    this.purgeTimer.unref();
  }

  onModuleDestroy(): void {
    if (this.purgeTimer) clearInterval(this.purgeTimer);
  }

  /** How a route keeps Idempotency-Keys, from its decorator: not at all (false), here (true), or in its command ('command'). */
  modeOf(targets: [Function, Function]): IdempotencyMode {
    return this.reflector.getAllAndOverride<IdempotencyMode | undefined>(IDEMPOTENT_KEY, targets) ?? false;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const mode = this.modeOf([context.getHandler(), context.getClass()]);
    if (!mode) return next.handle();
    const req = context.switchToHttp().getRequest<GatewayRequest>();
    const res = context.switchToHttp().getResponse<FastifyReply>();
    if (this.direct(req, mode)) return next.handle();
    return from(this.run(req, res, headerOf(req, 'idempotency-key')!, () => lastValueFrom(next.handle(), { defaultValue: undefined })));
  }

  /**
   * The interceptor's work around a route's call whose mode is known (the lean routes' executor in
   * lean-routes.ts; Nest's pipeline goes through `intercept`): the same steps, without an Observable.
   */
  around(req: GatewayRequest, res: FastifyReply, mode: IdempotencyMode, call: () => Promise<unknown>): Promise<unknown> {
    if (!mode || this.direct(req, mode)) return call();
    return this.run(req, res, headerOf(req, 'idempotency-key')!, call);
  }

  /** True when the call goes ahead with nothing recorded here: no key, no caller, or a command that claims the key itself (which gets it on the request). */
  private direct(req: GatewayRequest, mode: IdempotencyMode): boolean {
    const key = headerOf(req, 'idempotency-key');
    if (key === undefined || !req.auth) return true;
    if (mode === 'command' && this.commandsClaim) {
      req.idempotency = { key: checkedKey(key), fingerprint: fingerprintOf(req) };
      return true;
    }
    return false;
  }

  private async run(req: GatewayRequest, res: FastifyReply, key: string, call: () => Promise<unknown>): Promise<unknown> {
    checkedKey(key);
    const tenant = req.auth!.tenant;
    const hash = fingerprintOf(req);
    if (!(await this.claims.submit({ tenant, key, hash }))) {
      const { rows } = await this.pool.query<Row>(
        `select request_hash, state, response_status, response_body, extract(epoch from now() - created_at)::float as age
         from gateway.idempotency where tenant = $1 and key = $2`, [tenant, key]);
      const row = rows[0];
      if (!row) return this.run(req, res, key, call); // the first call failed and forgot the key meanwhile
      if (row.request_hash !== hash) throw problem('idempotency-key-reused', 'This Idempotency-Key was used with a different request body');
      if (row.state === 'in_progress') {
        throw problem('idempotency-in-progress', 'A request with this Idempotency-Key is still running', {
          extra: { reason: 'in_progress' }, headers: { 'Retry-After': '1' },
        });
      }
      res.header('Idempotent-Replay', 'true');
      res.status(row.response_status ?? 200);
      return row.response_body;
    }
    try {
      const body = await call();
      await this.results.submit({ tenant, key, status: res.statusCode, body: JSON.stringify(body ?? null) });
      return body;
    } catch (e) {
      await this.pool.query('delete from gateway.idempotency where tenant = $1 and key = $2', [tenant, key]).catch(() => undefined);
      throw e;
    }
  }
}
