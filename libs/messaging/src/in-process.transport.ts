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

export class InProcessBus extends CommandBus {
  constructor(private readonly server: InProcessServer) { super(); }

  request<T>(pattern: string, payload: unknown): Promise<T> {
    // the caller's request, taken before anything awaits (see request-context: edges mode)
    const requestId = currentRequestId();
    return observedRequest('in-process', pattern, () => this.call<T>(pattern, payload, requestId));
  }

  /** The pattern's handler and a copy of the payload: a JSON round trip keeps the in-process path honest about what the Kafka path can carry. */
  private prepare(pattern: string, payload: unknown): { handler: MessageHandler; data: unknown } {
    const handler = this.server.handler(pattern);
    if (!handler) throw problem('internal', `no handler for ${pattern}`);
    return { handler, data: JSON.parse(JSON.stringify(payload ?? null)) };
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
