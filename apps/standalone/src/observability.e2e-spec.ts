import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { Server, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { eventually, freePort } from '@loyalty/testing';
import { TestApp, freshDatabaseUrl, httpClient, startTestApp } from './testing/harness';
import { parseMetrics, sample } from './testing/metrics-text';

/**
 * Operating it (issue 11), on the standalone topology: every log line of the process is JSON with a
 * UTC time and the request id of its request; /metrics carries the numbers that matter and they move;
 * /readyz fails while a projection lags behind the log by more than the configured limit.
 */

describe('JSON logs (the built standalone process)', () => {
  let child: ChildProcess | undefined;
  let drop: (() => Promise<void>) | undefined;
  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await drop?.();
  });

  it('writes every line as JSON with level, UTC time, service and msg; request lines carry the request id; LOG_LEVEL is honoured', async () => {
    const db = await freshDatabaseUrl('jsonlogs');
    drop = db.drop;
    const port = await freePort();
    const admin = `adm_${randomBytes(8).toString('hex')}`;
    let output = '';
    child = spawn(process.execPath, ['-r', './tools/register-paths.js', 'dist/apps/standalone/src/main.js'], {
      cwd: process.cwd(),
      env: { ...process.env, PORT: String(port), DATABASE_URL: db.url, LOYALTY_ADMIN_TOKEN: admin, LOG_LEVEL: 'debug', LOYALTY_SHUTDOWN_GRACE_MS: '100', FORCE_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (b) => { output += b; });
    child.stderr!.on('data', (b) => { output += b; });
    const http = httpClient(`http://127.0.0.1:${port}`);
    await eventually(async () => expect((await http('GET', '/readyz')).status).toBe(200), { timeoutMs: 60_000, intervalMs: 250 });
    const requestId = `jsonlog-${randomUUID()}`;
    const program = await http('POST', '/admin/v1/programs', { key: admin, body: { program_name: 'Logs', currency_name: 'points' } });
    expect(program.status).toBe(201);
    const key = program.body.data.keys.live.key as string;
    const enrolled = await http('POST', '/v1/members', { key, body: { email: 'json.logs@example.com', external_ref: 'cust-json-77' }, headers: { 'x-request-id': requestId } });
    expect(enrolled.status).toBe(201);
    expect(enrolled.headers.get('x-request-id')).toBe(requestId);
    await http('GET', '/v1/members/ref:cust-json-77', { key });
    const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);

    const lines = output.split('\n').filter((l) => l.length > 0);
    expect(lines.length).toBeGreaterThan(5);
    const parsed = lines.map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON line: ${l}`);
      }
    });
    for (const p of parsed) {
      expect(p).toEqual(expect.objectContaining({ level: expect.stringMatching(/^(trace|debug|info|warn|error|fatal)$/), service: 'standalone', msg: expect.any(String) }));
      expect(p.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    expect(output).not.toMatch(/\u001b\[/); // no ANSI colours, even with FORCE_COLOR
    // the request's lines (its access log line at least) carry its id; LOG_LEVEL=debug lets debug lines through
    const mine = parsed.filter((p) => p.request_id === requestId);
    expect(mine.some((p) => p.msg === 'http request' && p.path === '/v1/members' && p.status === 201)).toBe(true);
    expect(parsed.some((p) => p.level === 'debug')).toBe(true);
    expect(parsed.some((p) => String(p.msg).includes('shut down cleanly after SIGTERM'))).toBe(true);
    // redaction still applies to JSON output
    for (const secret of ['json.logs@example.com', 'cust-json-77', key]) expect(output).not.toContain(secret);
  }, 120_000);
});

/** A receiver on 127.0.0.1 that answers 200 on /ok and 500 elsewhere. */
const startReceiver = async (): Promise<{ url: string; close: () => Promise<void> }> => {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(req.url?.startsWith('/ok') ? 200 : 500).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
};

describe('metrics and readiness (standalone)', () => {
  let app: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const BIG = { burst: 100000, per_second: 100000 };
  const metrics = async () => parseMetrics((await app.http('GET', '/metrics')).body as string);

  beforeAll(async () => {
    receiver = await startReceiver();
    app = await startTestApp({ readyMaxProjectionLagSeconds: 1, webhookRetrySchedule: [1, 1], webhookDisableAfter: 50 });
  });
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
  });

  it('counts events processed, points issued and redeemed, bus latency, queue depth, webhook deliveries and breaker states', async () => {
    const p = await app.createProgram({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 10, timing: 'immediate' }] });
    const key = (await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'live', rate_limit: BIG })).body.data.key as string;
    const testKey = (await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'test', rate_limit: BIG })).body.data.key as string;
    const before = await metrics();
    const at = (m: Map<string, number>, name: string, labels: Record<string, string> = {}) => sample(m, name, labels) ?? 0;

    expect((await app.http('POST', '/v1/members', { key, body: { email: 'metrics@example.com', external_ref: 'cust-metrics' } })).status).toBe(201);
    const sent = await app.http('POST', '/v1/events', { key, body: { type: 'order.paid', order_ref: `o-${randomUUID()}`, gross_cents: 10000, customer_ref: 'cust-metrics' } });
    expect(sent.status).toBe(202);
    await eventually(async () => {
      expect((await app.http('GET', `/v1/events/${sent.body.data.id}`, { key })).body.data.status).toBe('completed');
    }, { timeoutMs: 30_000 });
    expect((await app.http('POST', '/v1/members/ref:cust-metrics/redemptions', { key, body: { amount_cents: 300 }, headers: { 'idempotency-key': randomUUID() } })).status).toBe(201);
    // webhooks: one endpoint that answers, one that fails (sandbox: http on 127.0.0.1 is allowed)
    for (const path of ['/ok', '/down']) {
      expect((await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body: { url: `${receiver.url}${path}`, events: ['member.enrolled'] } })).status).toBe(201);
    }
    expect((await app.http('POST', '/v1/members', { key: testKey, body: { email: 'hook@example.com' } })).status).toBe(201);

    await eventually(async () => {
      const after = await metrics();
      expect(at(after, 'loyalty_ingest_events_total', { mode: 'live', outcome: 'completed' }) - at(before, 'loyalty_ingest_events_total', { mode: 'live', outcome: 'completed' })).toBe(1);
      expect(at(after, 'loyalty_points_total', { kind: 'issued', mode: 'live' }) - at(before, 'loyalty_points_total', { kind: 'issued', mode: 'live' })).toBe(1000);
      expect(at(after, 'loyalty_points_total', { kind: 'redeemed', mode: 'live' }) - at(before, 'loyalty_points_total', { kind: 'redeemed', mode: 'live' })).toBe(300);
      expect(at(after, 'loyalty_bus_request_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThan(at(before, 'loyalty_bus_request_duration_seconds_count', { outcome: 'ok' }));
      expect(at(after, 'loyalty_webhook_deliveries_total', { outcome: 'delivered' }) - at(before, 'loyalty_webhook_deliveries_total', { outcome: 'delivered' })).toBeGreaterThanOrEqual(1);
      expect(at(after, 'loyalty_webhook_deliveries_total', { outcome: 'failed' }) - at(before, 'loyalty_webhook_deliveries_total', { outcome: 'failed' })).toBeGreaterThanOrEqual(1);
      // a breaker per endpoint this process delivered to, both still closed (10 failures open one)
      expect(at(after, 'loyalty_webhook_circuit_breakers', { state: 'closed' })).toBeGreaterThanOrEqual(2);
    }, { timeoutMs: 30_000 });
    const m = await metrics();
    // the queue is empty again; its gauges exist for both modes
    for (const mode of ['live', 'test']) {
      expect(sample(m, 'loyalty_ingest_queue_depth', { mode, status: 'queued' })).toBe(0);
      expect(sample(m, 'loyalty_ingest_oldest_queued_age_seconds', { mode })).toBe(0);
    }
    expect(sample(m, 'loyalty_projection_lag_events')).toBeDefined();
    expect(sample(m, 'loyalty_projection_lag_seconds')).toBeDefined();
  });

  it('shows queued events and their age while the worker cannot take them', async () => {
    const p = await app.createProgram();
    const pg = new Client({ connectionString: app.databaseUrl });
    await pg.connect();
    try {
      // a queued event the worker may not claim yet (its backoff lies in the future): queue depth, and age, move
      await pg.query(`insert into ingest.events (tenant, id, idempotency_key, type, order_ref, partition_key, payload, received_at, available_at, queued_at)
                      values ($1, 'EV-metrics-held', 'held', 'order.paid', 'held', 'order:held', '{}', now(), now() + interval '1 hour', now() - interval '90 seconds')`, [`${p.programId}_test`]);
      await eventually(async () => {
        const m = await metrics();
        expect(sample(m, 'loyalty_ingest_queue_depth', { mode: 'test', status: 'queued' })).toBe(1);
        expect(sample(m, 'loyalty_ingest_oldest_queued_age_seconds', { mode: 'test' })).toBeGreaterThanOrEqual(90);
        expect(sample(m, 'loyalty_ingest_queue_depth', { mode: 'live', status: 'queued' })).toBe(0);
      }, { timeoutMs: 10_000 });
    } finally {
      await pg.query(`delete from ingest.events where id = 'EV-metrics-held'`);
      await pg.end();
    }
  });

  it('reports projection lag on /metrics and fails /readyz while a projection is behind by more than the limit', async () => {
    const { liveKey } = await app.createProgram();
    expect((await app.http('GET', '/readyz')).body.checks.projections).toBe('up');
    const pg = new Client({ connectionString: app.databaseUrl });
    await pg.connect();
    try {
      // the runners write their checkpoints in every batch: holding the table stops them (a table
      // lock takes no transaction id, so new appends stay visible and the head moves on)
      await pg.query('begin');
      await pg.query('lock table es.checkpoints in exclusive mode');
      expect((await app.http('POST', '/v1/members', { key: liveKey, body: { email: `lag-${randomUUID()}@example.com` } })).status).toBe(201);
      await eventually(async () => {
        const r = await app.http('GET', '/readyz');
        expect(r.status).toBe(503);
        expect(r.body.checks.projections).toMatch(/^down: .*behind \(limit 1 s\)/);
        const m = await metrics();
        expect(sample(m, 'loyalty_projection_lag_events')).toBeGreaterThanOrEqual(1);
        expect(sample(m, 'loyalty_projection_lag_seconds')).toBeGreaterThan(1);
      }, { timeoutMs: 20_000, intervalMs: 300 });
    } finally {
      await pg.query('rollback');
      await pg.end();
    }
    await eventually(async () => {
      const r = await app.http('GET', '/readyz');
      expect(r.status).toBe(200);
      expect(r.body.checks.projections).toBe('up');
      expect(sample(await metrics(), 'loyalty_projection_lag_events')).toBe(0);
    }, { timeoutMs: 20_000, intervalMs: 300 });
  });
});
