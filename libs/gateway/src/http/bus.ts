import { Inject, Injectable } from '@nestjs/common';
import { CommandBus } from '@loyalty/messaging';
import { COMMAND_BUS, withRequestId } from '@loyalty/platform';
import type { FastifyReply } from 'fastify';
import { KeyedReply } from '@loyalty/contracts';
import { GatewayRequest, headerOf } from './request-context';

/** The gateway's side of the bus: every call names the key's programme partition and the key as actor. */
@Injectable()
export class Bus {
  constructor(@Inject(COMMAND_BUS) private readonly bus: CommandBus) {}

  /** The call goes as part of `req` (the bus forwards its request id), whether or not the request's scope reached this far (request-context). */
  request<T>(req: GatewayRequest, pattern: string, payload: Record<string, unknown> = {}, key?: string): Promise<T> {
    const auth = req.auth!;
    return withRequestId(req.requestId, () => this.bus.request<T>(pattern, { tenant: auth.tenant, actor: auth.keyId, ...payload }, key ?? auth.tenant));
  }

  /**
   * A call to a command that keeps its Idempotency-Key itself (`@Idempotent({ claimedByCommand: true })`):
   * the key and the request's fingerprint go with it, and a replay of an earlier call with the same
   * key is answered with `Idempotent-Replay: true`. Answers the command's result.
   */
  async requestKeyed<T>(req: GatewayRequest, res: FastifyReply, pattern: string, payload: Record<string, unknown>, key?: string): Promise<T> {
    const out = await this.request<KeyedReply<T>>(req, pattern, { ...payload, idempotency_key: headerOf(req, 'idempotency-key'), idempotency: req.idempotency }, key);
    if (out.replayed && req.idempotency) res.header('Idempotent-Replay', 'true');
    return out.result;
  }

  /** Admin-plane calls name the partition themselves. */
  requestAs<T>(tenant: string, pattern: string, payload: Record<string, unknown> = {}, key?: string): Promise<T> {
    return this.bus.request<T>(pattern, { tenant, actor: 'admin', ...payload }, key ?? tenant);
  }
}
