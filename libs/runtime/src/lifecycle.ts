import { createServer, Server, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { redactText, renderProblem } from '@loyalty/platform';
import { rootLogger } from './ops/logging';
import { shutdownTracing } from './telemetry';

/**
 * Starting and stopping (issue 8). A process that cannot reach PostgreSQL or Kafka yet keeps
 * trying with backoff (never giving up: a fresh broker may take minutes) and meanwhile answers
 * `/healthz` 200 and `/readyz` 503 on its port, so an orchestrator neither kills nor routes to it.
 * On SIGTERM/SIGINT: readiness turns 503 at once, new work is refused after a short grace, requests
 * in flight finish, keep-alive connections are closed (`Connection: close`), consumers leave their
 * groups after committing, one shutdown line is logged and the exit code is 0.
 */
export const lifecycle = { stopping: false };

const line = (name: string, msg: string): void => { rootLogger().info({ context: 'lifecycle' }, `loyalty ${name}: ${msg}`); };

/**
 * A promise rejected with nobody to handle it ends a Node process by default, and a process of the
 * distributed topology that exits stays down (issue 8: Nest's Kafka server sent replies from a
 * fire-and-forget promise, and a service whose reply failed during a broker outage exited; that
 * source is fixed in TopicCreatingServerKafka). Libraries may have other fire-and-forget promises:
 * such a rejection is logged as an error, with its stack, and the process goes on. An uncaught
 * exception still ends it (state may be half-updated).
 */
export const keepRunningOnUnhandledRejection = (
  name: string,
  proc: Pick<NodeJS.EventEmitter, 'on'> = process,
  write: (text: string) => void = (text) => { rootLogger().error({ context: 'lifecycle' }, text.trimEnd()); },
): void => {
  proc.on('unhandledRejection', (reason: unknown) => {
    const text = reason instanceof Error ? (reason.stack ?? reason.message) : String(reason);
    write(`loyalty ${name}: unhandled promise rejection (the process keeps running): ${redactText(text).slice(0, 2_000)}\n`);
  });
};

/** Runs `attempt` until it succeeds: 0.5 s, 1 s, 2 s … at most 15 s apart (±20 %), logging each failure. */
export const retryWithBackoff = async <T>(name: string, what: string, attempt: () => Promise<T>, onFailure?: (error: string) => void): Promise<T> => {
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (e) {
      const error = e instanceof Error ? e.message : String(e);
      onFailure?.(error);
      const wait = Math.round(Math.min(15_000, 500 * 2 ** n) * (0.8 + Math.random() * 0.4));
      rootLogger().warn({ context: 'lifecycle' }, `loyalty ${name}: ${what} not reachable yet (${redactText(error).slice(0, 200)}); retrying in ${wait} ms`);
      await new Promise((r) => setTimeout(r, wait));
    }
  }
};

/**
 * What the port answers while the process connects: `/healthz` 200 (alive), `/readyz` 503 with what
 * it is waiting for, anything else a 503 `unavailable` problem with Retry-After.
 */
export class StartingResponder {
  private readonly checks: Record<string, string> = {};
  private server: Server | null = null;

  constructor(private readonly port: number, waitingFor: string[], private readonly baseUrl: string) {
    for (const w of waitingFor) this.checks[w] = 'down: connecting';
  }

  note(check: string, state: string): void { this.checks[check] = state === 'up' ? 'up' : `down: ${redactText(state).slice(0, 200)}`; }

  async listen(): Promise<void> {
    if (!this.port) return; // an ephemeral port (tests): nothing to probe before the app listens
    const server = createServer((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      const send = (status: number, type: string, body: unknown) => {
        res.writeHead(status, { 'content-type': type, connection: 'close', 'retry-after': '1' });
        res.end(JSON.stringify(body));
      };
      if (path === '/healthz') return send(200, 'application/json', { status: 'ok' });
      if (path === '/readyz') return send(503, 'application/json', { status: 'not_ready', checks: this.checks });
      return send(503, 'application/problem+json', renderProblem({ slug: 'unavailable', detail: 'The service is starting' }, this.baseUrl));
    });
    await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(this.port, '0.0.0.0', () => resolve()); });
    this.server = server;
  }

  /** Frees the port for the application. */
  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
}

let closingPatched = false;

/**
 * Sets `Connection: close` on every response written once stopping (requests that arrived before
 * the signal included), so keep-alive clients reconnect elsewhere instead of finding a closed socket.
 * The stopping flag is the process's, so the check sits once on `ServerResponse.prototype.writeHead`
 * (installed by the first app that asks) rather than in a wrapper made for every request.
 */
export const closeConnectionsWhenStopping = (_app: INestApplication): void => {
  if (closingPatched) return;
  closingPatched = true;
  const writeHead = ServerResponse.prototype.writeHead;
  ServerResponse.prototype.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    if (lifecycle.stopping && !this.headersSent) this.setHeader('Connection', 'close');
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as typeof ServerResponse.prototype.writeHead;
};

export interface ShutdownOptions {
  name: string;
  /** how long readiness is 503 while new requests are still taken (load balancers notice); LOYALTY_SHUTDOWN_GRACE_MS, default 1 s */
  graceMs?: number;
  /** after this, give up waiting and exit 1; default 25 s */
  deadlineMs?: number;
  /** after the app closed (bus clients, health probes) */
  after?: () => Promise<void>;
}

/** Installs the SIGTERM/SIGINT handler (instead of Nest's shutdown hooks, which re-raise the signal: exit 143, not 0). */
export const installGracefulShutdown = (app: INestApplication, options: ShutdownOptions): void => {
  const graceMs = options.graceMs ?? Number(process.env.LOYALTY_SHUTDOWN_GRACE_MS ?? 1_000);
  const stop = async (signal: string) => {
    if (lifecycle.stopping) return;
    lifecycle.stopping = true;
    const started = Date.now();
    line(options.name, `${signal} received: readiness is 503, draining`);
    const hard = setTimeout(() => {
      line(options.name, `shutdown did not finish within ${options.deadlineMs ?? 25_000} ms; exiting`);
      process.exit(1);
    }, options.deadlineMs ?? 25_000);
    hard.unref();
    try {
      await new Promise((r) => setTimeout(r, graceMs));
      const server = app.getHttpServer() as Server;
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      // in-flight requests finish (and answer with Connection: close); the app then closes its consumers and pools
      await closed;
      await app.close();
      await options.after?.();
      line(options.name, `shut down cleanly after ${signal} in ${Date.now() - started} ms`);
      await shutdownTracing();
      process.exit(0);
    } catch (e) {
      line(options.name, `shutdown failed: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
};
