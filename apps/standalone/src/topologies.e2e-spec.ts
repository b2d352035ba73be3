import { Client } from 'pg';
import { TestApp, startTestApp } from './testing/harness';
import { startDistributed } from './testing/distributed';

/**
 * The same member scenarios, through real HTTP, against both topologies: standalone (one process,
 * in-process bus) and distributed (gateway and services as separate processes over real Kafka).
 */
const memberScenarios = (name: string, boot: () => Promise<TestApp>) => {
  describe(`member scenarios (${name})`, () => {
    let app: TestApp;
    let key: string;
    let otherKey: string;

    beforeAll(async () => {
      app = await boot();
      const p = await app.createProgram();
      const k = await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'live', scopes: ['read', 'act', 'ingest', 'webhooks'], rate_limit: { burst: 10000, per_second: 10000 } });
      key = k.body.data.key;
      otherKey = (await app.createProgram()).liveKey;
    }, 300_000);
    afterAll(async () => app?.close());

    it('enrols (201), re-enrols (200), refuses a phone of another member (409)', async () => {
      const a = await app.http('POST', '/v1/members', { key, body: { email: 'grace@example.com', phone: '+44 7700 900123', external_ref: 'cust-g' } });
      expect(a.status).toBe(201);
      expect(a.body.data).toMatchObject({ email: 'grace@example.com', phone: '+447700900123', external_ref: 'cust-g', state: 'registered' });
      const again = await app.http('POST', '/v1/members', { key, body: { email: 'GRACE@example.com' } });
      expect(again.status).toBe(200);
      expect(again.body.data.id).toBe(a.body.data.id);
      const clash = await app.http('POST', '/v1/members', { key, body: { email: 'other@example.com', phone: '+447700900123' } });
      expect(clash.status).toBe(409);
      expect(clash.body.type).toMatch(/#phone-conflict$/);
    });

    it('finds a member by M-id, ref: and phone:, and hides it from another programme', async () => {
      const m = await app.http('POST', '/v1/members', { key, body: { email: 'alan@example.com', phone: '+14155550123', external_ref: 'cust-a' } });
      const id = m.body.data.id;
      for (const form of [id, 'ref:cust-a', 'phone:%2B14155550123']) {
        const r = await app.http('GET', `/v1/members/${form}`, { key });
        expect(r.status).toBe(200);
        expect(r.body.data.id).toBe(id);
      }
      const foreign = await app.http('GET', `/v1/members/${id}`, { key: otherKey });
      expect(foreign.status).toBe(404);
      expect(foreign.body.type).toMatch(/#not-found$/);
    });

    it('creates exactly one member from 50 concurrent enrolments of one email', async () => {
      const results = await Promise.all(Array.from({ length: 50 }, () =>
        app.http('POST', '/v1/members', { key, body: { email: 'race@example.com' } })));
      expect(results.map((r) => r.status).filter((s) => s === 201)).toHaveLength(1);
      expect(results.every((r) => r.status === 201 || r.status === 200)).toBe(true);
      expect(new Set(results.map((r) => r.body.data.id)).size).toBe(1);
      const list = await app.http('GET', '/v1/members?email=race@example.com', { key });
      expect(list.body.data).toHaveLength(1);
    });

    it('adjusts, shows the ledger, and erases with crypto-shredding', async () => {
      const m = await app.http('POST', '/v1/members', { key, body: { email: 'erase.me@example.com', phone: '+14155550999' } });
      const id = m.body.data.id;
      const adj = await app.http('POST', `/v1/members/${id}/adjust`, { key, body: { amount_cents: 1500, reason_code: 'goodwill' } });
      expect(adj.status).toBe(201);
      expect(adj.body.data).toMatchObject({ amount_cents: 1500, reason_code: 'goodwill', status: 'posted' });
      const got = await app.http('GET', `/v1/members/${id}`, { key });
      expect(got.body.data.balances).toMatchObject({ available_cents: 1500, spendable_cents: 1500, lifetime_earned_cents: 1500 });
      const del = await app.http('DELETE', `/v1/members/${id}`, { key });
      expect(del.status).toBe(200);
      expect(del.body.data).toMatchObject({ id, state: 'deleted', email: null, phone: null });
      expect(del.body.data.balances.available_cents).toBe(0);
      const ledger = await app.http('GET', `/v1/members/${id}/ledger`, { key });
      expect(ledger.body.data.map((e: { type: string; reason_code: string }) => [e.type, e.reason_code])).toEqual([['adjust', 'goodwill'], ['expire', 'erasure']]);
      expect((await app.http('GET', '/v1/members/phone:%2B14155550999', { key })).status).toBe(404);
      const pg = new Client({ connectionString: app.databaseUrl });
      await pg.connect();
      try {
        const { rows } = await pg.query(`select count(*)::int as n from es.events where data::text ilike '%erase.me@example.com%' or data::text like '%14155550999%'`);
        expect(rows[0].n).toBe(0);
        const { rows: members } = await pg.query(`select count(*)::int as n from ledger.members where email = 'erase.me@example.com'`);
        expect(members[0].n).toBe(0);
      } finally {
        await pg.end();
      }
      const reenrol = await app.http('POST', '/v1/members', { key, body: { email: 'erase.me@example.com' } });
      expect(reenrol.status).toBe(201);
      expect(reenrol.body.data.id).not.toBe(id);
    });
  });
};

memberScenarios('standalone', () => startTestApp());
memberScenarios('distributed over Kafka', async () => startTestApp({}, await startDistributed()));
