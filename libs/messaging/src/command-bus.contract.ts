import { Controller, DynamicModule, Module } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { problem, ProblemData, ProblemError, withRequestId } from '@loyalty/platform';
import { CommandBus, messageRequestId, reply } from './command-bus.port';

/**
 * One behaviour suite for every CommandBus transport (in-process and Kafka): the same Nest
 * controller, the same calls, the same expectations. A transport's int-spec starts a Nest
 * microservice hosting `commandBusContractModule(...)` and hands the suite a bus to it.
 */

export interface ContractPatterns {
  echo: string;
  problem: string;
  crash: string;
  ordered: string;
  event: string;
  command: string;
  /** answers with the request id the handler runs under (issue 11) */
  context: string;
}

export const contractPatterns = (prefix: string): ContractPatterns => ({
  echo: `${prefix}.echo`,
  problem: `${prefix}.problem`,
  crash: `${prefix}.crash`,
  ordered: `${prefix}.ordered`,
  event: `${prefix}.event`,
  command: `${prefix}.command`,
  context: `${prefix}.context`,
});

export const allPatterns = (p: ContractPatterns): string[] => Object.values(p);

export interface OrderedMessage { key: string; seq: number; delayMs: number }

/** What the handlers saw, in the order they saw it. */
export class ContractRecorder {
  /** key → seqs in the order their handler started. */
  readonly arrivals = new Map<string, number[]>();
  readonly events: unknown[] = [];
  readonly commands: unknown[] = [];
  private readonly activePerKey = new Map<string, number>();
  private active = 0;
  /** Highest number of handlers running at once for one key, and over all keys. */
  maxActivePerKey = 0;
  maxActive = 0;

  enter(key: string, seq: number): void {
    this.arrivals.set(key, [...(this.arrivals.get(key) ?? []), seq]);
    const k = (this.activePerKey.get(key) ?? 0) + 1;
    this.activePerKey.set(key, k);
    this.maxActivePerKey = Math.max(this.maxActivePerKey, k);
    this.active += 1;
    this.maxActive = Math.max(this.maxActive, this.active);
  }

  leave(key: string): void {
    this.activePerKey.set(key, (this.activePerKey.get(key) ?? 1) - 1);
    this.active -= 1;
  }

  resetConcurrency(): void {
    this.maxActivePerKey = 0;
    this.maxActive = 0;
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A module with one controller whose handlers answer the contract's patterns. */
export const commandBusContractModule = (p: ContractPatterns, recorder: ContractRecorder): DynamicModule => {
  @Controller()
  class ContractController {
    @MessagePattern(p.echo)
    echo(@Payload() data: unknown) {
      return reply(() => data);
    }

    @MessagePattern(p.problem)
    fail(@Payload() data: ProblemData) {
      return reply(() => {
        throw new ProblemError(data);
      });
    }

    /** A bug, not a domain problem: thrown outside reply(), so it becomes a Nest RPC error. */
    @MessagePattern(p.crash)
    crash(@Payload() data: { message: string }): never {
      throw new Error(data.message);
    }

    @MessagePattern(p.ordered)
    ordered(@Payload() m: OrderedMessage) {
      return reply(async () => {
        recorder.enter(m.key, m.seq);
        try {
          await sleep(m.delayMs);
          return { key: m.key, seq: m.seq };
        } finally {
          recorder.leave(m.key);
        }
      });
    }

    @EventPattern(p.event)
    onEvent(@Payload() e: unknown): void {
      recorder.events.push(e);
    }

    @MessagePattern(p.context)
    context(@Payload() m: unknown) {
      return reply(() => ({ request_id: messageRequestId(m) ?? null }));
    }

    /** A command the API answers with 202: emitted, but handled by an ordinary request handler. */
    @MessagePattern(p.command)
    command(@Payload() c: unknown) {
      return reply(() => {
        recorder.commands.push(c);
        return { accepted: true };
      });
    }
  }

  @Module({ controllers: [ContractController] })
  class ContractModule {}

  return { module: ContractModule };
};

export interface ContractHarness {
  bus: CommandBus;
  patterns: ContractPatterns;
  recorder: ContractRecorder;
}

/** Polls until `check` stops throwing (or rethrows its last error after `timeoutMs`). */
export const eventually = async (check: () => void, timeoutMs = 15_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      check();
      return;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(20);
    }
  }
};

const percentile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];

export interface LatencyStats { n: number; p50: number; p99: number; max: number; mean: number }

export const latencyStats = (samples: number[]): LatencyStats => {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    n: sorted.length,
    p50: round(percentile(sorted, 0.5)),
    p99: round(percentile(sorted, 0.99)),
    max: round(sorted[sorted.length - 1]),
    mean: round(sorted.reduce((a, b) => a + b, 0) / sorted.length),
  };
};

