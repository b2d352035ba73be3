import { Client } from 'pg';
import { eventually } from '@loyalty/testing';
import { TestApp, startTestApp } from './testing/harness';

const DAY = 86_400;
const fast = { burst: 10_000, per_second: 10_000 };

/**
 * Time-based and programme-level behaviour through HTTP: the sandbox test clock drives releases,
 * expiries and tier windows; migrations import and reverse; the sandbox wipe.
 */
describe('time, tiers, migrations and sandbox wipe over HTTP (standalone)', () => {
  let app: TestApp;

  beforeAll(async () => {
    // no periodic sweeper: every effect below must come from the test clock's own sweep
    app = await startTestApp({ sweepIntervalMs: 0 });
  });
  afterAll(async () => app?.close());

  /** A programme and a fast sandbox (or live) key with every scope. */
  const programme = async (body: Record<string, unknown>, mode: 'test' | 'live' = 'test') => {
    const p = await app.createProgram(body);
    const k = await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode, scopes: ['ingest', 'read', 'act', 'webhooks'], rate_limit: fast });
    expect(k.status).toBe(201);
    return { ...p, key: k.body.data.key as string };
  };

  const advance = async (pid: string, seconds: number) => {
    const r = await app.admin('POST', `/admin/v1/programs/${pid}/test-clock/advance`, { seconds });
    expect(r.status).toBe(200);
    return r.body.data as { now: string };
  };

  /** Sends a commerce event and waits until it is processed. */
  const send = async (key: string, event: Record<string, unknown>) => {
    const sent = await app.http('POST', '/v1/events', { key, body: event });
    expect(sent.status).toBe(202);
    return eventually(async () => {
      const s = (await app.http('GET', `/v1/events/${sent.body.data.id}`, { key })).body.data;
      expect(s.status).toBe('completed');
      return s;
    }, { timeoutMs: 15_000 });
  };

  const member = async (key: string, id: string) => {
    const r = await app.http('GET', `/v1/members/${id}`, { key });
    expect(r.status).toBe(200);
    return r.body.data;
  };
  const ledger = async (key: string, id: string) => {
    const r = await app.http('GET', `/v1/members/${id}/ledger?limit=200`, { key });
    expect(r.status).toBe(200);
    return r.body.data as any[];
  };
  const enrol = async (key: string, email: string) => {
    const r = await app.http('POST', '/v1/members', { key, body: { email } });
    expect(r.status).toBe(201);
    return r.body.data.id as string;
  };

  it('return_window: earns stay pending until fulfilment + 30 days, then the test clock releases them', async () => {
    const p = await programme({ rules: [{ type: 'base', earn_rate_pct: 10, timing: 'return_window' }] });
    const id = await enrol(p.key, 'rw@example.com');
    await send(p.key, { type: 'order.paid', order_ref: 'RW-1', gross_cents: 10_000, email: 'rw@example.com' });
    await send(p.key, { type: 'order.fulfilled', order_ref: 'RW-1', gross_cents: 10_000 });
    let m = await member(p.key, id);
    expect(m.balances).toMatchObject({ pending_cents: 1000, available_cents: 0 });
    const [earn] = await ledger(p.key, id);
    expect(earn).toMatchObject({ type: 'earn', status: 'pending', amount_cents: 1000 });
    expect(Date.parse(earn.release_at) - Date.parse(earn.created_at)).toBeGreaterThanOrEqual(30 * DAY * 1000 - 60_000);

    await advance(p.programId, 29 * DAY);
    m = await member(p.key, id);
    expect(m.balances).toMatchObject({ pending_cents: 1000, available_cents: 0 });

    await advance(p.programId, DAY + 60);
    m = await member(p.key, id);
    expect(m.balances).toMatchObject({ pending_cents: 0, available_cents: 1000, spendable_cents: 1000, lifetime_earned_cents: 1000 });
    expect(m.state).toBe('active');
    expect((await ledger(p.key, id))[0]).toMatchObject({ id: earn.id, status: 'posted' });
    // the live programme's clock never moved
    const live = await app.http('POST', '/v1/members', { key: p.liveKey, body: { email: 'rw@example.com' } });
    expect(Date.parse(live.body.data.created_at)).toBeLessThan(Date.now() + 60_000);
  });

  it('fixed_days: spending takes the oldest lot first; each lot expires with its remainder; expiring_30d_cents warns before', async () => {
    const p = await programme({ settings: { expiry: { policy: 'fixed_days', days: 60 } }, rules: [{ type: 'base', earn_rate_pct: 10, timing: 'immediate' }] });
    const id = await enrol(p.key, 'fifo@example.com');
    await send(p.key, { type: 'order.paid', order_ref: 'FX-1', gross_cents: 10_000, email: 'fifo@example.com' }); // 1000, day 0
    await advance(p.programId, 10 * DAY);
    const adj = await app.http('POST', `/v1/members/${id}/adjust`, { key: p.key, body: { amount_cents: 500, reason_code: 'goodwill' } }); // day 10
    expect(adj.status).toBe(201);
    // a spend of 300 comes out of the day-0 lot
    const spend = await app.http('POST', `/v1/members/${id}/adjust`, { key: p.key, body: { amount_cents: -300, reason_code: 'correction' } });
    expect(spend.status).toBe(201);
    let entries = await ledger(p.key, id);
    const [earn, credit] = entries;
    expect(Date.parse(earn.expires_at) - Date.parse(earn.created_at)).toBe(60 * DAY * 1000);
    expect(credit).toMatchObject({ type: 'adjust', amount_cents: 500 });
    expect(Date.parse(credit.expires_at) - Date.parse(credit.created_at)).toBe(60 * DAY * 1000);
    expect(entries[2].expires_at).toBeNull();

    let m = await member(p.key, id);
    expect(m.balances.available_cents).toBe(1200);
    expect(m.expiring_30d_cents).toBe(0);
    await advance(p.programId, 25 * DAY); // day 35: the first lot (day 60) is within 30 days, the second (day 70) is not
    m = await member(p.key, id);
    expect(m.expiring_30d_cents).toBe(700);

    await advance(p.programId, 25 * DAY + 60); // day 60: the first lot expires with what is left of it
    m = await member(p.key, id);
    expect(m.balances.available_cents).toBe(500);
    expect(m.expiring_30d_cents).toBe(500);
    entries = await ledger(p.key, id);
    expect(entries).toHaveLength(4);
    expect(entries[3]).toMatchObject({ type: 'expire', status: 'posted', amount_cents: -700, parent_entry_id: earn.id, reason_code: 'expiry' });

    await advance(p.programId, 10 * DAY);
    m = await member(p.key, id);
    expect(m.balances).toMatchObject({ available_cents: 0, lifetime_earned_cents: 1500 });
    expect(m.expiring_30d_cents).toBe(0);
    entries = await ledger(p.key, id);
    expect(entries.slice(4)).toEqual([expect.objectContaining({ type: 'expire', amount_cents: -500, parent_entry_id: credit.id })]);
    // sweeping again finds nothing more to do
    await advance(p.programId, DAY);
    expect(await ledger(p.key, id)).toHaveLength(5);
  });

  it('inactivity: everything left expires once the member has been inactive for `days`', async () => {
    const p = await programme({ settings: { expiry: { policy: 'inactivity', days: 90 } } });
    const id = await enrol(p.key, 'idle@example.com');
    expect((await app.http('POST', `/v1/members/${id}/adjust`, { key: p.key, body: { amount_cents: 800, reason_code: 'welcome' } })).status).toBe(201);
    await advance(p.programId, 70 * DAY);
    expect((await member(p.key, id)).expiring_30d_cents).toBe(800);
    await advance(p.programId, 19 * DAY);
    expect((await member(p.key, id)).balances.available_cents).toBe(800);
    await advance(p.programId, DAY + 60);
    expect((await member(p.key, id)).balances.available_cents).toBe(0);
    expect((await ledger(p.key, id)).at(-1)).toMatchObject({ type: 'expire', amount_cents: -800, reason_code: 'inactivity' });
  });

  it('tiers: the crossing order earns at the old rate and upgrades at once; the rolling window downgrades later', async () => {
    const p = await programme({
      rules: [{ type: 'base', earn_rate_pct: 10, timing: 'immediate' }],
      tiers: [{ name: 'Gold', level: 1, threshold_type: 'spend', threshold_value: 50_000, window: 'rolling_365', earn_multiplier: 2, benefits: { free_shipping: true } }],
    });
    const id = await enrol(p.key, 'tier@example.com');
    await send(p.key, { type: 'order.paid', order_ref: 'T-1', gross_cents: 40_000, email: 'tier@example.com' });
    expect((await member(p.key, id)).tier).toBeNull();
    await send(p.key, { type: 'order.paid', order_ref: 'T-2', gross_cents: 10_000, email: 'tier@example.com' });
    let m = await member(p.key, id);
    expect(m.tier).toEqual({ name: 'Gold', level: 1, earn_multiplier: 2, benefits: { free_shipping: true } });
    await send(p.key, { type: 'order.paid', order_ref: 'T-3', gross_cents: 10_000, email: 'tier@example.com' });
    expect((await ledger(p.key, id)).map((e) => e.amount_cents)).toEqual([4000, 1000, 2000]);

    await advance(p.programId, 200 * DAY);
    await send(p.key, { type: 'order.paid', order_ref: 'T-4', gross_cents: 20_000, email: 'tier@example.com' });
    await advance(p.programId, 160 * DAY); // day 360: all four orders are in the window
    expect((await member(p.key, id)).tier?.name).toBe('Gold');
    await advance(p.programId, 6 * DAY); // day 366: only the day-200 order (20 000) is left
    m = await member(p.key, id);
    expect(m.tier).toBeNull();
    expect(m.balances.available_cents).toBe(4000 + 1000 + 2000 + 4000);
  });

  it('migration import: one adjust entry per member, new customers enrolled, 422 with entry paths, idempotent by key, reversible as a batch', async () => {
    const p = await programme({ settings: { expiry: { policy: 'fixed_days', days: 365 } } }, 'live');
    const existing = await enrol(p.key, 'old@example.com');
    expect((await app.http('POST', `/v1/members/${existing}/adjust`, { key: p.key, body: { amount_cents: 500, reason_code: 'goodwill' } })).status).toBe(201);
    const future = new Date(Date.now() + 90 * DAY * 1000).toISOString();

    const bad = await app.admin('POST', `/admin/v1/programs/${p.programId}/migrations`, {
      mode: 'live',
      entries: [
        { email: 'a@example.com', amount_cents: 1 }, { email: 'b@example.com', amount_cents: 2 }, { email: 'c@example.com', amount_cents: 3 },
        { email: 'd@example.com', amount_cents: 0 },
      ],
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual([{ path: '/entries/3/amount_cents', message: expect.any(String) }]);
    const dup = await app.admin('POST', `/admin/v1/programs/${p.programId}/migrations`, {
      entries: [{ email: 'x@example.com', amount_cents: 1 }, { email: 'X@example.com', amount_cents: 2, expires_at: '2001-01-01T00:00:00Z' }],
    });
    expect(dup.status).toBe(422);
    expect(dup.body.errors.map((e: { path: string }) => e.path)).toEqual(['/entries/1/email', '/entries/1/expires_at']);
    expect((await app.http('GET', '/v1/members?email=a@example.com', { key: p.key })).body.data).toEqual([]);

    const body = {
      mode: 'live',
      entries: [
        { email: 'old@example.com', amount_cents: 1000 },
        { email: 'New@Example.com', phone: '+14155550123', external_ref: 'legacy-7', amount_cents: 2500, expires_at: future },
      ],
    };
    const imported = await app.http('POST', `/admin/v1/programs/${p.programId}/migrations`, { key: app.adminToken, body, headers: { 'Idempotency-Key': 'import-1' } });
    expect(imported.status).toBe(201);
    expect(imported.body.data).toEqual({ batch_id: expect.stringMatching(/^MB-[0-9A-Z]{26}$/), imported: 2, members_created: 1 });
    const batch = imported.body.data.batch_id;

    expect((await member(p.key, existing)).balances.available_cents).toBe(1500);
    const created = await member(p.key, 'ref:legacy-7');
    expect(created).toMatchObject({ email: 'new@example.com', phone: '+14155550123', state: 'registered', balances: { available_cents: 2500 } });
    const [migrated] = await ledger(p.key, created.id);
    expect(migrated).toMatchObject({ type: 'adjust', reason_code: 'migration', amount_cents: 2500, status: 'posted', expires_at: future });
    const oldEntries = await ledger(p.key, existing);
    expect(oldEntries[1]).toMatchObject({ reason_code: 'migration', amount_cents: 1000 });
    expect(Date.parse(oldEntries[1].expires_at) - Date.parse(oldEntries[1].created_at)).toBe(365 * DAY * 1000);

    // a retry with the same key lands in the same batch and credits nothing twice
    const retry = await app.http('POST', `/admin/v1/programs/${p.programId}/migrations`, { key: app.adminToken, body, headers: { 'Idempotency-Key': 'import-1' } });
    expect(retry.status).toBe(201);
    expect(retry.body.data.batch_id).toBe(batch);
    expect((await member(p.key, existing)).balances.available_cents).toBe(1500);
    expect(await ledger(p.key, created.id)).toHaveLength(1);

    // the member spends part of the migrated points before the batch is reversed: the balance goes negative
    expect((await app.http('POST', `/v1/members/${created.id}/adjust`, { key: p.key, body: { amount_cents: -1000, reason_code: 'spent' } })).status).toBe(201);
    const reversed = await app.admin('DELETE', `/admin/v1/migrations/${batch}`);
    expect(reversed.status).toBe(200);
    expect(reversed.body.data).toMatchObject({ batch_id: batch, reversed: 2 });
    expect((await member(p.key, existing)).balances.available_cents).toBe(500);
    expect((await member(p.key, created.id)).balances).toMatchObject({ available_cents: -1000, lifetime_earned_cents: 0 });
    const after = await ledger(p.key, created.id);
    expect(after[0].status).toBe('reversed');
    expect(after.at(-1)).toMatchObject({ type: 'reverse', amount_cents: -2500, parent_entry_id: migrated.id });
    // reversing again changes nothing; an unknown batch is a 404
    expect((await app.admin('DELETE', `/admin/v1/migrations/${batch}`)).status).toBe(200);
    expect(await ledger(p.key, created.id)).toHaveLength(after.length);
    expect((await app.admin('DELETE', '/admin/v1/migrations/MB-00000000000000000000000000')).status).toBe(404);
    expect((await app.admin('POST', '/admin/v1/programs/P-00000000000000000000000000/migrations', body)).status).toBe(404);
  });

  it('migration: no second signup bonus for migrated customers; an enrolled member keeps its profile', async () => {
    const p = await programme({ rules: [{ type: 'signup_bonus', amount_cents: 100, timing: 'immediate' }] }, 'live');
    const r = await app.http('POST', '/v1/members', { key: p.key, body: { email: 'kept@example.com', phone: '+14155550161' } });
    expect(r.body.data.balances.available_cents).toBe(100);
    const imported = await app.admin('POST', `/admin/v1/programs/${p.programId}/migrations`, {
      entries: [{ email: 'kept@example.com', phone: '+14155550162', amount_cents: 50 }, { email: 'fresh@example.com', amount_cents: 70 }],
    });
    expect(imported.status).toBe(201);
    expect(imported.body.data).toMatchObject({ imported: 2, members_created: 1 });
    expect(await member(p.key, r.body.data.id)).toMatchObject({ phone: '+14155550161', balances: { available_cents: 150 } });
    const fresh = (await app.http('GET', '/v1/members?email=fresh@example.com', { key: p.key })).body.data[0];
    expect(fresh).toMatchObject({ state: 'registered', balances: { available_cents: 70 } });
    expect(await ledger(p.key, fresh.id)).toHaveLength(1);
    // a phone that belongs to someone else refuses the entry that would enrol with it
    const clash = await app.admin('POST', `/admin/v1/programs/${p.programId}/migrations`, { entries: [{ email: 'third@example.com', phone: '+14155550161', amount_cents: 5 }] });
    expect(clash.status).toBe(422);
    expect(clash.body.errors).toEqual([{ path: '/entries/0/phone', message: expect.any(String) }]);
    const mode = await app.admin('POST', `/admin/v1/programs/${p.programId}/migrations`, { mode: 'staging', entries: [{ email: 'x@example.com', amount_cents: 5 }] });
    expect(mode.status).toBe(422);
    expect(mode.body.errors.map((e: { path: string }) => e.path)).toEqual(['/mode']);
  });

  it('sandbox wipe: deletes the sandbox partition everywhere and leaves the live programme alone', async () => {
    const p = await programme({ rules: [{ type: 'base', earn_rate_pct: 10, timing: 'immediate' }] });
    const liveKey = p.liveKey;
    const liveMember = await enrol(liveKey, 'both@example.com');
    await app.http('POST', `/v1/members/${liveMember}/adjust`, { key: liveKey, body: { amount_cents: 700, reason_code: 'goodwill' } });
    const sandboxMember = await enrol(p.key, 'both@example.com');
    await send(p.key, { type: 'order.paid', order_ref: 'W-1', gross_cents: 5000, email: 'both@example.com' });
    await app.admin('POST', `/admin/v1/programs/${p.programId}/migrations`, { mode: 'test', entries: [{ email: 'mig@example.com', amount_cents: 100 }] });
    await advance(p.programId, 10 * DAY);

    const wiped = await app.admin('POST', `/admin/v1/programs/${p.programId}/sandbox/wipe`);
    expect(wiped.status).toBe(200);
    expect(wiped.body.data).toMatchObject({ wiped: true });

    expect((await app.http('GET', `/v1/members/${sandboxMember}`, { key: p.key })).status).toBe(404);
    expect((await app.http('GET', '/v1/members', { key: p.key })).body.data).toEqual([]);
    expect((await app.http('GET', '/v1/events', { key: p.key })).body.data).toEqual([]);
    expect((await app.http('GET', '/v1/tenant/liability', { key: p.key })).body.data).toMatchObject({ members: 0, outstanding_cents: 0 });
    // the live programme is untouched
    const live = await member(liveKey, liveMember);
    expect(live.balances.available_cents).toBe(700);
    expect((await app.http('GET', '/v1/members', { key: liveKey })).body.data).toHaveLength(1);
    // the test clock is back to real time
    const clock = await advance(p.programId, 1);
    expect(Math.abs(Date.parse(clock.now) - Date.now())).toBeLessThan(60_000);
    // nothing of the sandbox is left in any table or stream; the live rows are
    const db = new Client({ connectionString: app.databaseUrl });
    await db.connect();
    try {
      const tables = await db.query<{ s: string; t: string }>(
        `select table_schema as s, table_name as t from information_schema.columns where column_name = 'tenant' and table_schema not in ('pg_catalog','information_schema')`);
      for (const { s, t } of tables.rows) {
        const n = await db.query(`select count(*)::int as n from "${s}"."${t}" where tenant = $1`, [`${p.programId}_test`]);
        expect({ table: `${s}.${t}`, n: n.rows[0].n }).toEqual({ table: `${s}.${t}`, n: 0 });
      }
      const streams = await db.query<{ sandbox: number; live: number }>(
        `select count(*) filter (where stream_id like '%' || $1 || '\\_test%')::int as sandbox,
                count(*) filter (where stream_id like '%-' || $1 || '-%')::int as live from es.events`, [p.programId]);
      expect(streams.rows[0].sandbox).toBe(0);
      expect(streams.rows[0].live).toBeGreaterThan(0);
    } finally {
      await db.end();
    }
    // the sandbox works again at once, with the same key
    const again = await app.http('POST', '/v1/members', { key: p.key, body: { email: 'both@example.com' } });
    expect(again.status).toBe(201);
    expect(again.body.data.id).not.toBe(sandboxMember);
    expect(again.body.data.balances.available_cents).toBe(0);
    // only the sandbox can be wiped through this route; an unknown programme is a 404
    expect((await app.admin('POST', '/admin/v1/programs/P-00000000000000000000000000/sandbox/wipe')).status).toBe(404);
  });
});

