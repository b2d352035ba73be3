import { hostname } from 'node:os';
import pino, { Logger as Pino, LevelWithSilent } from 'pino';
import { currentRequestId, redactText } from '@loyalty/platform';

/**
 * Every process logs JSON lines through one pino logger (issue 11): `level` (a name), `time` (ISO
 * 8601, UTC), `service`, `pid`, `hostname`, `request_id` when the line belongs to a request (the
 * gateway's request, carried over the bus and through the ingest queue), `context`, `msg`. No ANSI
 * colours, no pretty printing. Every string field, message and error (message and stack) passes
 * through redactText first, so no email, phone, person-naming id, query-string secret or value
 * quoted by a database error reaches the output, whoever logged it (our code, Nest, kafkajs).
 */

const LEVELS: readonly LevelWithSilent[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** LOG_LEVEL: pino's names, plus Nest's `log` (info) and `verbose` (trace). Default info. */
export const parseLogLevel = (value: string | undefined): LevelWithSilent => {
  const v = (value ?? '').trim().toLowerCase();
  if (!v) return 'info';
  if (v === 'log') return 'info';
  if (v === 'verbose') return 'trace';
  if ((LEVELS as string[]).includes(v)) return v as LevelWithSilent;
  throw new Error(`LOG_LEVEL must be one of ${LEVELS.join(', ')} (or log, verbose); got ${value}`);
};

const redactValue = (v: unknown): unknown => (typeof v === 'string' ? redactText(v) : v);

/** A shallow copy with every string field redacted (errors are left to the err serializer). */
const redactFields = (o: Record<string, unknown>): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o)) out[k] = redactValue(o[k]);
  return out;
};

const redactErr = (e: unknown): unknown => {
  const s = pino.stdSerializers.err(e as Error) as unknown as Record<string, unknown> | undefined;
  if (!s || typeof s !== 'object') return s;
  return redactFields(s);
};

let root: Pino | null = null;
let service = process.env.LOYALTY_SERVICE_NAME ?? 'loyalty';

/** Names the process in every line (`service`); call before the first line is logged. */
export const setLogService = (name: string): void => {
  service = name;
  if (root) root.setBindings({ service });
};

/**
 * The process's logger. Written with process.stdout.write (synchronous for files and pipes on
 * Linux), one write per line, so nothing is lost on exit and a test can capture it.
 */
export const rootLogger = (): Pino => {
  root ??= pino({
    level: parseLogLevel(process.env.LOG_LEVEL),
    base: { service, pid: process.pid, hostname: hostname() },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin: () => {
      const id = currentRequestId();
      return id ? { request_id: id } : {};
    },
    serializers: { err: redactErr },
    hooks: {
      logMethod(args, method) {
        const a: unknown[] = args;
        // an Error alone: pino would take its (unredacted) message as msg
        if (a[0] instanceof Error) a.splice(0, 1, { err: a[0] }, ...(typeof a[1] === 'string' ? [] : [a[0].message]));
        // { err } without a message: pino would take the error's (unredacted) message as msg
        const err = (a[0] as { err?: unknown } | null)?.err;
        if (err instanceof Error && typeof a[1] !== 'string') a.splice(1, 0, err.message);
        for (let i = 0; i < a.length; i++) {
          const v = a[i];
          if (typeof v === 'string') a[i] = redactText(v);
          else if (v && typeof v === 'object' && !(v instanceof Error)) a[i] = redactFields(v as Record<string, unknown>);
        }
        return method.apply(this, a as Parameters<typeof method>);
      },
    },
  }, { write: (line: string) => { process.stdout.write(line); } });
  return root;
};

/** Sets the level of the process's logger (LOG_LEVEL at start; a test may raise it). */
export const setLogLevel = (level: string): void => { rootLogger().level = parseLogLevel(level); };
