import { KAFKAJS_IDLE_FIX_VERSION, kafkajsIdleFixApplied } from './kafkajs-idle-fix';

 
const RequestQueue = require('kafkajs/src/network/requestQueue') as new (o: object) => {
  pending: unknown[];
  inflight: Map<number, unknown>;
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  push(r: object): void;
  fulfillRequest(r: { correlationId: number; payload: unknown; size: number }): void;
  maybeThrottle(ms: number): void;
  checkPendingRequests(): void;
  destroy(): void;
};

const logger = { debug: () => undefined, warn: () => undefined, error: () => undefined, info: () => undefined };
const queue = (maxInFlightRequests: number | null = 1) =>
  new RequestQueue({ maxInFlightRequests, requestTimeout: 30_000, enforceRequestTimeout: false, clientId: 'spec', broker: 'b:9092', logger });

/** A request as kafkajs' Connection pushes it; `sent` records the order requests reached the socket. */
const request = (correlationId: number, sent: number[]) => ({
  entry: { correlationId, resolve: () => undefined, reject: () => undefined },
  expectResponse: true,
  sendRequest: () => sent.push(correlationId),
});

describe('kafkajs idle fix (RequestQueue)', () => {
  afterEach(() => jest.useRealTimers());

  it('is applied to the kafkajs this service installs', () => {
     
    expect(require('kafkajs/package.json').version).toBe(KAFKAJS_IDLE_FIX_VERSION);
    expect(kafkajsIdleFixApplied).toBe(true);
  });

  it('arms no timer when nothing is pending (kafkajs 2.2.4 re-checked an empty queue every millisecond)', () => {
    const q = queue();
    const sent: number[] = [];
    q.push(request(1, sent)); // sent at once: nothing queued
    expect(sent).toEqual([1]);
    q.fulfillRequest({ correlationId: 1, payload: null, size: 0 });
    q.checkPendingRequests();
    expect(q.pending).toHaveLength(0);
    expect(q.throttleCheckTimeoutId).toBeNull();
  });

  it('still sends a queued request when the one in flight is answered, in order', () => {
    jest.useFakeTimers();
    const q = queue(1);
    const sent: number[] = [];
    q.push(request(1, sent));
    q.push(request(2, sent)); // the in-flight limit is 1: queued
    q.push(request(3, sent));
    expect(sent).toEqual([1]);
    q.fulfillRequest({ correlationId: 1, payload: null, size: 0 });
    expect(sent).toEqual([1, 2]);
    q.fulfillRequest({ correlationId: 2, payload: null, size: 0 });
    expect(sent).toEqual([1, 2, 3]);
    q.fulfillRequest({ correlationId: 3, payload: null, size: 0 });
    jest.advanceTimersByTime(20); // the check armed while requests were queued runs once...
    expect(q.throttleCheckTimeoutId).toBeNull(); // ...and arms nothing more
    q.destroy();
  });

  it('sends a request held by client-side throttling once the throttle ends', () => {
    jest.useFakeTimers();
    const q = queue(null);
    const sent: number[] = [];
    q.maybeThrottle(50);
    q.push(request(1, sent)); // throttled: queued, checked again when the throttle ends
    expect(sent).toEqual([]);
    expect(q.throttleCheckTimeoutId).not.toBeNull();
    jest.advanceTimersByTime(49);
    expect(sent).toEqual([]);
    jest.advanceTimersByTime(20);
    expect(sent).toEqual([1]);
    expect(q.throttleCheckTimeoutId).toBeNull(); // nothing pending any more: no timer left behind
    q.destroy();
  });
});
