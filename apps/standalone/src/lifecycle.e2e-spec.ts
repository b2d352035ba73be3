import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request as httpRequest, Agent } from 'node:http';
import { AddressInfo, Server, Socket, createConnection, createServer } from 'node:net';
import { eventually } from '@loyalty/testing';
import { freshDatabaseUrl } from './testing/harness';

/**
 * Starting and stopping (issue 8), on the built gateway process (`npm run build` first). The
 * process reaches PostgreSQL and Kafka through TCP proxies this test opens and closes, so the
 * shared servers are never touched: while either is unreachable it keeps trying and answers
 * /readyz 503 (healthz 200); once both answer it is ready. SIGTERM turns readiness 503 at once,
 * lets a request in flight finish (answered with Connection: close), logs a shutdown line and
 * exits 0.
 */

const KAFKA = process.env.KAFKA_BROKERS?.split(',')[0] ?? '127.0.0.1:9092';

/** A TCP forwarder that can refuse connections (closed) or pass them on (open). */
class Gate {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  constructor(readonly port: number, private readonly target: { host: string; port: number }) {}
  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = createConnection(this.target);
      for (const s of [client, upstream]) { this.sockets.add(s); s.on('close', () => this.sockets.delete(s)); s.on('error', () => undefined); }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((r) => server.listen(this.port, '127.0.0.1', () => r()));
    this.server = server;
  }
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    const s = this.server;
    this.server = null;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}

const freePort = async (): Promise<number> => {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
};

const get = async (port: number, path: string, agent?: Agent): Promise<{ status: number; body: any; headers: Record<string, unknown> }> =>
  new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });

describe('starting and stopping (gateway process)', () => {
  let child: ChildProcess | undefined;
  let output = '';
  const gates: Gate[] = [];
  let dropDb: (() => Promise<void>) | undefined;

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    for (const g of gates) await g.close();
    await dropDb?.();
  });

  it('waits for PostgreSQL and Kafka with readyz 503, becomes ready, and shuts down cleanly on SIGTERM', async () => {
    const db = await freshDatabaseUrl('lifecycle');
    dropDb = db.drop;
    const pgGate = new Gate(await freePort(), { host: '127.0.0.1', port: 5432 });
    const [kHost, kPort] = KAFKA.split(':');
    const kafkaGate = new Gate(await freePort(), { host: kHost, port: Number(kPort) });
    gates.push(pgGate, kafkaGate);
    const dbUrl = new URL(db.url);
    dbUrl.host = `127.0.0.1:${pgGate.port}`;
    const port = await freePort();
    child = spawn(process.execPath, ['-r', './tools/register-paths.js', 'dist/apps/gateway/src/main.js'], {
      cwd: process.cwd(),
      env: {
        ...process.env, PORT: String(port), DATABASE_URL: dbUrl.toString(), KAFKA_BROKERS: `127.0.0.1:${kafkaGate.port}`,
        LOYALTY_ADMIN_TOKEN: `adm_${randomBytes(8).toString('hex')}`, LOYALTY_SHUTDOWN_GRACE_MS: '1500', LOYALTY_CRASH_POINT: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (b) => { output += b; });
    child.stderr!.on('data', (b) => { output += b; });

    // nothing reachable: alive, not ready, and still trying after several attempts
    await eventually(async () => expect((await get(port, '/healthz')).status).toBe(200), { timeoutMs: 20_000, intervalMs: 200 });
    const notReady = await get(port, '/readyz');
    expect(notReady.status).toBe(503);
    expect(notReady.body.checks.database).toMatch(/^down/);
    const api = await get(port, '/v1/ping');
    expect(api.status).toBe(503);
    expect(api.headers['content-type']).toMatch(/application\/problem\+json/);
    await new Promise((r) => setTimeout(r, 4_000));
    expect(child.exitCode).toBeNull();
    expect(output).toMatch(/PostgreSQL not reachable yet[^\n]*retrying/);

    // PostgreSQL back, Kafka still away: still 503, now waiting for the broker
    await pgGate.open();
    await eventually(async () => {
      const r = await get(port, '/readyz');
      expect(r.status).toBe(503);
      expect(r.body.checks).toEqual(expect.objectContaining({ database: 'up', broker: expect.stringMatching(/^down/) }));
    }, { timeoutMs: 30_000, intervalMs: 250 });
    await eventually(() => expect(output).toMatch(/Kafka not reachable yet[^\n]*retrying/), { timeoutMs: 60_000, intervalMs: 500 });
    expect(child.exitCode).toBeNull();

    // the broker answers: ready, with a real broker check
    await kafkaGate.open();
    await eventually(async () => {
      const r = await get(port, '/readyz');
      expect(r.status).toBe(200);
      expect(r.body.checks).toEqual({ database: 'up', broker: 'up' });
    }, { timeoutMs: 90_000, intervalMs: 500 });

    // a request in flight (its body half sent) on a keep-alive connection, then SIGTERM
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect((await get(port, '/healthz', agent)).status).toBe(200); // opens the kept-alive socket
    const body = JSON.stringify({ email: 'inflight@example.com' });
    const inflight = new Promise<{ status: number; connection: unknown }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/v1/members', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(body.length) } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
      });
      req.on('error', reject);
      req.write(body.slice(0, 5));
      setTimeout(() => req.end(body.slice(5)), 1_000);
    });
    await new Promise((r) => setTimeout(r, 100));
    const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    const stopping = await get(port, '/readyz', agent);
    expect(stopping.status).toBe(503);
    expect(stopping.body.status).toBe('stopping');
    expect({ connection: stopping.headers.connection, all: stopping.headers }).toEqual(expect.objectContaining({ connection: 'close' }));
    const answered = await inflight;
    expect(answered.status).toBe(401); // reached the guard: the request finished, it was not cut off
    expect(answered.connection).toBe('close');
    expect(await exited).toBe(0);
    expect(output).toMatch(/loyalty gateway: SIGTERM received: readiness is 503, draining/);
    expect(output).toMatch(/loyalty gateway: shut down cleanly after SIGTERM/);
    agent.destroy();
  }, 240_000);
});
