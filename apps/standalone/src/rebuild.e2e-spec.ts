import { Client } from 'pg';
import { eventually } from '@loyalty/testing';
import { createPool } from '@loyalty/platform';
import { PostgresEventStore } from '@loyalty/event-store';
import { allProjections, rebuildProjections } from '@loyalty/rebuild';
import { memberStreamId } from '@loyalty/contracts';
import { MemberEvent, memberEvolver } from '@loyalty/domain-member';
import { TestApp, startTestApp } from './testing/harness';

const DAY = 86_400;
const fast = { burst: 10_000, per_second: 10_000 };

type Snapshot = Record<string, string[]>;

/**
 * A table's rows as sorted JSON, without the columns a replay cannot reproduce: serial sequence
 * numbers (`seq`, nextval defaults) and write-time bookkeeping (`updated_at` defaulting to now()).
 */
const snapshotTable = async (db: Client, table: string): Promise<string[]> => {
  const [schema, name] = table.split('.');
  const cols = await db.query<{ column_name: string; column_default: string | null }>(
    `select column_name, column_default from information_schema.columns where table_schema = $1 and table_name = $2 order by ordinal_position`, [schema, name]);
  const kept = cols.rows
    .filter((c) => !(c.column_default ?? '').startsWith('nextval(') && c.column_name !== 'seq')
    .filter((c) => !(c.column_name === 'updated_at' && /now\(\)|clock_timestamp/.test(c.column_default ?? '')))
    .map((c) => `"${c.column_name}"`);
  expect(kept.length).toBeGreaterThan(0);
  const { rows } = await db.query<{ j: string }>(`select json_build_array(${kept.join(', ')})::text as j from ${schema}."${name}"`);
  return rows.map((r) => r.j).sort();
};

