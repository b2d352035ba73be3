import { createDecipheriv } from 'node:crypto';
import { Client } from 'pg';
import { TestApp, startTestApp } from './testing/harness';
import { startStandalone } from './start';

/**
 * Members through real HTTP (interface spec "Members" + decisions §4): enrolment and identity,
 * id forms, lists and cursors, profile changes, resolve, erasure with crypto-shredding,
 * adjustments and the ledger.
 */

const BASE = 'https://loyalty.test';
const ALL = ['ingest', 'read', 'act', 'webhooks'];
const BIG = { burst: 100000, per_second: 100000 };

const expectProblem = (r: { status: number; headers: Headers; body: any }, status: number, slug: string) => {
  expect({ status: r.status, type: r.body?.type }).toEqual({ status, type: `${BASE}/docs/api/errors#${slug}` });
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
};
const paths = (r: { body: any }) => (r.body.errors ?? []).map((e: { path: string }) => e.path);

const withDb = async <T>(url: string, fn: (c: Client) => Promise<T>): Promise<T> => {
  const c = new Client({ connectionString: url });
  await c.connect();
  try { return await fn(c); } finally { await c.end(); }
};

/** Every row of every user table, as text, that contains `needle` (case-insensitive). */
const rowsContaining = (url: string, needle: string) => withDb(url, async (c) => {
  const { rows: tables } = await c.query<{ s: string; t: string }>(
    `select table_schema as s, table_name as t from information_schema.tables
     where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`);
  const hits: string[] = [];
  for (const { s, t } of tables) {
    const q = `select x::text as row from "${s}"."${t}" x where strpos(lower(x::text), lower($1)) > 0`;
    const { rows } = await c.query<{ row: string }>(q, [needle]);
    for (const r of rows) hits.push(`${s}.${t}: ${r.row.slice(0, 300)}`);
  }
  return hits;
});

/** Identity claims whose member does not exist: an email or phone held for nobody. */
const danglingClaims = (url: string) => withDb(url, async (c) => (await c.query(
  `select i.kind, i.value, i.member_id from ledger.identities i
   left join ledger.members m on m.tenant = i.tenant and m.member_id = i.member_id where m.member_id is null`)).rows);

type Sealed = { v: number; kid: string; iv: string; tag: string; data: string };
const findSealed = (v: unknown, out: Sealed[] = []): Sealed[] => {
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o.iv === 'string' && typeof o.tag === 'string' && typeof o.data === 'string') out.push(o as unknown as Sealed);
    else for (const x of Object.values(o)) findSealed(x, out);
  }
  return out;
};
const decrypt = (key: Buffer, s: Sealed): string => {
  const d = createDecipheriv('aes-256-gcm', key, Buffer.from(s.iv, 'base64'));
  d.setAuthTag(Buffer.from(s.tag, 'base64'));
  return Buffer.concat([d.update(Buffer.from(s.data, 'base64')), d.final()]).toString('utf8');
};

