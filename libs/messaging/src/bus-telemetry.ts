import { METRICS, ProblemError, SpanKind, inSpan } from '@loyalty/platform';

/** How a request ended, for the latency histogram: a reply, a domain refusal, or no usable answer. */
const outcomeOf = (e: unknown): 'problem' | 'error' =>
  ProblemError.is(e) && e.problem.slug !== 'internal' && e.problem.slug !== 'unavailable' ? 'problem' : 'error';

/**
 * One bus request as the caller sees it (issue 11): a producer span named after the pattern (the
 * carrier injected into the message is taken inside it, so the consumer's span is its child) and
 * the request-reply latency in `loyalty_bus_request_duration_seconds`.
 */
export const observedRequest = async <T>(transport: 'kafka' | 'in-process', pattern: string, fn: () => Promise<T>): Promise<T> => {
  const end = METRICS.busRequestDuration.startTimer({ pattern });
  try {
    const r = await inSpan(`${pattern} send`, SpanKind.PRODUCER, busAttributes(transport, pattern, 'send'), fn);
    end({ outcome: 'ok' });
    return r;
  } catch (e) {
    end({ outcome: outcomeOf(e) });
    throw e;
  }
};

export const busAttributes = (transport: 'kafka' | 'in-process', pattern: string, operation: 'send' | 'process') => ({
  'messaging.system': transport === 'kafka' ? 'kafka' : 'loyalty.in_process',
  'messaging.destination.name': pattern,
  'messaging.operation.type': operation,
});