describe('rebuild: every read model dropped and rebuilt from the event store equals the live one', () => {
  let app: TestApp;
  let db: Client;
  let tables: string[];
  let names: string[];

  beforeAll(async () => {
    app = await startTestApp({ sweepIntervalMs: 0 });
    db = new Client({ connectionString: app.databaseUrl });
    await db.connect();
    const pool = createPool(app.databaseUrl, 2);
    const projections = allProjections({ pool, store: new PostgresEventStore(pool), config: {} as never });
    names = projections.map((p) => p.name);
    tables = projections.flatMap((p) => p.tables);
    await pool.end();
  });
  afterAll(async () => {
    await db?.end();
    await app?.close();
  });

  const snapshot = async (): Promise<Snapshot> => {
    const out: Snapshot = {};
    for (const t of tables) out[t] = await snapshotTable(db, t);
    return out;
  };

  /** Waits until every projection's checkpoint has reached the newest event. */
  const settled = () => eventually(async () => {
    const head = await db.query<{ c: string; p: string }>(
      `select transaction_id::text as c, global_position::text as p from es.events order by transaction_id desc, global_position desc limit 1`);
    const cps = await db.query<{ name: string; commit_pos: string; prepare_pos: string }>('select name, commit_pos, prepare_pos from es.checkpoints where name = any($1)', [names]);
    const running = names.filter((n) => cps.rows.some((r) => r.name === n));
    expect(running.length).toBeGreaterThan(0);
    for (const r of cps.rows) expect([r.name, r.commit_pos, r.prepare_pos]).toEqual([r.name, head.rows[0].c, head.rows[0].p]);
  }, { timeoutMs: 15_000 });

  const send = async (key: string, event: Record<string, unknown>) => {
    const sent = await app.http('POST', '/v1/events', { key, body: event });
    expect(sent.status).toBe(202);
    await eventually(async () => {
      const s = (await app.http('GET', `/v1/events/${sent.body.data.id}`, { key })).body.data;
      expect(['completed', 'failed']).toContain(s.status);
    }, { timeoutMs: 15_000 });
  };

  it('builds a realistic history, rebuilds every projection, and gets the same rows back', async () => {
    const p = await app.createProgram({
      settings: { expiry: { policy: 'fixed_days', days: 40 } },
      rules: [
        { type: 'base', earn_rate_pct: 10, timing: 'immediate' },
        { type: 'category_boost', earn_rate_pct: 5, timing: 'return_window', tags: ['shoes'] },
      ],
      tiers: [{ name: 'Silver', level: 1, threshold_type: 'spend', threshold_value: 30_000, window: 'rolling_365', earn_multiplier: 1.5 }],
    });
    const keys: string[] = [];
    for (const mode of ['live', 'test'] as const) {
      const k = await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode, scopes: ['ingest', 'read', 'act', 'webhooks'], rate_limit: fast });
      keys.push(k.body.data.key);
    }
    for (const [i, key] of keys.entries()) {
      const ids: string[] = [];
      for (const n of [1, 2, 3, 4]) {
        const r = await app.http('POST', '/v1/members', { key, body: { email: `m${n}@example.com`, phone: `+1415555010${n}`, external_ref: `c-${n}` } });
        expect(r.status).toBe(201);
        ids.push(r.body.data.id);
      }
      // a prospect seen only on an order, and one by resolve
      await app.http('POST', '/v1/members/resolve', { key, body: { phone: '+14155550199' } });
      const lines = [{ amount_cents: 20_000, tags: ['shoes'] }, { amount_cents: 15_000 }];
      await send(key, { type: 'order.paid', order_ref: `O-${i}-1`, gross_cents: 35_000, email: 'm1@example.com', lines });
      await send(key, { type: 'order.fulfilled', order_ref: `O-${i}-1`, gross_cents: 35_000 });
      await send(key, { type: 'order.refunded', order_ref: `O-${i}-1`, refund_ref: 'R1', refunded_cents: 5_000 });
      await send(key, { type: 'order.paid', order_ref: `O-${i}-2`, gross_cents: 12_000, customer_ref: 'c-2' });
      await send(key, { type: 'order.cancelled', order_ref: `O-${i}-2` });
      await send(key, { type: 'order.paid', order_ref: `O-${i}-3`, gross_cents: 8_000, email: 'walk-in@example.com' });
      await app.http('POST', `/v1/members/${ids[2]}/adjust`, { key, body: { amount_cents: 2_000, reason_code: 'goodwill' } });
      await app.http('POST', `/v1/members/${ids[2]}/adjust`, { key, body: { amount_cents: -500, reason_code: 'correction' } });
      // redemptions: a voucher voided, a direct one, a reservation confirmed and one released
      const v = await app.http('POST', `/v1/members/${ids[2]}/redemptions`, { key, body: { amount_cents: 300 } });
      if (v.status === 201) await app.http('POST', `/v1/redemptions/${v.body.data.id}/void`, { key });
      await app.http('POST', `/v1/members/${ids[0]}/redemptions`, { key, body: { amount_cents: 200, mode: 'direct', order_ref: `POS-${i}` } });
      const rs = await app.http('POST', '/v1/redemption-reservations', { key, body: { member_id: ids[2], amount_cents: 100, cart_ref: 'cart-1', eligible_total_cents: 10_000 } });
      if (rs.status === 201) await app.http('POST', `/v1/redemption-reservations/${rs.body.data.id}/confirm`, { key, body: { order_ref: `CART-${i}` } });
      const rs2 = await app.http('POST', '/v1/redemption-reservations', { key, body: { member_id: ids[2], amount_cents: 50, cart_ref: 'cart-2', eligible_total_cents: 10_000 } });
      if (rs2.status === 201) await app.http('POST', `/v1/redemption-reservations/${rs2.body.data.id}/release`, { key });
      // a migration batch, one reversed
      const mode = i === 0 ? 'live' : 'test';
      const kept = await app.admin('POST', `/admin/v1/programs/${p.programId}/migrations`, { mode, entries: [{ email: 'm4@example.com', amount_cents: 4_000 }, { email: 'legacy@example.com', amount_cents: 900 }] });
      expect(kept.status).toBe(201);
      const undone = await app.admin('POST', `/admin/v1/programs/${p.programId}/migrations`, { mode, entries: [{ email: 'm3@example.com', amount_cents: 700 }] });
      expect((await app.admin('DELETE', `/admin/v1/migrations/${undone.body.data.batch_id}`)).status).toBe(200);
      // an erased member
      expect((await app.http('DELETE', `/v1/members/${ids[3]}`, { key })).status).toBe(200);
    }
    // time passes in the sandbox: releases, expiries and tier reviews
    await app.admin('POST', `/admin/v1/programs/${p.programId}/test-clock/advance`, { seconds: 31 * DAY });
    await app.admin('POST', `/admin/v1/programs/${p.programId}/test-clock/advance`, { seconds: 400 * DAY });
    // issue 13: a refund more than a year later, once the member's state has let the order's settled earns go
    // (35 more events make it compact): the take-backs carry the earns, the read models mark them reversed
    const sandbox = keys[1];
    const m1 = (await app.http('GET', '/v1/members?email=m1@example.com', { key: sandbox })).body.data[0];
    for (let n = 0; n < 35; n++) await app.http('POST', `/v1/members/${m1.id}/adjust`, { key: sandbox, body: { amount_cents: 1, reason_code: 'later' } });
    const stream = await db.query<{ type: string; data: { type?: string; order_ref?: string; id: string } }>(
      'select type, data from es.events where stream_id = $1 order by stream_revision', [memberStreamId(`${p.programId}_test`, m1.id)]);
    const folded = stream.rows.reduce((st, e) => memberEvolver.evolve(st, e as MemberEvent), memberEvolver.initialState());
    const earns = stream.rows.filter((e) => e.type === 'EntryRecorded' && e.data.type === 'earn' && e.data.order_ref === 'O-1-1').map((e) => e.data.id);
    expect(earns).toHaveLength(2);
    for (const id of earns) expect(folded.entries.has(id)).toBe(false);
    await send(sandbox, { type: 'order.refunded', order_ref: 'O-1-1', refund_ref: 'R2', refunded_cents: 30_000 });
    const carried = await db.query(`select 1 from es.events where type = 'EntryRecorded' and data::jsonb ? 'parent_earn' and data->>'order_ref' = 'O-1-1' and data->>'cause' like 'refund:O-1-1:R2:%'`);
    expect(carried.rowCount).toBeGreaterThan(0);
    await settled();

    const before = await snapshot();
    // the history holds every kind of movement, including the sweep's releases, expiries and tier changes
    const kinds = await db.query<{ k: string }>(
      `select distinct case when type = 'EntryRecorded' then 'entry:' || (data->>'type') else type end as k from es.events`);
    expect(kinds.rows.map((r) => r.k)).toEqual(expect.arrayContaining([
      'entry:earn', 'entry:redeem', 'entry:reverse', 'entry:adjust', 'entry:expire', 'EntryReleased', 'TierChanged', 'MemberErased', 'VoucherRestored', 'ReservationReleased',
    ]));
    const count = (t: string) => before[t]?.length ?? 0;
    expect(count('ledger.members')).toBeGreaterThanOrEqual(12);
    expect(count('ledger.due_items')).toBeGreaterThan(0);
    expect(count('ledger.migration_entries')).toBe(6);
    expect(before['ledger.migration_entries'].filter((r) => !r.endsWith('null]'))).toHaveLength(2);

    // damage the read models, then rebuild them all from the event store
    for (const t of tables) await db.query(`delete from ${t} where ctid in (select ctid from ${t} limit 1)`);
    await db.query('update ledger.members set available_cents = available_cents + 1');
    const results = await rebuildProjections({ databaseUrl: app.databaseUrl });
    expect(results.map((r) => r.name).sort()).toEqual([...names].sort());
    const after = await snapshot();
    for (const t of tables) expect({ table: t, rows: after[t] }).toEqual({ table: t, rows: before[t] });

    // the running service carries on over the rebuilt tables
    const key = keys[0];
    const m = (await app.http('GET', '/v1/members?email=m3@example.com', { key })).body.data[0];
    const adj = await app.http('POST', `/v1/members/${m.id}/adjust`, { key, body: { amount_cents: 10, reason_code: 'after-rebuild' } });
    expect(adj.status).toBe(201);
    const listed = (await app.http('GET', '/v1/members?email=m3@example.com', { key })).body.data[0];
    expect(listed.balances.available_cents).toBe(m.balances.available_cents + 10);
  });

  it('rebuilds only the projections named, and refuses an unknown name', async () => {
    await db.query(`delete from ledger.due_items`);
    const other = await snapshotTable(db, 'ledger.members');
    await db.query('update ledger.members set pending_cents = pending_cents + 5');
    await rebuildProjections({ databaseUrl: app.databaseUrl, names: ['ledger.due_items'] });
    expect((await snapshotTable(db, 'ledger.due_items')).length).toBeGreaterThan(0);
    expect(await snapshotTable(db, 'ledger.members')).not.toEqual(other);
    await rebuildProjections({ databaseUrl: app.databaseUrl, names: ['ledger.members'] });
    expect(await snapshotTable(db, 'ledger.members')).toEqual(other);
    await expect(rebuildProjections({ databaseUrl: app.databaseUrl, names: ['ledger.nope'] })).rejects.toThrow(/unknown projection ledger.nope/);
  });
});
