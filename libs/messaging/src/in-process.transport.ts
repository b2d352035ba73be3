import { Logger } from '@nestjs/common';
import { CustomTransportStrategy, MessageHandler, Server } from '@nestjs/microservices';
import { lastValueFrom, isObservable } from 'rxjs';
import { currentRequestId, problem } from '@loyalty/platform';
import { CommandBus, handleAsPartOf, handlerFailure, Reply, unwrap } from './command-bus.port';
import { observedRequest } from './bus-telemetry';

/**
 * In-process transport: a Nest microservice strategy whose @MessagePattern handlers are called
 * directly by InProcessBus. Same handlers, same envelopes as the Kafka transport, no broker.
 */
export class InProcessServer extends Server implements CustomTransportStrategy {
  listen(callback: () => void): void { callback(); }
  close(): void { /* nothing to close */ }
  on(): never { throw new Error('InProcessServer has no events'); }
  unwrap<T>(): T { throw new Error('InProcessServer has no underlying client'); }

  /** Handlers by pattern, looked up once: Nest's look-up parses the pattern on every call. */
  private readonly handlers = new Map<string, MessageHandler | null>();

  handler(pattern: string): MessageHandler | null {
    let h = this.handlers.get(pattern);
    if (h === undefined) {
      h = this.getHandlerByPattern(pattern);
      // remember only what is registered: handlers are all added before the app listens
      if (h) this.handlers.set(pattern, h);
    }
    return h ?? null;
  }
}

const requestLog = new Logger('InProcessBus');

export interface InProcessBusOptions {
  /**
   * Hold every payload to what the Kafka transport carries (default: under tests, NODE_ENV=test as
   * jest sets it, or LOYALTY_BUS_CHECKS=1): it must come through a JSON round trip unchanged (no
   * Date, Map, class instance, BigInt or non-finite number; an undefined member is dropped, as JSON
   * drops it), and the handler receives a copy frozen below its top level, so a handler that writes
   * into its input fails its tests. Off, the handler receives the payload's top level as its own
   * object and everything below it as the caller's objects: the deep copy it replaces (a JSON
   * round trip of every payload) cost about 9 % of the service's CPU per ingested event (a batch of
   * 200 events copied on its way to the ledger; issue 7, eighteenth round).
   */
  checkPayloads?: boolean;
}

const checksByDefault = (): boolean => process.env.NODE_ENV === 'test' || process.env.LOYALTY_BUS_CHECKS === '1';

/** Where `v` is not what JSON carries unchanged (a JSON pointer), or null. */
const notJson = (v: unknown, at: string): string | null => {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return null;
  if (typeof v === 'number') return Number.isFinite(v) ? null : at;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const bad = v[i] === undefined ? `${at}/${i}` : notJson(v[i], `${at}/${i}`);
      if (bad !== null) return bad;
    }
    return null;
  }
  if (typeof v === 'object') {
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto !== Object.prototype && proto !== null) return at;
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (x === undefined) continue;
      const bad = notJson(x, `${at}/${k}`);
      if (bad !== null) return bad;
    }
    return null;
  }
  return at; // undefined, function, symbol, bigint
};

/**
 * The payload's top level as an object of the handler's own (a shallow copy): the transport marks it
 * with the caller's request id (handleAsPartOf), which must not land on the caller's object (two
 * calls sharing one payload would share the mark); what lies below is shared, never copied.
 */
const ownTopLevel = (v: unknown): unknown => {
  if (Array.isArray(v)) return [...(v as unknown[])];
  if (v && typeof v === 'object') return { ...(v as Record<string, unknown>) };
  return v;
};

const deepFreeze = <T>(v: T): T => {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v as Record<string, unknown>)) deepFreeze(x);
  }
  return v;
};

export class InProcessBus extends CommandBus {
  private readonly checkPayloads: boolean;

  constructor(private readonly server: InProcessServer, options: InProcessBusOptions = {}) {
    super();
    this.checkPayloads = options.checkPayloads ?? checksByDefault();
  }

  request<T>(pattern: string, payload: unknown): Promise<T> {
    // the caller's request, taken before anything awaits (see request-context: edges mode)
    const requestId = currentRequestId();
    return observedRequest('in-process', pattern, () => this.call<T>(pattern, payload, requestId));
  }

  /** The pattern's handler and the payload: checked and copied as the Kafka path would carry it when checks are on (see InProcessBusOptions). */
  private prepare(pattern: string, payload: unknown): { handler: MessageHandler; data: unknown } {
    const handler = this.server.handler(pattern);
    if (!handler) throw problem('internal', `no handler for ${pattern}`);
    if (!this.checkPayloads) return { handler, data: ownTopLevel(payload ?? null) };
    const bad = notJson(payload ?? null, '');
    if (bad !== null) throw problem('internal', `the payload of ${pattern} holds a value JSON does not carry unchanged, at '${bad}'`);
    const data = JSON.parse(JSON.stringify(payload ?? null)) as unknown;
    // everything below the top level frozen: the top level is the handler's own in both modes (and takes the request's mark)
    if (data && typeof data === 'object') for (const x of Object.values(data as Record<string, unknown>)) deepFreeze(x);
    return { handler, data };
  }

  private async call<T>(pattern: string, payload: unknown, requestId: string | undefined): Promise<T> {
    const { handler, data } = this.prepare(pattern, payload);
    let result: unknown;
    try {
      // the handler runs as part of the caller's request, as it would from a Kafka message's headers
      result = await handleAsPartOf(requestId, data, () => {
        requestLog.debug(`handling ${pattern}`);
        return handler(data);
      });
      if (isObservable(result)) result = await lastValueFrom(result);
    } catch (e) {
      // Nest hands back `{ status: 'error', message }` for a handler exception; same as over Kafka.
      throw handlerFailure(pattern, e);
    }
    return unwrap(result as Reply<T>);
  }

  async emit(pattern: string, payload: unknown): Promise<void> {
    const { handler, data } = this.prepare(pattern, payload);
    const requestId = currentRequestId();
    // Fire and forget, like a broker: failures are the handler's to record.
    setImmediate(() => {
      Promise.resolve(handleAsPartOf(requestId, data, () => handler(data))).catch(() => undefined);
    });
  }
}
