import { randomBytes, randomUUID } from 'node:crypto';
import { IncomingMessage, Server, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { eventually } from '@loyalty/testing';
import { TestApp, httpClient, startTestApp } from './testing/harness';
import { Distributed, DistributedApp, startDistributed } from './testing/distributed';
import { parseMetrics, sample } from './testing/metrics-text';

/**
 * Operating it (issue 11), on the distributed topology (gateway and services as processes over the
 * real Kafka broker): one trace id spans gateway → ingest → ledger (spans exported over OTLP/HTTP
 * to a collector this test runs on 127.0.0.1), the gateway's request id reaches the ledger's log
 * lines, every process logs JSON only, and the services' /metrics carry their numbers.
 */

interface CollectedSpan { service: string; traceId: string; spanId: string; parentSpanId: string; name: string; kind: number; attributes: Record<string, unknown> }

/** OTLP ids are hex in the JSON encoding; accept base64 too. */
const hexId = (id: unknown): string => {
  const s = String(id ?? '');
  return /^[0-9a-f]*$/i.test(s) ? s.toLowerCase() : Buffer.from(s, 'base64').toString('hex');
};

const attrValue = (v: Record<string, unknown> | undefined): unknown => (v ? Object.values(v)[0] : undefined);

/** An OTLP/HTTP (JSON) trace receiver on 127.0.0.1: what an OpenTelemetry collector would get. */
const startCollector = async (): Promise<{ url: string; spans: CollectedSpan[]; close: () => Promise<void> }> => {
  const spans: CollectedSpan[] = [];
  const read = (req: IncomingMessage) => new Promise<Buffer>((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
  });
  const server: Server = createServer(async (req, res) => {
    let body = await read(req);
    if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
    if (req.url?.startsWith('/v1/traces')) {
      const doc = JSON.parse(body.toString('utf8')) as { resourceSpans?: any[] };
      for (const rs of doc.resourceSpans ?? []) {
        const service = String(attrValue((rs.resource?.attributes ?? []).find((a: any) => a.key === 'service.name')?.value) ?? '');
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            const attributes: Record<string, unknown> = {};
            for (const a of s.attributes ?? []) attributes[a.key] = attrValue(a.value);
            spans.push({ service, traceId: hexId(s.traceId), spanId: hexId(s.spanId), parentSpanId: hexId(s.parentSpanId), name: s.name, kind: s.kind, attributes });
          }
        }
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
};

/** A webhook receiver on 127.0.0.1 that answers 200 and keeps the traceparent headers it got. */
const startReceiver = async (): Promise<{ url: string; traceparents: string[]; close: () => Promise<void> }> => {
  const traceparents: string[] = [];
  const server: Server = createServer((req, res) => {
    if (typeof req.headers.traceparent === 'string') traceparents.push(req.headers.traceparent);
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, traceparents, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
};

const APPS: DistributedApp[] = ['gateway', 'ingest', 'ledger', 'redemption', 'referral', 'webhook'];

describe('operating the distributed topology', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let dist: Distributed;
  let app: TestApp;
  let key: string;
  const traceId = randomBytes(16).toString('hex');
  const requestId = `dist-obs-${randomUUID()}`;

  beforeAll(async () => {
    collector = await startCollector();
    receiver = await startReceiver();
    dist = await startDistributed({
      env: {
        LOG_LEVEL: 'debug', OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '200',
      },
    });
    app = await startTestApp({}, dist);
    const p = await app.createProgram({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 10, timing: 'immediate' }] });
    key = p.liveKey;
    // a sandbox webhook endpoint (http on 127.0.0.1 is allowed there) and a member it hears about
    expect((await app.http('POST', '/v1/webhook_endpoints', { key: p.testKey, body: { url: `${receiver.url}/hook`, events: ['member.enrolled'] } })).status).toBe(201);
    expect((await app.http('POST', '/v1/members', { key: p.testKey, body: { email: 'dist.hook@example.com' } })).status).toBe(201);
    expect((await app.http('POST', '/v1/members', { key, body: { email: 'dist.obs@example.com', external_ref: 'cust-dist-obs' } })).status).toBe(201);
    // an order event sent by a client that traces (its traceparent names the trace) with its request id
    const sent = await app.http('POST', '/v1/events', {
      key, body: { type: 'order.paid', order_ref: `o-${randomUUID()}`, gross_cents: 10000, customer_ref: 'cust-dist-obs' },
      headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`, 'x-request-id': requestId },
    });
    expect(sent.status).toBe(202);
    // a read whose URL names the customer (its spans' URL attributes must not)
    expect((await app.http('GET', '/v1/members/ref:cust-dist-obs', { key })).status).toBe(200);
    expect((await app.http('GET', '/v1/members?email=dist.obs%40example.com', { key })).status).toBe(200);
    await eventually(async () => {
      expect((await app.http('GET', `/v1/events/${sent.body.data.id}`, { key })).body.data.status).toBe('completed');
    }, { timeoutMs: 60_000 });
  }, 400_000);
  afterAll(async () => {
    await app?.close();
    await collector?.close();
    await receiver?.close();
  });

  it('one trace id spans gateway → ingest → ledger: HTTP, the bus over Kafka, the ingest queue and PostgreSQL; webhook POSTs are traced', async () => {
    await eventually(() => {
      const mine = collector.spans.filter((s) => s.traceId === traceId);
      const services = new Set(mine.map((s) => s.service));
      expect([...services].sort()).toEqual(expect.arrayContaining(['loyalty-gateway', 'loyalty-ingest', 'loyalty-ledger']));
      const names = mine.map((s) => `${s.service} ${s.name}`);
      expect(names).toEqual(expect.arrayContaining([
        'loyalty-gateway ingest.events.submit send',
        'loyalty-ingest ingest.events.submit process',
        'loyalty-ingest ingest.event process',
        'loyalty-ingest ledger.events.process send',
        'loyalty-ledger ledger.events.process process',
      ]));
      // the ledger's queries are in the trace, and every consumer span is the child of a span of the same trace
      expect(mine.some((s) => s.service === 'loyalty-ledger' && (typeof s.attributes['db.system'] === 'string' || typeof s.attributes['db.system.name'] === 'string'))).toBe(true);
      const ids = new Set(mine.map((s) => s.spanId));
      for (const s of mine.filter((x) => x.name.endsWith(' process'))) expect(ids.has(s.parentSpanId)).toBe(true);
    }, { timeoutMs: 30_000, intervalMs: 500 });
    // an outgoing webhook is a span of the webhook service with the HTTP POST as its child, and the receiver got the trace context
    await eventually(() => {
      const deliver = collector.spans.find((s) => s.service === 'loyalty-webhook' && s.name === 'webhook deliver');
      expect(deliver).toBeDefined();
      const post = collector.spans.find((s) => s.parentSpanId === deliver!.spanId && s.kind === 3); // SPAN_KIND_CLIENT
      expect(post).toBeDefined();
      expect(receiver.traceparents.some((t) => t.includes(deliver!.traceId))).toBe(true);
    }, { timeoutMs: 30_000, intervalMs: 500 });
    // no span carries a person's identifiers (URLs are redacted before export), yet the URLs are there
    await eventually(() => {
      const paths = collector.spans.filter((x) => x.service === 'loyalty-gateway' && x.name === 'GET').map((x) => `${x.attributes['url.path']}?${x.attributes['url.query'] ?? ''}`);
      expect(paths).toEqual(expect.arrayContaining(['/v1/members/ref:[redacted]?', '/v1/members?email=[redacted]']));
    }, { timeoutMs: 30_000, intervalMs: 500 });
    const all = JSON.stringify(collector.spans);
    for (const pii of ['cust-dist-obs', 'dist.obs@example.com', 'dist.obs%40example.com']) expect(all).not.toContain(pii);
  });

  it('carries the request id into the ledger\'s log lines, and every process logs JSON lines only', () => {
    const ledgerLines = dist.log('ledger').split('\n').filter((l) => l.includes(requestId)).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(ledgerLines.length).toBeGreaterThan(0);
    expect(ledgerLines.every((l) => l.request_id === requestId && l.service === 'ledger')).toBe(true);
    expect(ledgerLines.some((l) => String(l.msg).startsWith('handling ledger.events.process'))).toBe(true);
    for (const name of APPS) {
      // run.sh's own marker lines (=== … starting) are not the process's output
      const lines = dist.log(name).split('\n').filter((l) => l && !l.startsWith('=== '));
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        let parsed: Record<string, unknown>;
        try { parsed = JSON.parse(line); } catch { throw new Error(`${name}: not a JSON line: ${line}`); }
        expect(parsed).toEqual(expect.objectContaining({ level: expect.any(String), time: expect.stringMatching(/Z$/), service: name }));
      }
    }
  });

  it('serves the services\' metrics: events processed, queue depth, consumer lag per group, projection lag, points, bus latency; readyz checks broker and projections', async () => {
    const scrape = async (name: DistributedApp) => parseMetrics((await httpClient(`http://127.0.0.1:${dist.port(name)}`)('GET', '/metrics')).body as string);
    await eventually(async () => {
      const ingest = await scrape('ingest');
      expect(sample(ingest, 'loyalty_ingest_events_total', { mode: 'live', outcome: 'completed' })).toBeGreaterThanOrEqual(1);
      expect(sample(ingest, 'loyalty_ingest_queue_depth', { mode: 'live', status: 'queued' })).toBe(0);
      expect(sample(ingest, 'loyalty_kafka_consumer_lag', { group: 'loyalty-ingest', topic: 'ingest.commands' })).toBe(0);
      expect(sample(ingest, 'loyalty_bus_request_duration_seconds_count', { pattern: 'ledger.events.process', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
      const ledger = await scrape('ledger');
      expect(sample(ledger, 'loyalty_points_total', { kind: 'issued', mode: 'live' })).toBeGreaterThanOrEqual(1000);
      expect(sample(ledger, 'loyalty_projection_lag_events')).toBe(0);
      expect(sample(ledger, 'loyalty_kafka_consumer_lag', { group: 'loyalty-ledger' })).toBeDefined();
      const gateway = await scrape('gateway');
      expect(sample(gateway, 'loyalty_bus_request_duration_seconds_count', { pattern: 'ingest.events.submit', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    }, { timeoutMs: 30_000, intervalMs: 1_000 });
    const ready = await httpClient(`http://127.0.0.1:${dist.port('ledger')}`)('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual(expect.objectContaining({ database: 'up', broker: 'up', projections: 'up' }));
  });
});
