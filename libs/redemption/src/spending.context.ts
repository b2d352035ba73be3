import { Logger } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { Pool, PoolClient } from 'pg';
import { PATTERNS, memberStreamId } from '@loyalty/contracts';
import { CommandHandler, Decision, EventStore, GroupCommitter, ProjectionRunner, RecordedEvent, WireHead, decideOn, wipeTenantRows } from '@loyalty/event-store';
import { MemberAggregate, MemberEvent, SpendingRules, memberEvolver, spendingRules } from '@loyalty/domain-member';
import { CommandBus } from '@loyalty/messaging';
import { AppConfig } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { RedemptionsProjection } from './projections/redemptions.projection';
import { REDEMPTION_TENANT_TABLES } from './redemption.migrations';

/** Owners of redemptions and reservations remembered per process (about 100 bytes each). */
const OWNERS_CACHED = 100_000;

const positiveInt = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : fallback);

export interface SpendingSettings { rules: SpendingRules; voucherTtlSeconds: number; reservationTtlSeconds: number; now: Date }

/** What the redemption service's use cases share: injected once by the module. */
export class SpendingContext {
  readonly projection = new RedemptionsProjection();
  /** the read model's runner, once the module has started it */
  runner: ProjectionRunner | null = null;
  private readonly log = new Logger('SpendingContext');

  constructor(
    readonly config: AppConfig,
    readonly pool: Pool,
    readonly store: EventStore,
    readonly handler: CommandHandler,
    readonly programs: ProgramStore,
    readonly bus: CommandBus,
  ) {}

  /** Any accepted member id form (M-…, ref:…, phone:…) → the member id; the ledger owns identity. */
  async resolveMember(tenant: string, raw: string): Promise<string> {
    const r = await this.bus.request<{ member_id: string }>(PATTERNS.ledger.resolveId, { tenant, id: raw }, raw);
    return r.member_id;
  }

  /** The programme's redemption settings (decisions §6) and its clock, read together. */
  async settings(tenant: string): Promise<SpendingSettings> {
    const [program, now] = await Promise.all([this.programs.forTenant(tenant), this.programs.now(tenant)]);
    return {
      rules: spendingRules(program.settings),
      voucherTtlSeconds: positiveInt(program.settings.voucher_ttl_seconds, 259_200),
      reservationTtlSeconds: positiveInt(program.settings.reservation_ttl_seconds, 900),
      now,
    };
  }

  /**
   * Which member holds a redemption or reservation never changes: the owners this process has
   * created or looked up are remembered (at most OWNERS_CACHED), so confirming what it just
   * reserved reads nothing.
   */
  private readonly owners = new LRUCache<string, string>({ max: OWNERS_CACHED });

  rememberOwner(tenant: string, id: string, memberId: string): void {
    this.owners.set(`${tenant}|${id}`, memberId);
  }

  /** The member holding a redemption (RD-…) or reservation (RS-…) of this tenant; null when there is none. */
  async ownerOf(tenant: string, table: 'redemptions' | 'reservations', id: string): Promise<string | null> {
    const known = this.owners.get(`${tenant}|${id}`);
    if (known) return known;
    const { rows } = await this.pool.query<{ member_id: string }>(
      `select member_id from redemption.${table} where tenant = $1 and id = $2`, [tenant, id]);
    if (!rows.length) return null;
    this.rememberOwner(tenant, id, rows[0].member_id);
    return rows[0].member_id;
  }

  /**
   * This service's part of a sandbox wipe (the ledger deleted the streams first): no cached state
   * of the deleted member streams survives, and the sandbox's redemption rows go.
   */
  async wipe(tenant: string, head?: WireHead | null): Promise<{ rows: number }> {
    this.handler.forget();
    return { rows: await wipeTenantRows(this.store, this.pool, this.runner ? [this.runner] : [], REDEMPTION_TENANT_TABLES, tenant, head) };
  }

  async load(tenant: string, memberId: string): Promise<MemberAggregate> {
    return (await this.handler.load(memberStreamId(tenant, memberId), memberEvolver)).state;
  }

  /**
   * Runs a decision on the member stream (load → decide → append with the expected revision →
   * retry on conflict), builds the reply from the state it produced, and puts the command's own
   * events into this service's read model before replying (read-your-writes).
   */
  async decide<R, V>(tenant: string, memberId: string, decide: (s: MemberAggregate) => Decision<MemberEvent, R> | Promise<Decision<MemberEvent, R>>, view: (s: MemberAggregate, result: R) => V): Promise<V> {
    const streamId = memberStreamId(tenant, memberId);
    const out = await decideOn(this.handler, streamId, memberEvolver, decide);
    // the cached state is folded further by later commands: read it before anything else awaits
    const reply = view(out.state, out.result);
    // the events are stored: a failure to project them now is not the command's (the runner will)
    if (out.events.length) await this.project(streamId, out.events).catch((e: unknown) => this.log.warn(`read model update deferred to the runner: ${(e as Error).message}`));
    return reply;
  }

  /**
   * Applies a command's own events to the read model now, through the projection's own `apply`.
   * Waiting for the projection runner instead would wait for the event store's global watermark,
   * which any long transaction elsewhere holds back (hundreds of ms under load). `apply` is
   * idempotent and only moves a row out of the status it names, so the runner applying the same
   * events later (or a rebuild) changes nothing; the runner alone covers events of other writers
   * (erasure, order events confirming a reservation).
   */
  async project(streamId: string, events: MemberEvent[]): Promise<void> {
    const handled = this.projection.filter.eventTypes;
    const mine = events.filter((e) => handled.includes(e.type));
    if (!mine.length) return;
    await this.projecting.submit({ streamId, events: mine });
  }

  /**
   * Commands' own events that arrive together are applied together (many redemptions at once):
   * new rows in one statement per table, then each status change.
   */
  private readonly projecting = new GroupCommitter<{ streamId: string; events: MemberEvent[] }, void>(async (items) => {
    // a projection instance of its own: the runner's stages rows of its batch in the shared one
    const projection = new RedemptionsProjection();
    const apply = async (tx: PoolClient) => {
      await projection.beforeBatch();
      for (const it of items) {
        for (const e of it.events) await projection.apply(tx, { streamId: it.streamId, type: e.type, data: e.data } as RecordedEvent);
      }
      await projection.afterBatch(tx);
    };
    // no transaction: every write is idempotent and conditional on the status it moves from, a
    // member's rows are written in the order of its events, and the runner applies them all again
    const client = await this.pool.connect();
    try {
      await apply(client);
    } finally {
      client.release();
    }
    return items.map(() => undefined);
  });

  /**
   * A retried command that found its effect already in the stream (its first run crashed after
   * the append): applies the recorded events of that redemption or reservation to the read model
   * now, so the reply's id is found at once, as after a first run.
   */
  async projectRecorded(tenant: string, memberId: string, id: string): Promise<void> {
    const streamId = memberStreamId(tenant, memberId);
    const recorded = (await this.store.readStream(streamId)).filter((e) => {
      const d = e.data as { redemption_id?: string; reservation_id?: string };
      return d.redemption_id === id || d.reservation_id === id;
    });
    await this.project(streamId, recorded.map((e) => ({ type: e.type, data: e.data }) as MemberEvent));
  }
}