describe('the periodic sweeper (standalone)', () => {
  let app: TestApp;
  beforeAll(async () => { app = await startTestApp({ sweepIntervalMs: 200 }); });
  afterAll(async () => app?.close());

  it('expires a live lot on real time without anyone asking', async () => {
    const p = await app.createProgram();
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const r = await app.admin('POST', `/admin/v1/programs/${p.programId}/migrations`, { mode: 'live', entries: [{ email: 'soon@example.com', amount_cents: 300, expires_at: expiresAt }] });
    expect(r.status).toBe(201);
    const m = (await app.http('GET', '/v1/members?email=soon@example.com', { key: p.liveKey })).body.data[0];
    expect(m.balances.available_cents).toBe(300);
    expect(m.expiring_30d_cents).toBe(300);
    await eventually(async () => {
      const now = (await app.http('GET', `/v1/members/${m.id}`, { key: p.liveKey })).body.data;
      expect(now.balances.available_cents).toBe(0);
    }, { timeoutMs: 10_000, intervalMs: 200 });
    const entries = (await app.http('GET', `/v1/members/${m.id}/ledger`, { key: p.liveKey })).body.data;
    expect(entries.map((e: { type: string; amount_cents: number }) => [e.type, e.amount_cents])).toEqual([['adjust', 300], ['expire', -300]]);
  });
});