/** Request-reply latency (ms): `total` requests with `inFlight` outstanding at any time. */
export const measureLatency = async (bus: CommandBus, pattern: string, total: number, inFlight: number): Promise<LatencyStats> => {
  const samples: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      const t0 = performance.now();
      const echoed = await bus.request<{ i: number }>(pattern, { i }, `latency-${i % 50}`);
      samples.push(performance.now() - t0);
      if (echoed.i !== i) throw new Error(`reply ${echoed.i} for request ${i}`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return latencyStats(samples);
};

const rejection = async (p: Promise<unknown>): Promise<unknown> => {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected the call to fail, but it succeeded');
};

/**
 * The behaviour every CommandBus transport shares. `start` runs once (beforeAll) and returns the
 * harness plus a `stop` for afterAll.
 */
export const describeCommandBusContract = (
  transport: string,
  start: () => Promise<ContractHarness & { stop(): Promise<void> }>,
): void => {
  describe(`CommandBus contract over ${transport}`, () => {
    let h: ContractHarness & { stop(): Promise<void> };

    beforeAll(async () => {
      h = await start();
    });
    afterAll(async () => {
      await h?.stop();
    });

    it('request-reply: the handler gets the payload and the caller gets the handler result', async () => {
      const payload = { memberId: 'mem_1', points: 120, tags: ['a', 'b'], nested: { at: '2025-01-01T00:00:00.000Z', none: null } };
      await expect(h.bus.request(h.patterns.echo, payload, 'mem_1')).resolves.toEqual(payload);
      await expect(h.bus.request(h.patterns.echo, { noKey: true })).resolves.toEqual({ noKey: true });
    });

    it('carries any JSON value unchanged, both ways (undefined travels as null)', async () => {
      const values: unknown[] = [
        [1, 'two', { three: 3 }], 'plain', '42', '{not json', '[1,', '', 'zürich ✓ 🚀', 42, 0, -1.5, true, false, null,
        { deep: { deeper: { deepest: [[], {}] } } },
      ];
      for (const v of values) {
        await expect(h.bus.request(h.patterns.echo, v, 'json')).resolves.toEqual(v);
      }
      await expect(h.bus.request(h.patterns.echo, undefined, 'json')).resolves.toBeNull();
    });

    it('a ProblemError thrown in the handler arrives as a ProblemError with the same slug, detail and fields', async () => {
      const sent: ProblemData = { slug: 'balance-insufficient', detail: 'needs 500 points, has 120', extra: { needed: 500, available: 120 } };
      const e = await rejection(h.bus.request(h.patterns.problem, sent, 'mem_2'));
      expect(e).toBeInstanceOf(ProblemError);
      expect((e as ProblemError).problem).toEqual(sent);
      expect((e as ProblemError).status).toBe(422);

      const invalid = await rejection(h.bus.request(h.patterns.problem, problem('validation', 'bad', { errors: [{ path: '/email', message: 'is not an email' }] }).problem));
      expect(ProblemError.is(invalid) && invalid.problem).toEqual({ slug: 'validation', detail: 'bad', errors: [{ path: '/email', message: 'is not an email' }] });
    });

    it('any other handler error arrives as ProblemError internal', async () => {
      const e = await rejection(h.bus.request(h.patterns.crash, { message: 'boom' }, 'mem_3'));
      expect(e).toBeInstanceOf(ProblemError);
      expect((e as ProblemError).problem.slug).toBe('internal');
    });

    it('messages with the same key arrive in the order they were sent (50 sent concurrently over 5 keys)', async () => {
      const keys = Array.from({ length: 5 }, (_, i) => `order-test-member-${i}`);
      const sends: Promise<{ key: string; seq: number }>[] = [];
      for (let seq = 0; seq < 10; seq++) {
        for (const key of keys) {
          const m: OrderedMessage = { key, seq, delayMs: Math.floor(Math.random() * 4) };
          sends.push(h.bus.request(h.patterns.ordered, m, key));
        }
      }
      const replies = await Promise.all(sends);
      expect(replies).toHaveLength(50);
      for (const key of keys) {
        expect(replies.filter((r) => r.key === key).map((r) => r.seq)).toEqual([...Array(10).keys()]);
        expect(h.recorder.arrivals.get(key)).toEqual([...Array(10).keys()]);
      }
    });

    it('the handler runs as part of the caller\'s request: its request id travels with the message (and none when there is none)', async () => {
      await expect(withRequestId('req-contract-1', () => h.bus.request(h.patterns.context, {}, 'ctx'))).resolves.toEqual({ request_id: 'req-contract-1' });
      await expect(h.bus.request(h.patterns.context, {}, 'ctx')).resolves.toEqual({ request_id: null });
    });

    it('emit delivers to an event handler and to a request handler (202-style command)', async () => {
      const event = { type: 'points.earned', memberId: 'mem_4', n: Math.random() };
      const command = { type: 'ingest.order', orderRef: 'ord_1', n: Math.random() };
      await expect(h.bus.emit(h.patterns.event, event, 'mem_4')).resolves.toBeUndefined();
      await expect(h.bus.emit(h.patterns.command, command, 'ord_1')).resolves.toBeUndefined();
      await eventually(() => {
        expect(h.recorder.events).toContainEqual(event);
        expect(h.recorder.commands).toContainEqual(command);
      });
    });

    it('emitted messages with the same key are handled in the order they were emitted', async () => {
      const sent = Array.from({ length: 20 }, (_, n) => ({ stream: 'emit-order', n }));
      await Promise.all(sent.map((e) => h.bus.emit(h.patterns.event, e, 'emit-order-key')));
      const seen = () => h.recorder.events.filter((e): e is { stream: string; n: number } =>
        typeof e === 'object' && e !== null && (e as { stream?: string }).stream === 'emit-order');
      await eventually(() => expect(seen()).toHaveLength(20));
      expect(seen().map((e) => e.n)).toEqual(sent.map((e) => e.n));
    });
  });
};