describe('members over HTTP: the full surface', () => {
  let app: TestApp;
  let pid: string;
  let key: string;
  let n = 0;
  const email = (tag: string) => `${tag}-${++n}@example.com`;
  const enrol = (body: Record<string, unknown>, headers?: Record<string, string>) => app.http('POST', '/v1/members', { key, body, headers });

  beforeAll(async () => {
    app = await startTestApp();
    pid = (await app.createProgram()).programId;
    const r = await app.admin('POST', `/admin/v1/programs/${pid}/keys`, { mode: 'live', scopes: ALL, rate_limit: BIG });
    key = r.body.data.key;
  });
  afterAll(async () => app.close());

  describe('enrolment', () => {
    it('enrols with 201 and the Member shape, then 200 for the same email (case-insensitive), enriched', async () => {
      const e = email('shape');
      const r = await enrol({ email: e.toUpperCase(), accepted_terms_version: '2024-01', marketing_consent: true });
      expect(r.status).toBe(201);
      const m = r.body.data;
      expect(m).toMatchObject({
        email: e, phone: null, state: 'registered', tier: null, expiring_30d_cents: 0,
        balances: { pending_cents: 0, available_cents: 0, reserved_cents: 0, spendable_cents: 0, lifetime_earned_cents: 0, lifetime_redeemed_cents: 0 },
      });
      expect(m.id).toMatch(/^M-[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(m.referral_code).toMatch(/^[0-9A-HJKMNP-TV-Z]{8}$/);
      expect(Number.isNaN(Date.parse(m.enrolled_at))).toBe(false);
      const again = await enrol({ email: e, phone: '+1 (415) 555-0142', external_ref: 'cust-shape' });
      expect(again.status).toBe(200);
      expect(again.body.data).toMatchObject({ id: m.id, phone: '+14155550142', external_ref: 'cust-shape', state: 'registered' });
    });

    it('answers 409 phone-conflict when the phone belongs to another member, and creates nothing', async () => {
      const owner = await enrol({ email: email('owner'), phone: '+442079460001' });
      expect(owner.status).toBe(201);
      const e = email('taker');
      const r = await enrol({ email: e, phone: '+44 20 7946 0001' });
      expectProblem(r, 409, 'phone-conflict');
      expect((await app.http('GET', `/v1/members?email=${e}`, { key })).body.data).toEqual([]);
      // an enrolled member adding someone else's phone is refused too
      const other = await enrol({ email: email('other') });
      expectProblem(await enrol({ email: other.body.data.email, phone: '+442079460001' }), 409, 'phone-conflict');
    });

    it('answers 422 for invalid bodies', async () => {
      expect(paths(await enrol({}))).toContain('/email');
      expect(paths(await enrol({ email: 'x@' }))).toContain('/email');
      expect(paths(await enrol({ email: `${'a'.repeat(250)}@example.com` }))).toContain('/email');
      expect(paths(await enrol({ email: email('p'), phone: '4155550100' }))).toContain('/phone');
      expect(paths(await enrol({ email: email('p'), phone: '+1 12' }))).toContain('/phone');
      expect(paths(await enrol({ email: email('p'), external_ref: 'r'.repeat(129) }))).toContain('/external_ref');
      expect(paths(await enrol({ email: email('p'), marketing_consent: 'true' }))).toContain('/marketing_consent');
      expect(paths(await enrol({ email: email('p'), state: 'active' }))).toContain('/state');
      const r = await enrol({ email: 42 });
      expectProblem(r, 422, 'validation');
    });

    it('enrols one member for 50 concurrent enrolments of one email: one 201, 49 × 200, one id', async () => {
      const e = email('race');
      const rs = await Promise.all(Array.from({ length: 50 }, () => enrol({ email: e })));
      const statuses = rs.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 201)).toHaveLength(1);
      expect(statuses.filter((s) => s === 200)).toHaveLength(49);
      expect(new Set(rs.map((r) => r.body.data.id)).size).toBe(1);
      const list = await app.http('GET', `/v1/members?email=${e}`, { key });
      expect(list.body.data).toHaveLength(1);
      expect(await danglingClaims(app.databaseUrl)).toEqual([]);
    });

    it('gives a phone to one of many concurrent enrolments naming it; the rest are 409 phone-conflict', async () => {
      for (let round = 0; round < 5; round++) {
        const phone = `+1415555020${round}`;
        const emails = Array.from({ length: 10 }, (_, i) => `phone-race-${round}-${i}@example.com`);
        const rs = await Promise.all(emails.map((e) => enrol({ email: e, phone })));
        expect(rs.map((r) => r.status).sort()).toEqual([201, ...Array(9).fill(409)]);
        expect(rs.filter((r) => r.status === 409).every((r) => r.body.type.endsWith('#phone-conflict'))).toBe(true);
        const winner = rs.find((r) => r.status === 201)!.body.data;
        expect(winner.email).toBe(emails[rs.findIndex((r) => r.status === 201)]);
        expect((await app.http('GET', `/v1/members/phone:${encodeURIComponent(phone)}`, { key })).body.data.id).toBe(winner.id);
        // the losers created nothing and left no claim on their email
        for (const e of emails) {
          const list = (await app.http('GET', `/v1/members?email=${e}`, { key })).body.data;
          expect(list.map((m: { id: string }) => m.id)).toEqual(e === winner.email ? [winner.id] : []);
        }
      }
      expect(await danglingClaims(app.databaseUrl)).toEqual([]);
      // a loser can enrol without the phone: its email was not left pointing anywhere
      const retry = await enrol({ email: 'phone-race-0-0@example.com' });
      expect([200, 201]).toContain(retry.status);
      expect(retry.body.data.email).toBe('phone-race-0-0@example.com');
    });

    it('creates one prospect for concurrent resolves of one phone', async () => {
      const rs = await Promise.all(Array.from({ length: 20 }, () => app.http('POST', '/v1/members/resolve', { key, body: { phone: '+14155550151' } })));
      expect(rs.filter((r) => r.status === 201)).toHaveLength(1);
      expect(rs.filter((r) => r.status === 200)).toHaveLength(19);
      expect(new Set(rs.map((r) => r.body.data.id)).size).toBe(1);
    });

    it('normalises phones to E.164', async () => {
      for (const [given, e164] of [['+44 7700 900123', '+447700900123'], ['+1 (212) 555-0188', '+12125550188'], ['+91 98765 43210', '+919876543210']]) {
        const r = await enrol({ email: email('e164'), phone: given });
        expect(r.status).toBe(201);
        expect(r.body.data.phone).toBe(e164);
      }
    });
  });

  describe('reading members', () => {
    let m: any;
    beforeAll(async () => {
      m = (await enrol({ email: email('read'), phone: '+14155550177', external_ref: 'shop/42 a+b' })).body.data;
    });

    it('finds a member by M-…, ref:<external_ref> and phone:%2B…', async () => {
      for (const id of [m.id, `ref:${encodeURIComponent('shop/42 a+b')}`, 'phone:%2B14155550177']) {
        const r = await app.http('GET', `/v1/members/${id}`, { key });
        expect({ id, status: r.status }).toEqual({ id, status: 200 });
        expect(r.body.data.id).toBe(m.id);
      }
    });

    it('answers 404 for unknown ids of every form', async () => {
      for (const id of ['M-00000000000000000000000000', 'ref:nobody', 'phone:%2B14155550999', 'garbage', 'M-short', 'phone:12', 'ref:']) {
        expectProblem(await app.http('GET', `/v1/members/${id}`, { key }), 404, 'not-found');
      }
      expectProblem(await app.http('GET', '/v1/members/ref:nobody/ledger', { key }), 404, 'not-found');
    });

    it('lists with limit, email and state filters; refuses limit 0 and 101', async () => {
      const p = await app.createProgram();
      const k = p.liveKey;
      const made: string[] = [];
      for (let i = 0; i < 5; i++) made.push((await app.http('POST', '/v1/members', { key: k, body: { email: `list-${i}@example.com` } })).body.data.id);
      const prospect = await app.http('POST', '/v1/members/resolve', { key: k, body: { phone: '+14155550155' } });
      expect(prospect.status).toBe(201);
      const all = await app.http('GET', '/v1/members', { key: k });
      expect(all.body.data.map((x: { id: string }) => x.id)).toEqual([...made, prospect.body.data.id]);
      expect(all.body.pagination).toEqual({ cursor: null });
      const two = await app.http('GET', '/v1/members?limit=2', { key: k });
      expect(two.body.data.map((x: { id: string }) => x.id)).toEqual(made.slice(0, 2));
      expect(typeof two.body.pagination.cursor).toBe('string');
      const next = await app.http('GET', `/v1/members?limit=2&cursor=${encodeURIComponent(two.body.pagination.cursor)}`, { key: k });
      expect(next.body.data.map((x: { id: string }) => x.id)).toEqual(made.slice(2, 4));
      const byEmail = await app.http('GET', '/v1/members?email=LIST-3@example.com', { key: k });
      expect(byEmail.body.data.map((x: { id: string }) => x.id)).toEqual([made[3]]);
      const prospects = await app.http('GET', '/v1/members?state=prospect', { key: k });
      expect(prospects.body.data.map((x: { id: string }) => x.id)).toEqual([prospect.body.data.id]);
      const registered = await app.http('GET', '/v1/members?state=registered&limit=100', { key: k });
      expect(registered.body.data).toHaveLength(5);
      expect((await app.http('GET', '/v1/members?state=active', { key: k })).body.data).toEqual([]);
      for (const q of ['limit=0', 'limit=101', 'limit=-1', 'limit=2.5', 'state=paused', 'state=bogus', 'cursor=%%%', 'cursor=bm90LWpzb24']) {
        const r = await app.http('GET', `/v1/members?${q}`, { key: k });
        expect({ q, status: r.status }).toEqual({ q, status: 422 });
        expectProblem(r, 422, 'validation');
      }
      expect(paths(await app.http('GET', '/v1/members?limit=101', { key: k }))).toEqual(['/limit']);
      expect((await app.http('GET', '/v1/members?limit=100', { key: k })).status).toBe(200);
      expect((await app.http('GET', '/v1/members?limit=1', { key: k })).body.data).toHaveLength(1);
    });

    it('walks the list with a cursor while members are inserted, neither skipping nor repeating', async () => {
      const p = await app.createProgram();
      const k = (await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'live', scopes: ALL, rate_limit: BIG })).body.data.key;
      const before: string[] = [];
      for (let i = 0; i < 20; i++) before.push((await app.http('POST', '/v1/members', { key: k, body: { email: `walk-${i}@example.com` } })).body.data.id);
      let stop = false;
      const inserted: string[] = [];
      const writer = (async () => {
        for (let i = 0; !stop && i < 200; i++) {
          const r = await app.http('POST', '/v1/members', { key: k, body: { email: `walk-new-${i}@example.com` } });
          inserted.push(r.body.data.id);
        }
      })();
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const q: string = cursor ? `?limit=3&cursor=${encodeURIComponent(cursor)}` : '?limit=3';
        const r = await app.http('GET', `/v1/members${q}`, { key: k });
        expect(r.status).toBe(200);
        seen.push(...r.body.data.map((x: { id: string }) => x.id));
        cursor = r.body.pagination.cursor;
        if (++pages === 5) await new Promise((res) => setTimeout(res, 50));
        if (pages > 12) stop = true; // let the walk catch up with the writer
      } while (cursor);
      stop = true;
      await writer;
      expect(new Set(seen).size).toBe(seen.length); // no repeats
      expect(seen.slice(0, 20)).toEqual(before); // nothing skipped, in order
      expect(inserted.length).toBeGreaterThan(0);
      // what the walk saw of the new members is a prefix of their insertion order
      const newSeen = seen.slice(20);
      expect(newSeen).toEqual(inserted.slice(0, newSeen.length));
      // and a fresh walk sees everyone exactly once
      const everyone: string[] = [];
      cursor = null;
      do {
        const r: any = await app.http('GET', `/v1/members${cursor ? `?limit=7&cursor=${encodeURIComponent(cursor)}` : '?limit=7'}`, { key: k });
        everyone.push(...r.body.data.map((x: { id: string }) => x.id));
        cursor = r.body.pagination.cursor;
      } while (cursor);
      expect(everyone).toEqual([...before, ...inserted]);
    });
  });

  describe('profile changes', () => {
    it('PATCHes phone, external_ref and marketing_consent; the old identifiers stop resolving', async () => {
      const m = (await enrol({ email: email('patch'), phone: '+14155550161', external_ref: 'patch-old' })).body.data;
      const r = await app.http('PATCH', `/v1/members/${m.id}`, { key, body: { phone: '+1 415 555 0162', external_ref: 'patch-new', marketing_consent: true } });
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ id: m.id, email: m.email, phone: '+14155550162', external_ref: 'patch-new', marketing_consent: true });
      expect((await app.http('GET', '/v1/members/phone:%2B14155550162', { key })).body.data.id).toBe(m.id);
      expect((await app.http('GET', '/v1/members/ref:patch-new', { key })).body.data.id).toBe(m.id);
      expectProblem(await app.http('GET', '/v1/members/phone:%2B14155550161', { key }), 404, 'not-found');
      expectProblem(await app.http('GET', '/v1/members/ref:patch-old', { key }), 404, 'not-found');
      // the freed phone can go to someone else
      expect((await enrol({ email: email('patch-next'), phone: '+14155550161' })).status).toBe(201);
      // PATCH by ref form
      const byRef = await app.http('PATCH', '/v1/members/ref:patch-new', { key, body: { marketing_consent: false } });
      expect(byRef.body.data.marketing_consent).toBe(false);
    });

    it('refuses email in a PATCH with 422, and another member\'s phone with 409', async () => {
      const m = (await enrol({ email: email('patch-email') })).body.data;
      const r = await app.http('PATCH', `/v1/members/${m.id}`, { key, body: { email: 'new@example.com' } });
      expectProblem(r, 422, 'validation');
      expect(paths(r)).toEqual(['/email']);
      expect((await app.http('GET', `/v1/members/${m.id}`, { key })).body.data.email).toBe(m.email);
      await enrol({ email: email('patch-phone-owner'), phone: '+14155550163' });
      expectProblem(await app.http('PATCH', `/v1/members/${m.id}`, { key, body: { phone: '+14155550163' } }), 409, 'phone-conflict');
      expect(paths(await app.http('PATCH', `/v1/members/${m.id}`, { key, body: { phone: 'abc' } }))).toEqual(['/phone']);
      expect(paths(await app.http('PATCH', `/v1/members/${m.id}`, { key, body: { state: 'active' } }))).toEqual(['/state']);
      expectProblem(await app.http('PATCH', '/v1/members/M-00000000000000000000000000', { key, body: { marketing_consent: true } }), 404, 'not-found');
    });

    it('enrols a prospect when a PATCH accepts the terms', async () => {
      const p = await app.http('POST', '/v1/members/resolve', { key, body: { phone: '+14155550164' } });
      expect(p.body.data.state).toBe('prospect');
      expect(p.body.data.enrolled_at).toBeNull();
      const r = await app.http('PATCH', `/v1/members/${p.body.data.id}`, { key, body: { accepted_terms_version: 'v3' } });
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ id: p.body.data.id, state: 'registered', accepted_terms_version: 'v3' });
      expect(r.body.data.enrolled_at).not.toBeNull();
    });
  });

  describe('resolve', () => {
    it('creates a prospect for a phone alone (201), finds it again (200)', async () => {
      const r = await app.http('POST', '/v1/members/resolve', { key, body: { phone: '+44 7700 900201' } });
      expect(r.status).toBe(201);
      expect(r.body.data).toMatchObject({ state: 'prospect', phone: '+447700900201', email: null });
      const again = await app.http('POST', '/v1/members/resolve', { key, body: { phone: '+447700900201' } });
      expect(again.status).toBe(200);
      expect(again.body.data.id).toBe(r.body.data.id);
    });

    it('returns an existing member with 200 by any identifier', async () => {
      const m = (await enrol({ email: email('resolve'), phone: '+14155550171', external_ref: 'res-1' })).body.data;
      for (const body of [{ email: m.email }, { phone: '+14155550171' }, { external_ref: 'res-1' }, { email: m.email, phone: '+14155550171', external_ref: 'res-1' }]) {
        const r = await app.http('POST', '/v1/members/resolve', { key, body });
        expect(r.status).toBe(200);
        expect(r.body.data.id).toBe(m.id);
        expect(r.body.data.state).toBe('registered');
      }
    });

    it('answers 409 when the identifiers point to different members, and 422 for an empty body', async () => {
      const a = (await enrol({ email: email('res-a'), phone: '+14155550172' })).body.data;
      const b = (await enrol({ email: email('res-b'), external_ref: 'res-b' })).body.data;
      expectProblem(await app.http('POST', '/v1/members/resolve', { key, body: { email: a.email, external_ref: 'res-b' } }), 409, 'phone-conflict');
      expectProblem(await app.http('POST', '/v1/members/resolve', { key, body: { phone: '+14155550172', email: b.email } }), 409, 'phone-conflict');
      expectProblem(await app.http('POST', '/v1/members/resolve', { key, body: {} }), 422, 'validation');
      expect(paths(await app.http('POST', '/v1/members/resolve', { key, body: { phone: 'nope' } }))).toEqual(['/phone']);
    });

    it('adopts a prospect when an enrolment names its phone: same id, state registered', async () => {
      const p = (await app.http('POST', '/v1/members/resolve', { key, body: { phone: '+14155550173' } })).body.data;
      await app.http('POST', `/v1/members/${p.id}/adjust`, { key, body: { amount_cents: 300, reason_code: 'prospect-earn' } });
      const e = email('adopt');
      const r = await enrol({ email: e, phone: '+1 415 555 0173', accepted_terms_version: 'v1' });
      expect(r.status).toBe(201);
      expect(r.body.data).toMatchObject({ id: p.id, email: e, phone: '+14155550173', state: 'registered', accepted_terms_version: 'v1' });
      expect(r.body.data.balances.available_cents).toBe(300);
      expect((await enrol({ email: e })).status).toBe(200);
      expect((await app.http('GET', `/v1/members?email=${e}`, { key })).body.data.map((x: { id: string }) => x.id)).toEqual([p.id]);
    });
  });

  describe('erasure', () => {
    it('erases a member: tombstone, forfeited balance, identifiers freed, nothing left in plaintext, PII shredded', async () => {
      const e = email('erase-me');
      const phone = '+14155550181';
      const ref = 'erase-ref-181';
      const m = (await enrol({ email: e, phone, external_ref: ref }, { 'idempotency-key': 'erase-enrol' })).body.data;
      // leave traces an erasure must reach: a rejected call naming the email and the phone
      expect((await app.http('GET', `/v1/members?email=${e}&limit=0`, { key })).status).toBe(422);
      expect((await app.http('GET', `/v1/members/phone:%2B14155550181/ledger?limit=0`, { key })).status).toBe(422);
      await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: 700, reason_code: 'seed' } });
      await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: -200, reason_code: 'seed-debit' } });
      expect(await rowsContaining(app.databaseUrl, e)).not.toEqual([]);

      // the member's data key decrypts the PII sealed in the event store before erasure
      const before = await withDb(app.databaseUrl, async (c) => {
        const k = await c.query<{ key: Buffer }>('select key from ledger.member_keys where member_id = $1', [m.id]);
        const ev = await c.query<{ data: unknown }>('select data from es.events where stream_id like $1 order by stream_revision', [`%-${m.id}`]);
        return { key: k.rows[0].key, sealed: ev.rows.flatMap((r) => findSealed(r.data)) };
      });
      expect(before.sealed.length).toBeGreaterThan(0);
      expect(JSON.parse(decrypt(before.key, before.sealed[0]))).toMatchObject({ email: e });

      const del = await app.http('DELETE', `/v1/members/${m.id}`, { key });
      expect(del.status).toBe(200);
      expect(del.body.data).toMatchObject({ id: m.id, state: 'deleted', email: null, phone: null, external_ref: null });
      expect(del.body.data.balances.available_cents).toBe(0);

      // the id resolves to the tombstone; email, phone and ref no longer resolve
      const tomb = await app.http('GET', `/v1/members/${m.id}`, { key });
      expect(tomb.status).toBe(200);
      // (the retention job may already have anonymised it: grace 0 days)
      expect(tomb.body.data).toMatchObject({ id: m.id, state: expect.stringMatching(/^(deleted|anonymised)$/), email: null, phone: null, external_ref: null });
      expectProblem(await app.http('GET', `/v1/members/ref:${ref}`, { key }), 404, 'not-found');
      expectProblem(await app.http('GET', '/v1/members/phone:%2B14155550181', { key }), 404, 'not-found');
      expect((await app.http('GET', `/v1/members?email=${e}`, { key })).body.data).toEqual([]);
      const deleted = await app.http('GET', '/v1/members?state=deleted', { key });
      expect(deleted.body.data.map((x: { id: string }) => x.id)).toContain(m.id);

      // the remaining balance was forfeited by an expire entry with reason erasure
      const ledger = await app.http('GET', `/v1/members/${m.id}/ledger`, { key });
      expect(ledger.status).toBe(200);
      expect(ledger.body.data.map((x: any) => [x.type, x.amount_cents, x.reason_code])).toEqual([
        ['adjust', 700, 'seed'], ['adjust', -200, 'seed-debit'], ['expire', -500, 'erasure'],
      ]);

      // a second DELETE changes nothing; writes on the tombstone are 404
      const again = await app.http('DELETE', `/v1/members/${m.id}`, { key });
      expect(again.status).toBe(200);
      expect((await app.http('GET', `/v1/members/${m.id}/ledger`, { key })).body.data).toHaveLength(3);
      expectProblem(await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: 5, reason_code: 'x' } }), 404, 'not-found');
      expectProblem(await app.http('PATCH', `/v1/members/${m.id}`, { key, body: { marketing_consent: true } }), 404, 'not-found');

      // the same email, phone and ref enrol again as a NEW member
      const reborn = await enrol({ email: e, phone, external_ref: ref });
      expect(reborn.status).toBe(201);
      expect(reborn.body.data.id).not.toBe(m.id);
      expect(reborn.body.data.balances.available_cents).toBe(0);
      // the idempotent replay of the original enrolment no longer carries the erased data
      const replay = await enrol({ email: e, phone, external_ref: ref }, { 'idempotency-key': 'erase-enrol' });
      expect(JSON.stringify(replay.body)).not.toContain(m.id);
      expect(await app.http('DELETE', `/v1/members/${reborn.body.data.id}`, { key })).toMatchObject({ status: 200 });

      // crypto-shredding: nothing in the database holds the email, phone or ref in plaintext …
      for (const needle of [e, phone, phone.slice(1), ref]) {
        expect({ needle, hits: await rowsContaining(app.databaseUrl, needle) }).toEqual({ needle, hits: [] });
      }
      // … the data key is gone from every table, and the sealed PII can no longer be opened
      const after = await withDb(app.databaseUrl, async (c) => {
        const k = await c.query('select 1 from ledger.member_keys where member_id = $1', [m.id]);
        const ev = await c.query<{ data: unknown }>('select data from es.events where stream_id like $1 order by stream_revision', [`%-${m.id}`]);
        return { keys: k.rowCount, sealed: ev.rows.flatMap((r) => findSealed(r.data)) };
      });
      expect(after.keys).toBe(0);
      expect(await rowsContaining(app.databaseUrl, before.key.toString('hex'))).toEqual([]);
      expect(await rowsContaining(app.databaseUrl, before.key.toString('base64'))).toEqual([]);
      expect(after.sealed.length).toBeGreaterThanOrEqual(before.sealed.length);
      for (const s of after.sealed) expect(JSON.stringify(s)).not.toContain(e);
    });

    it('erases for every replica: a second instance that had the member cached shows no PII afterwards', async () => {
      const second = await startStandalone({
        databaseUrl: app.databaseUrl, port: 0, adminToken: app.adminToken, adminTokenGenerated: false, baseUrl: BASE,
      }, false);
      const b = await startTestApp({}, { url: second.url, adminToken: app.adminToken, databaseUrl: app.databaseUrl, close: () => second.app.close() });
      try {
        const e = email('replica');
        const m = (await enrol({ email: e, phone: '+14155550191', external_ref: 'replica-ref' })).body.data;
        // instance B reads the member, so it holds the member's data key in memory
        const seen = await b.http('GET', `/v1/members/${m.id}`, { key });
        expect(seen.body.data.email).toBe(e);
        expect((await app.http('DELETE', `/v1/members/${m.id}`, { key })).status).toBe(200);
        const after = await b.http('GET', `/v1/members/${m.id}`, { key });
        expect(after.status).toBe(200);
        expect(after.body.data).toMatchObject({ id: m.id, state: expect.stringMatching(/^(deleted|anonymised)$/), email: null, phone: null, external_ref: null });
        // B's projections never write the PII back either
        await new Promise((r) => setTimeout(r, 300));
        expect(await rowsContaining(app.databaseUrl, e)).toEqual([]);
      } finally {
        await second.app.close();
      }
    });

    it('answers 404 for erasing an unknown member', async () => {
      expectProblem(await app.http('DELETE', '/v1/members/M-00000000000000000000000000', { key }), 404, 'not-found');
      expectProblem(await app.http('DELETE', '/v1/members/ref:nobody', { key }), 404, 'not-found');
    });
  });

  describe('adjustments and the ledger', () => {
    it('adjusts with 201 {ledger_entry_id, amount_cents, reason_code, status}; negative allowed', async () => {
      const m = (await enrol({ email: email('adj') })).body.data;
      const credit = await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: 1000, reason_code: 'goodwill', note: 'sorry' } });
      expect(credit.status).toBe(201);
      expect(credit.body.data).toMatchObject({ amount_cents: 1000, reason_code: 'goodwill', status: 'posted' });
      expect(credit.body.data.ledger_entry_id).toMatch(/^LE-[0-9A-HJKMNP-TV-Z]{26}$/);
      const debit = await app.http('POST', `/v1/members/ref:nobody/adjust`, { key, body: { amount_cents: -1, reason_code: 'x' } });
      expectProblem(debit, 404, 'not-found');
      const neg = await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: -1500, reason_code: 'clawback' } });
      expect(neg.status).toBe(201);
      expect(neg.body.data.amount_cents).toBe(-1500);
      const after = (await app.http('GET', `/v1/members/${m.id}`, { key })).body.data;
      expect(after.balances.available_cents).toBe(-500);
      expect(after.balances.spendable_cents).toBeLessThanOrEqual(0);
    });

    it('refuses a zero amount, a missing reason_code, a non-integer and an unknown member', async () => {
      const m = (await enrol({ email: email('adj-bad') })).body.data;
      const u = `/v1/members/${m.id}/adjust`;
      expect(paths(await app.http('POST', u, { key, body: { amount_cents: 0, reason_code: 'x' } }))).toEqual(['/amount_cents']);
      expect(paths(await app.http('POST', u, { key, body: { amount_cents: 10 } }))).toEqual(['/reason_code']);
      expect(paths(await app.http('POST', u, { key, body: { amount_cents: 1.5, reason_code: 'x' } }))).toEqual(['/amount_cents']);
      expect(paths(await app.http('POST', u, { key, body: { amount_cents: '10', reason_code: 'x' } }))).toEqual(['/amount_cents']);
      expect(paths(await app.http('POST', u, { key, body: { amount_cents: 2 ** 53, reason_code: 'x' } }))).toEqual(['/amount_cents']);
      expect(paths(await app.http('POST', u, { key, body: { amount_cents: 10, reason_code: 'r'.repeat(65) } }))).toEqual(['/reason_code']);
      expect(paths(await app.http('POST', u, { key, body: { amount_cents: 10, reason_code: '' } }))).toEqual(['/reason_code']);
      expectProblem(await app.http('POST', '/v1/members/M-00000000000000000000000000/adjust', { key, body: { amount_cents: 10, reason_code: 'x' } }), 404, 'not-found');
      expect((await app.http('GET', `/v1/members/${m.id}/ledger`, { key })).body.data).toEqual([]);
    });

    it('honours idempotency_key in the body: a retry adds nothing, a different adjustment under it is 409', async () => {
      const m = (await enrol({ email: email('adj-key') })).body.data;
      const u = `/v1/members/${m.id}/adjust`;
      const a = await app.http('POST', u, { key, body: { amount_cents: 250, reason_code: 'promo', idempotency_key: 'body-key-1' } });
      const b = await app.http('POST', u, { key, body: { amount_cents: 250, reason_code: 'promo', idempotency_key: 'body-key-1', note: 'retry' } });
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(b.body.data.ledger_entry_id).toBe(a.body.data.ledger_entry_id);
      expectProblem(await app.http('POST', u, { key, body: { amount_cents: 999, reason_code: 'promo', idempotency_key: 'body-key-1' } }), 409, 'idempotency-key-reused');
      expect((await app.http('GET', `/v1/members/${m.id}/ledger`, { key })).body.data).toHaveLength(1);
      expect((await app.http('GET', `/v1/members/${m.id}`, { key })).body.data.balances.available_cents).toBe(250);
    });

    it('applies 30 concurrent adjustments exactly once each', async () => {
      const m = (await enrol({ email: email('adj-race') })).body.data;
      const rs = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: i + 1, reason_code: 'race' } })));
      expect(rs.map((r) => r.status)).toEqual(Array(30).fill(201));
      expect(new Set(rs.map((r) => r.body.data.ledger_entry_id)).size).toBe(30);
      const after = (await app.http('GET', `/v1/members/${m.id}`, { key })).body.data;
      expect(after.balances.available_cents).toBe((30 * 31) / 2);
      expect((await app.http('GET', `/v1/members/${m.id}/ledger?limit=200`, { key })).body.data).toHaveLength(30);
    });

    it('lists the ledger oldest first with the LedgerEntry fields and cursor paging (limit 1–200)', async () => {
      const m = (await enrol({ email: email('ledger') })).body.data;
      const ids: string[] = [];
      for (let i = 1; i <= 7; i++) {
        ids.push((await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: i * 100, reason_code: `r${i}` } })).body.data.ledger_entry_id);
      }
      const all = await app.http('GET', `/v1/members/${m.id}/ledger`, { key });
      expect(all.status).toBe(200);
      expect(all.body.data.map((x: { id: string }) => x.id)).toEqual(ids);
      expect(all.body.pagination).toEqual({ cursor: null });
      const entry = all.body.data[0];
      for (const f of ['id', 'type', 'status', 'amount_cents', 'currency', 'reason_code', 'rule', 'parent_entry_id', 'release_at', 'expires_at', 'created_at']) {
        expect(entry).toHaveProperty(f);
      }
      expect(entry).toMatchObject({ type: 'adjust', status: 'posted', amount_cents: 100, currency: 'points', reason_code: 'r1', rule: null, parent_entry_id: null });
      const times = all.body.data.map((x: { created_at: string }) => Date.parse(x.created_at));
      expect([...times].sort((a, b) => a - b)).toEqual(times);
      const walked: string[] = [];
      let cursor: string | null = null;
      do {
        const r: any = await app.http('GET', `/v1/members/${m.id}/ledger?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key });
        expect(r.body.data.length).toBeLessThanOrEqual(3);
        walked.push(...r.body.data.map((x: { id: string }) => x.id));
        cursor = r.body.pagination.cursor;
      } while (cursor);
      expect(walked).toEqual(ids);
      // a page that ends exactly at the end says so
      const exact = await app.http('GET', `/v1/members/${m.id}/ledger?limit=7`, { key });
      expect(exact.body.pagination.cursor).toBeNull();
      for (const q of ['limit=0', 'limit=201', 'limit=x', 'cursor=@@']) {
        expectProblem(await app.http('GET', `/v1/members/${m.id}/ledger?${q}`, { key }), 422, 'validation');
      }
      expect((await app.http('GET', `/v1/members/${m.id}/ledger?limit=200`, { key })).body.data).toHaveLength(7);
      expect((await app.http('GET', `/v1/members/ref:nope/ledger`, { key })).status).toBe(404);
    });
  });
});
