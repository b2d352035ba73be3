import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { IdempotencyClaim, PATTERNS } from '@loyalty/contracts';
import { reply } from '@loyalty/messaging';
import type { CommandHandler, WireHead } from '@loyalty/event-store';
import { COMMAND_HANDLER } from '@loyalty/platform';
import { ExpirySweeper } from './expiry/expiry.sweeper';
import { RedemptionRows } from './projections/redemption-rows';
import { QuoteInput, ReservationsService, ReserveInput } from './reservations/reservations.service';
import { CreateRedemptionInput, VouchersService } from './vouchers/vouchers.service';

type T = { tenant: string; actor?: string };
const P = PATTERNS.redemption;

/** The redemption service's bus adapter: one line per pattern. */
@Controller()
export class RedemptionMessages {
  constructor(
    private readonly rows: RedemptionRows,
    @Inject(COMMAND_HANDLER) private readonly handler: CommandHandler,
    private readonly vouchers: VouchersService,
    private readonly reservations: ReservationsService,
    private readonly sweeper: ExpirySweeper,
  ) {}

  @MessagePattern(P.create)
  create(@Payload() p: T & { member_id: string; body: CreateRedemptionInput; idempotency_key?: string; idempotency?: IdempotencyClaim }) {
    return reply(() => this.vouchers.create(p.tenant, p.member_id, p.body, { idempotencyKey: p.idempotency?.key ?? p.idempotency_key, claim: p.idempotency, actor: p.actor }));
  }

  @MessagePattern(P.confirm)
  confirm(@Payload() p: T & { id: string; order_ref: string }) { return reply(() => this.vouchers.confirm(p.tenant, p.id, p.order_ref)); }

  @MessagePattern(P.void)
  void(@Payload() p: T & { id: string }) { return reply(() => this.vouchers.void(p.tenant, p.id)); }

  @MessagePattern(P.get)
  get(@Payload() p: T & { id: string }) { return reply(() => this.vouchers.get(p.tenant, p.id)); }

  @MessagePattern(P.byCode)
  byCode(@Payload() p: T & { code: string }) { return reply(() => this.vouchers.byCode(p.tenant, p.code)); }

  @MessagePattern(P.quote)
  quote(@Payload() p: T & { body: QuoteInput }) { return reply(() => this.reservations.quote(p.tenant, p.body)); }

  @MessagePattern(P.reserve)
  reserve(@Payload() p: T & { body: ReserveInput; idempotency_key?: string; idempotency?: IdempotencyClaim }) {
    return reply(() => this.reservations.reserve(p.tenant, p.body, { idempotencyKey: p.idempotency?.key ?? p.idempotency_key, claim: p.idempotency }));
  }

  @MessagePattern(P.confirmReservation)
  confirmReservation(@Payload() p: T & { id: string; order_ref: string }) { return reply(() => this.reservations.confirm(p.tenant, p.id, p.order_ref)); }

  @MessagePattern(P.releaseReservation)
  releaseReservation(@Payload() p: T & { id: string }) { return reply(() => this.reservations.release(p.tenant, p.id)); }

  @MessagePattern(P.getReservation)
  getReservation(@Payload() p: T & { id: string }) { return reply(() => this.reservations.get(p.tenant, p.id)); }

  /** The admin plane wiped a sandbox (the ledger deleted its streams): this service forgets it and deletes its rows of it. */
  @MessagePattern(P.wipe)
  wipe(@Payload() p: T & { head?: WireHead | null }) {
    return reply(async () => {
      // no cached state of the deleted member streams survives
      this.handler.forget();
      return { forgotten: true, ...(await this.rows.wipe(p.tenant, p.head)) };
    });
  }

  /** Called by the admin plane right after a sandbox test clock moves. */
  @MessagePattern(P.sweep)
  sweep(@Payload() p: T) { return reply(() => this.sweeper.sweep(p.tenant)); }
}
