import { ConsoleLogger, Logger } from '@nestjs/common';
import { Client } from 'pg';
import { eventually } from '@loyalty/testing';
import { TestApp, freshDatabaseUrl, startTestApp } from './testing/harness';
import { startStandalone } from './start';

/**
 * Personal data does not leak (issue 8): erasure reaches the events API, and neither the logs
 * nor the admin rejected-calls list carry emails, phones, customer refs (in any encoding) or
 * query-string secrets. Through real HTTP on the standalone app.
 */

const BIG = { burst: 100000, per_second: 100000 };
const query = async <T = any>(url: string, sql: string, params: unknown[] = []): Promise<T[]> => {
  const c = new Client({ connectionString: url });
  await c.connect();
  try { return (await c.query(sql, params)).rows as T[]; } finally { await c.end(); }
};

describe('erasure reaches the events API', () => {
  let app: TestApp;
  let key: string;
  beforeAll(async () => {
    app = await startTestApp();
    const p = await app.createProgram({ rules: [{ id: 'base', name: 'Base', type: 'base', earn_rate_pct: 10, timing: 'immediate' }] });
    key = (await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'live', rate_limit: BIG })).body.data.key;
  });
  afterAll(async () => { await app?.close(); });

  it('scrubs stored payloads, keys derived from the email and error texts; order records stay', async () => {
    const email = 'Erase.Me@Example.com';
    const pii = ['erase.me@example.com', '14155550177', 'cust-erase-9'];
    const sent = [
      await app.http('POST', '/v1/events', { key, body: { type: 'customer.created', email, phone: '+1 415 555 0177', external_ref: 'cust-erase-9' } }),
      await app.http('POST', '/v1/events', { key, body: { type: 'order.paid', order_ref: 'erase-o1', gross_cents: 5000, email, customer_ref: 'cust-erase-9' } }),
      await app.http('POST', '/v1/events', { key, headers: { 'idempotency-key': `upd-${email}` }, body: { type: 'customer.updated', email, phone: '+14155550177' } }),
      await app.http('POST', '/v1/events', { key, body: { type: 'order.paid', order_ref: 'erase-o2', gross_cents: 100, phone: '+1415555017' } }),
    ];
    expect(sent.map((r) => r.status)).toEqual([202, 202, 202, 202]);
    const ids = sent.map((r) => r.body.data.id as string);
    await eventually(async () => {
      const list = (await app.http('GET', '/v1/events?limit=100', { key })).body.data as { status: string }[];
      expect(list.filter((e) => e.status === 'queued' || e.status === 'running')).toEqual([]);
    }, { timeoutMs: 30_000 });
    const before = JSON.stringify((await app.http('GET', '/v1/events?limit=100', { key })).body);
    expect(before.toLowerCase()).toContain('erase.me@example.com'); // the derived key shows it today

    const member = (await app.http('GET', '/v1/members/ref:cust-erase-9', { key })).body.data;
    expect((await app.http('DELETE', `/v1/members/${member.id}`, { key })).status).toBe(200);

    const listed = JSON.stringify((await app.http('GET', '/v1/events?limit=100', { key })).body).toLowerCase();
    const each = JSON.stringify(await Promise.all(ids.map(async (id) => (await app.http('GET', `/v1/events/${id}`, { key })).body))).toLowerCase();
    const rows = JSON.stringify(await query(app.databaseUrl, 'select * from ingest.events')).toLowerCase();
    for (const text of [listed, each, rows]) for (const x of pii) expect(text).not.toContain(x);
    // the merchant's order records remain, and the events are still found by their ids
    expect(listed).toContain('erase-o1');
    expect(JSON.parse(each).every((e: { data?: { id: string } }) => !!e.data?.id)).toBe(true);
    // a replay of the order event is still recognised (its key names no one)
    const again = await app.http('POST', '/v1/events', { key, body: { type: 'order.paid', order_ref: 'erase-o1', gross_cents: 5000, email } });
    expect(again.body.data.replayed).toBe(true);
  });
});

describe('logs and the rejected-calls list', () => {
  it('carry no personal identifiers in any encoding, no query-string secrets', async () => {
    const db = await freshDatabaseUrl('privlogs');
    const written: string[] = [];
    const capture = (stream: NodeJS.WriteStream) => jest.spyOn(stream, 'write').mockImplementation(((chunk: unknown) => {
      written.push(String(chunk));
      return true;
    }) as never);
    const out = capture(process.stdout);
    const err = capture(process.stderr);
    let started: Awaited<ReturnType<typeof startStandalone>> | undefined;
    Logger.overrideLogger(new ConsoleLogger());
    try {
      started = await startStandalone({ databaseUrl: db.url, port: 0, adminToken: 'adm_privacy_token', adminTokenGenerated: false, baseUrl: 'https://loyalty.test' });
      const t = await startTestApp({}, { url: started.url, adminToken: 'adm_privacy_token', databaseUrl: db.url, close: async () => undefined });
      const p = await t.createProgram();
      const calls: [string, string][] = [
        ['GET', '/v1/members/phone%3A%2B14155550122'],
        ['GET', '/v1/members/%70hone%3A%2B14155550122/ledger'],
        ['GET', '/v1/members/r%65f%3Aprivate-ref-88'],
        ['GET', '/v1/members/ref%253Aprivate-ref-88'],
        ['GET', '/v1/members?%65mail=hidden.person%40example.com&limit=0'],
        ['GET', '/v1/members?EMAIL=hidden.person@example.com&limit=0'],
        ['GET', '/v1/ping?api_key=supersecret123&token=tok-secret-456&limit=0'],
        ['GET', '/v1/nope/hidden.person%40example.com?phone=%2B14155550122'],
        ['POST', '/v1/members/phone%3A%2B14155550122/adjust'],
      ];
      for (const [method, path] of calls) {
        const r = await t.http(method, path, { key: p.liveKey, body: method === 'POST' ? { amount_cents: 0 } : undefined });
        expect(r.status).toBe(path.startsWith('/v1/ping') ? 200 : r.status >= 400 ? r.status : 400);
      }
      const rejected = JSON.stringify((await t.admin('GET', `/admin/v1/programs/${p.programId}/rejected-calls`)).body);
      expect(JSON.parse(rejected).data.length).toBeGreaterThanOrEqual(5);
      await started.app.close();
      started = undefined;
      const logs = written.join('');
      expect(logs).toContain('"path":"/v1/members/phone:[redacted]"');
      for (const text of [logs, rejected]) {
        for (const secret of ['14155550122', 'private-ref-88', 'hidden.person', 'supersecret123', 'tok-secret-456', '%2B1415', '%40example']) {
          expect(text).not.toContain(secret);
        }
      }
    } finally {
      out.mockRestore();
      err.mockRestore();
      Logger.overrideLogger(false);
      await started?.app.close();
      await db.drop();
    }
  });
});
