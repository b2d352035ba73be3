import { Client } from 'pg';
import { eventually } from '@loyalty/testing';
import { rebuildProjections } from '@loyalty/rebuild';
import { TestApp, startTestApp } from './testing/harness';

/**
 * Referrals over HTTP (decisions §7, §10): codes, applications, fraud holds, admin review,
 * qualification by the friend's paid order and the rewards on both ledgers.
 */
const fast = { burst: 10_000, per_second: 10_000 };

const RULES = [
  { id: 'base', name: 'Base 1 %', type: 'base', earn_rate_pct: 1, timing: 'paid' },
  { id: 'ref', name: 'Refer a friend', type: 'referral', amount_cents: 1_000, friend_amount_cents: 500, min_order_cents: 5_000 },
];

type Referral = { id: string; code: string; advocate_id: string; friend_id: string; status: string; created_at: string; hold_reasons: string[] };
type Entry = { id: string; type: string; status: string; amount_cents: number; rule: string | null; reason_code: string | null };

describe('referrals over HTTP (standalone)', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => app?.close());

  const programme = async (body: Record<string, unknown> = {}) => {
    const p = await app.createProgram({ rules: RULES, settings: { referral_link_template: 'https://shop.example/r/{code}' }, ...body });
    const mint = async (mode: 'live' | 'test', scopes = ['ingest', 'read', 'act']) => {
      const r = await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode, scopes, rate_limit: fast });
      expect(r.status).toBe(201);
      return r.body.data.key as string;
    };
    return { id: p.programId, key: await mint('live'), testKey: await mint('test'), readKey: await mint('live', ['read']) };
  };

  let n = 0;
  const enrol = async (key: string, body: Record<string, unknown> = {}) => {
    n++;
    const r = await app.http('POST', '/v1/members', { key, body: { email: `member${n}@example.com`, ...body } });
    expect(r.status).toBe(201);
    return r.body.data as { id: string; email: string; referral_code: string };
  };

  const refer = (key: string, code: string, friend: string, headers: Record<string, string> = {}) =>
    app.http<{ data: Referral } & Record<string, unknown>>('POST', '/v1/referrals', { key, body: { code, friend_member_id: friend }, headers });

  const details = async (key: string, member: string) => {
    const r = await app.http('GET', `/v1/members/${member}/referral`, { key });
    expect(r.status).toBe(200);
    return r.body.data as { code: string; link: string | null; stats: { pending: number; qualified: number; rewarded: number } };
  };

  const ledger = async (key: string, member: string) => {
    const r = await app.http('GET', `/v1/members/${member}/ledger?limit=200`, { key });
    expect(r.status).toBe(200);
    return r.body.data as Entry[];
  };

  const orderPaid = async (key: string, event: Record<string, unknown>) => {
    const sent = await app.http('POST', '/v1/events', { key, body: { type: 'order.paid', ...event } });
    expect(sent.status).toBe(202);
    return eventually(async () => {
      const s = (await app.http('GET', `/v1/events/${sent.body.data.id}`, { key })).body.data;
      expect(s.status).toBe('completed');
      return s;
    }, { timeoutMs: 20_000, intervalMs: 25 });
  };

  const referral = async (key: string, id: string) => {
    const r = await app.http('GET', `/v1/referrals/${id}`, { key });
    expect(r.status).toBe(200);
    return r.body.data as Referral;
  };

  it('creates a referral (201) and shows it in the advocate\'s referral details', async () => {
    const p = await programme();
    const advocate = await enrol(p.key);
    const friend = await enrol(p.key, { external_ref: 'shop-42' });
    expect(advocate.referral_code).toMatch(/^[0-9A-HJKMNP-TV-Z]{8}$/);

    const before = await details(p.key, advocate.id);
    expect(before).toEqual({ code: advocate.referral_code, link: `https://shop.example/r/${advocate.referral_code}`, stats: { pending: 0, qualified: 0, rewarded: 0 } });

    // any accepted member id form names the friend; the code is read case-insensitively
    const r = await refer(p.key, advocate.referral_code.toLowerCase(), 'ref:shop-42');
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ code: advocate.referral_code, advocate_id: advocate.id, friend_id: friend.id, status: 'pending', hold_reasons: [] });
    expect(r.body.data.id).toMatch(/^RF-[0-9A-Z]{26}$/);
    expect(Date.parse(r.body.data.created_at)).not.toBeNaN();

    expect((await details(p.key, advocate.id)).stats).toEqual({ pending: 1, qualified: 0, rewarded: 0 });
    expect(await referral(p.key, r.body.data.id)).toMatchObject({ id: r.body.data.id, status: 'pending' });
    // the friend made no referrals; a programme without a link template has a null link
    expect((await details(p.key, friend.id)).stats).toEqual({ pending: 0, qualified: 0, rewarded: 0 });
    const plain = await programme({ settings: {} });
    const m = await enrol(plain.key);
    expect((await details(plain.key, m.id)).link).toBeNull();
  });

  it('refuses unknown codes and friends (404), self-referral (422), and a second referral of a friend (409)', async () => {
    const p = await programme();
    const advocate = await enrol(p.key);
    const other = await enrol(p.key);
    const friend = await enrol(p.key);

    const unknownCode = await refer(p.key, 'ZZZZZZZZ', friend.id);
    expect(unknownCode.status).toBe(404);
    expect(unknownCode.body.type).toMatch(/#not-found$/);
    expect((await refer(p.key, 'not a code', friend.id)).status).toBe(404);
    expect((await refer(p.key, advocate.referral_code, 'M-00000000000000000000000000')).status).toBe(404);
    expect((await refer(p.key, advocate.referral_code, 'ref:nobody')).status).toBe(404);

    const self = await refer(p.key, advocate.referral_code, advocate.id);
    expect(self.status).toBe(422);
    expect(self.body.type).toBe('https://loyalty.test/docs/api/errors#rule-ineligible');

    expect((await refer(p.key, advocate.referral_code, friend.id)).status).toBe(201);
    const again = await refer(p.key, other.referral_code, friend.id);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ status: 409, type: 'https://loyalty.test/docs/api/errors#conflict' });
    expect((await refer(p.key, advocate.referral_code, friend.id)).status).toBe(409);

    const invalid = await app.http('POST', '/v1/referrals', { key: p.key, body: { code: 'ABCD1234' } });
    expect(invalid.status).toBe(422);
    expect(invalid.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path: '/friend_member_id' })]));
    expect((await app.http('GET', '/v1/members/M-00000000000000000000000000/referral', { key: p.key })).status).toBe(404);
    expect((await app.http('GET', '/v1/referrals/RF-00000000000000000000000000', { key: p.key })).status).toBe(404);
  });

  it('needs the act scope to refer and read to see details; replays an Idempotency-Key', async () => {
    const p = await programme();
    const advocate = await enrol(p.key);
    const friend = await enrol(p.key);
    expect((await refer(p.readKey, advocate.referral_code, friend.id)).status).toBe(403);
    expect((await app.http('GET', `/v1/members/${advocate.id}/referral`, { key: p.readKey })).status).toBe(200);

    const first = await refer(p.key, advocate.referral_code, friend.id, { 'idempotency-key': 'ref-once' });
    const replay = await refer(p.key, advocate.referral_code, friend.id, { 'idempotency-key': 'ref-once' });
    expect(first.status).toBe(201);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replay')).toBe('true');
    expect(replay.body.data.id).toBe(first.body.data.id);
  });

  it('keeps programmes and modes apart: another programme\'s or the sandbox\'s code is unknown', async () => {
    const p = await programme();
    const q = await programme();
    const advocate = await enrol(p.key);
    const friendQ = await enrol(q.key);
    const friendTest = await enrol(p.testKey);
    expect((await refer(q.key, advocate.referral_code, friendQ.id)).status).toBe(404);
    expect((await refer(p.testKey, advocate.referral_code, friendTest.id)).status).toBe(404);
    const friend = await enrol(p.key);
    const r = await refer(p.key, advocate.referral_code, friend.id);
    expect(r.status).toBe(201);
    expect((await app.http('GET', `/v1/referrals/${r.body.data.id}`, { key: q.key })).status).toBe(404);
    expect((await app.http('GET', `/v1/referrals/${r.body.data.id}`, { key: p.testKey })).status).toBe(404);
    expect((await app.http('GET', `/v1/members/${advocate.id}/referral`, { key: q.key })).status).toBe(404);
  });

  it('refuses a friend who already has a paid order (422)', async () => {
    const p = await programme();
    const advocate = await enrol(p.key);
    const friend = await enrol(p.key);
    await orderPaid(p.key, { order_ref: 'EARLY-1', gross_cents: 2_000, email: friend.email });
    const r = await refer(p.key, advocate.referral_code, friend.id);
    expect(r.status).toBe(422);
    expect(r.body.type).toMatch(/#rule-ineligible$/);
  });

  it('qualifies on the friend\'s first paid order at the minimum and credits both ledgers with rule referral', async () => {
    const p = await programme();
    const advocate = await enrol(p.key);
    const friend = await enrol(p.key);
    const created = await refer(p.key, advocate.referral_code, friend.id);
    expect(created.status).toBe(201);

    // below the rule's min_order_cents: nothing happens
    await orderPaid(p.key, { order_ref: 'SMALL-1', gross_cents: 4_999, email: friend.email });
    expect((await referral(p.key, created.body.data.id)).status).toBe('pending');

    await orderPaid(p.key, { order_ref: 'BIG-1', gross_cents: 5_000, email: friend.email });
    const done = await eventually(async () => {
      const r = await referral(p.key, created.body.data.id);
      expect(r.status).toBe('rewarded');
      return r as Referral & { order_ref: string; advocate_entry_id: string; friend_entry_id: string };
    }, { timeoutMs: 20_000, intervalMs: 50 });
    expect(done.order_ref).toBe('BIG-1');

    const adv = (await ledger(p.key, advocate.id)).filter((e) => e.rule === 'referral');
    expect(adv).toEqual([expect.objectContaining({ id: done.advocate_entry_id, type: 'earn', status: 'posted', amount_cents: 1_000, rule: 'referral' })]);
    const fr = (await ledger(p.key, friend.id)).filter((e) => e.rule === 'referral');
    expect(fr).toEqual([expect.objectContaining({ id: done.friend_entry_id, type: 'earn', status: 'posted', amount_cents: 500 })]);
    const member = (await app.http('GET', `/v1/members/${advocate.id}`, { key: p.key })).body.data;
    expect(member.balances.available_cents).toBe(1_000);
    expect(member.state).toBe('active');
    expect((await details(p.key, advocate.id)).stats).toEqual({ pending: 0, qualified: 0, rewarded: 1 });

    // later orders pay nothing more
    await orderPaid(p.key, { order_ref: 'BIG-2', gross_cents: 50_000, email: friend.email });
    expect((await ledger(p.key, advocate.id)).filter((e) => e.rule === 'referral')).toHaveLength(1);
  });

  it('a reward that crosses a points tier upgrades the advocate at once; a manual rule credits under review', async () => {
    const p = await programme({
      rules: [{ id: 'ref', type: 'referral', amount_cents: 2_000, timing: 'immediate' }],
      tiers: [{ name: 'Silver', level: 1, threshold_type: 'points', threshold_value: 2_000 }],
    });
    const advocate = await enrol(p.key);
    const friend = await enrol(p.key);
    const r = await refer(p.key, advocate.referral_code, friend.id);
    await orderPaid(p.key, { order_ref: 'T-1', gross_cents: 100, email: friend.email });
    await eventually(async () => expect((await referral(p.key, r.body.data.id)).status).toBe('rewarded'), { timeoutMs: 20_000, intervalMs: 50 });
    const m = (await app.http('GET', `/v1/members/${advocate.id}`, { key: p.key })).body.data;
    expect(m.tier).toMatchObject({ name: 'Silver', level: 1 });
    // no friend_amount_cents: the friend gets nothing
    expect((await ledger(p.key, friend.id)).filter((e) => e.rule === 'referral')).toEqual([]);

    const q = await programme({ rules: [{ id: 'ref', type: 'referral', amount_cents: 700, timing: 'manual' }] });
    const a2 = await enrol(q.key);
    const f2 = await enrol(q.key);
    const r2 = await refer(q.key, a2.referral_code, f2.id);
    await orderPaid(q.key, { order_ref: 'M-1', gross_cents: 100, email: f2.email });
    await eventually(async () => expect((await referral(q.key, r2.body.data.id)).status).toBe('rewarded'), { timeoutMs: 20_000, intervalMs: 50 });
    const [entry] = (await ledger(q.key, a2.id)).filter((e) => e.rule === 'referral');
    expect(entry).toMatchObject({ type: 'earn', status: 'under_review', amount_cents: 700 });
    const approved = await app.admin('POST', `/admin/v1/ledger-entries/${entry.id}/approve`);
    expect(approved.status).toBe(200);
    expect((await app.http('GET', `/v1/members/${a2.id}`, { key: q.key })).body.data.balances.available_cents).toBe(700);
  });

  it('holds a referral from the same normalised email; an approved one then qualifies; a repeat review is idempotent', async () => {
    const p = await programme();
    const advocate = await enrol(p.key, { email: 'john.doe+a@x.com' });
    const friend = await enrol(p.key, { email: 'johndoe@x.com' });
    const r = await refer(p.key, advocate.referral_code, friend.id);
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ status: 'held', hold_reasons: ['same_email'] });
    expect((await details(p.key, advocate.id)).stats).toEqual({ pending: 1, qualified: 0, rewarded: 0 });

    // held pays nothing: the qualifying order is remembered
    await orderPaid(p.key, { order_ref: 'H-1', gross_cents: 8_000, email: friend.email });
    await eventually(async () => expect(await referral(p.key, r.body.data.id)).toMatchObject({ status: 'held', order_ref: 'H-1' }), { timeoutMs: 20_000, intervalMs: 50 });
    expect((await ledger(p.key, advocate.id)).filter((e) => e.rule === 'referral')).toEqual([]);

    expect((await app.http('POST', `/admin/v1/referrals/${r.body.data.id}/approve`, { key: p.key })).status).toBe(401);
    const approved = await app.admin('POST', `/admin/v1/referrals/${r.body.data.id}/approve`);
    expect(approved.status).toBe(200);
    expect(approved.body.data).toMatchObject({ id: r.body.data.id, status: 'rewarded', order_ref: 'H-1' });
    expect((await ledger(p.key, advocate.id)).filter((e) => e.rule === 'referral')).toEqual([expect.objectContaining({ amount_cents: 1_000, status: 'posted' })]);

    const again = await app.admin('POST', `/admin/v1/referrals/${r.body.data.id}/approve`);
    expect(again.status).toBe(200);
    expect(again.body.data.status).toBe('rewarded');
    const reject = await app.admin('POST', `/admin/v1/referrals/${r.body.data.id}/reject`);
    expect(reject.status).toBe(409);
    expect(reject.body.type).toMatch(/#invalid-state$/);
    expect((await app.admin('POST', '/admin/v1/referrals/RF-00000000000000000000000000/approve')).status).toBe(404);
  });

  it('accepts a prospect friend; an erased advocate\'s code no longer resolves; an approved referral without an order is pending', async () => {
    const p = await programme();
    const advocate = await enrol(p.key, { phone: '+14155550123' });
    const prospect = await app.http('POST', '/v1/members/resolve', { key: p.key, body: { phone: '+1 415 555 0124' } });
    expect(prospect.status).toBe(201);
    // in a body the phone form may be sent as is or URL-encoded like in a path
    const r = await refer(p.key, advocate.referral_code, 'phone:+14155550124');
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ friend_id: prospect.body.data.id, status: 'pending' });

    const again = await refer(p.key, advocate.referral_code, `phone:${encodeURIComponent('+14155550124')}`);
    expect(again.status).toBe(409);

    const erased = await enrol(p.key);
    expect((await app.http('DELETE', `/v1/members/${erased.id}`, { key: p.key })).status).toBe(200);
    expect((await refer(p.key, erased.referral_code, (await enrol(p.key)).id)).status).toBe(404);
    expect((await app.http('GET', `/v1/members/${erased.id}/referral`, { key: p.key })).status).toBe(404);
    // an erased friend cannot be referred either
    const gone = await enrol(p.key);
    await app.http('DELETE', `/v1/members/${gone.id}`, { key: p.key });
    expect((await refer(p.key, advocate.referral_code, gone.id)).status).toBe(404);

    const twin = await enrol(p.key, { email: `${advocate.email.split('@')[0].toUpperCase()}+x@example.com` });
    const held = await refer(p.key, advocate.referral_code, twin.id);
    expect(held.body.data).toMatchObject({ status: 'held', hold_reasons: ['same_email'] });
    const approved = await app.admin('POST', `/admin/v1/referrals/${held.body.data.id}/approve`);
    expect(approved.status).toBe(200);
    expect(approved.body.data.status).toBe('pending');
    // the friend's order after the approval qualifies it as usual
    await orderPaid(p.key, { order_ref: 'TWIN-1', gross_cents: 7_000, email: twin.email });
    await eventually(async () => expect((await referral(p.key, held.body.data.id)).status).toBe('rewarded'), { timeoutMs: 20_000, intervalMs: 50 });
  });

  it('holds referrals beyond the daily limit; rejecting one is final; the limit counts by the programme clock', async () => {
    const p = await programme({ settings: { referral_daily_limit: 2 } });
    const advocate = await enrol(p.testKey);
    const statuses: string[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const friend = await enrol(p.testKey);
      const r = await refer(p.testKey, advocate.referral_code, friend.id);
      expect(r.status).toBe(201);
      statuses.push(r.body.data.status);
      ids.push(r.body.data.id);
    }
    expect(statuses).toEqual(['pending', 'pending', 'held']);
    expect((await referral(p.testKey, ids[2])).hold_reasons).toEqual(['daily_limit']);

    const rejected = await app.admin('POST', `/admin/v1/referrals/${ids[2]}/reject`);
    expect(rejected.status).toBe(200);
    expect(rejected.body.data.status).toBe('rejected');
    expect((await app.admin('POST', `/admin/v1/referrals/${ids[2]}/reject`)).status).toBe(200);
    expect((await app.admin('POST', `/admin/v1/referrals/${ids[2]}/approve`)).status).toBe(409);
    expect((await app.admin('POST', `/admin/v1/referrals/${ids[0]}/reject`)).status).toBe(409);
    expect((await details(p.testKey, advocate.id)).stats).toEqual({ pending: 2, qualified: 0, rewarded: 0 });

    // a day later on the sandbox clock the advocate may refer again
    expect((await app.admin('POST', `/admin/v1/programs/${p.id}/test-clock/advance`, { seconds: 86_401 })).status).toBe(200);
    const later = await refer(p.testKey, advocate.referral_code, (await enrol(p.testKey)).id);
    expect(later.body.data.status).toBe('pending');
  });

  it('refers one friend once, whatever the concurrency: one 201, the rest 409', async () => {
    const p = await programme();
    const advocates = await Promise.all(Array.from({ length: 6 }, () => enrol(p.key)));
    const friend = await enrol(p.key);
    const results = await Promise.all(advocates.map((a) => refer(p.key, a.referral_code, friend.id)));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
  });

  it('rebuilds its read models from the event store to the same rows', async () => {
    const db = new Client({ connectionString: app.databaseUrl });
    await db.connect();
    try {
      const tables = ['referral.codes', 'referral.paid_orders', 'referral.referrals'];
      const snapshot = async () => {
        const out: Record<string, string[]> = {};
        for (const t of tables) out[t] = (await db.query<{ j: string }>(`select row_to_json(x)::text as j from ${t} x`)).rows.map((r) => r.j).sort();
        return out;
      };
      // the runner has applied everything (its checkpoint is at the head)
      await eventually(async () => {
        const head = await db.query<{ c: string; p: string }>('select transaction_id::text as c, global_position::text as p from es.events order by transaction_id desc, global_position desc limit 1');
        const cp = await db.query<{ c: string; p: string }>(`select commit_pos as c, prepare_pos as p from es.checkpoints where name = 'referral.read-models'`);
        expect(cp.rows[0]).toEqual(head.rows[0]);
      }, { timeoutMs: 15_000 });
      const before = await snapshot();
      expect(before['referral.referrals'].length).toBeGreaterThan(10);
      expect(before['referral.referrals'].some((r) => r.includes('"rewarded"'))).toBe(true);
      expect(before['referral.paid_orders'].length).toBeGreaterThan(3);
      for (const t of tables) await db.query(`delete from ${t} where ctid in (select ctid from ${t} limit 2)`);
      await db.query(`update referral.referrals set status = 'pending'`);
      const results = await rebuildProjections({ databaseUrl: app.databaseUrl, names: ['referral.read-models'] });
      expect(results.map((r) => r.name)).toEqual(['referral.read-models']);
      expect(await snapshot()).toEqual(before);
    } finally {
      await db.end();
    }
  });
});
