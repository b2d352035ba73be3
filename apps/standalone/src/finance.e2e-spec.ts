import { run } from '@loyalty/admin-cli';
import { eventually } from '@loyalty/testing';
import { TestApp, startTestApp } from './testing/harness';
import { startDistributed } from './testing/distributed';

const DAY = 86_400;
const fast = { burst: 10_000, per_second: 10_000 };
const CSV_HEADER = 'id,member_id,type,status,amount_cents,currency,reason_code,rule,parent_entry_id,order_ref,created_at';

/** Splits RFC 4180 text into records (quoted fields may hold commas, quotes and line breaks). */
const parseCsv = (text: string): string[][] => {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false; else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; } else if (c === '\r' && text[i + 1] === '\n') { row.push(field); rows.push(row); row = []; field = ''; i++; } else field += c;
  }
  if (field || row.length) { row.push(field); rows.push(row); }
  return rows;
};

/**
 * Closing the books over HTTP (decisions §9a): a sandbox programme driven by its test clock, read
 * back as point-in-time liability, roll-forward and the period's journal (JSON pages and CSV),
 * with scopes, live/sandbox separation and validation errors; in both topologies.
 */
const financeScenarios = (name: string, boot: () => Promise<TestApp>) => {
  describe(`closing the books over HTTP (${name})`, () => {
    let app: TestApp;
    let p: { programId: string; liveKey: string; testKey: string };
    let key: string;
    let readOnly: string;
    let actOnly: string;
    const t: string[] = [];

    const advance = async (seconds: number) => {
      const r = await app.admin('POST', `/admin/v1/programs/${p.programId}/test-clock/advance`, { seconds });
      expect(r.status).toBe(200);
      return r.body.data.now as string;
    };
    const send = async (event: Record<string, unknown>) => {
      const sent = await app.http('POST', '/v1/events', { key, body: event });
      expect(sent.status).toBe(202);
      await eventually(async () => {
        expect((await app.http('GET', `/v1/events/${sent.body.data.id}`, { key })).body.data.status).toBe('completed');
      }, { timeoutMs: 20_000 });
    };
    const enrol = async (email: string) => {
      const r = await app.http('POST', '/v1/members', { key, body: { email } });
      expect(r.status).toBe(201);
      return r.body.data.id as string;
    };
    const adjust = async (id: string, amount_cents: number, reason_code: string) => {
      const r = await app.http('POST', `/v1/members/${id}/adjust`, { key, body: { amount_cents, reason_code } });
      expect(r.status).toBe(201);
    };
    const get = (path: string, k = key, headers?: Record<string, string>) => app.http('GET', path, { key: k, headers });

    beforeAll(async () => {
      app = await boot();
      p = await app.createProgram({
        settings: { expiry: { policy: 'fixed_days', days: 10 } },
        rules: [{ type: 'base', earn_rate_pct: 10, timing: 'paid' }, { id: 'ship', name: 'Shipped', type: 'category_boost', earn_rate_pct: 5, timing: 'fulfilled', tags: ['ship'] }],
      });
      const k = async (scopes: string[]) => (await app.admin('POST', `/admin/v1/programs/${p.programId}/keys`, { mode: 'test', scopes, rate_limit: fast })).body.data.key as string;
      key = await k(['ingest', 'read', 'act']);
      readOnly = await k(['read']);
      actOnly = await k(['act']);

      // day 0: two members; Ana earns 1 000 posted + 500 pending (released on fulfilment)
      t.push(await advance(60));
      const ana = await enrol('ana@example.com');
      const bob = await enrol('bob@example.com');
      await send({ type: 'order.paid', order_ref: 'A-1', gross_cents: 10_000, email: 'ana@example.com', lines: [{ amount_cents: 10_000, quantity: 1, gift_card: false, tags: ['ship'] }] });
      t.push(await advance(DAY));
      // day 1: fulfilment releases the 500; Bob gets a goodwill credit and a bigger correction (negative balance)
      await send({ type: 'order.fulfilled', order_ref: 'A-1', gross_cents: 10_000, email: 'ana@example.com' });
      await adjust(bob, 300, 'goodwill, "quoted"');
      await adjust(bob, -800, 'correction');
      t.push(await advance(DAY));
      // day 2: a partial refund takes 1/4 back
      await send({ type: 'order.refunded', order_ref: 'A-1', email: 'ana@example.com', refund_ref: 'R-1', refunded_cents: 2_500 });
      t.push(await advance(DAY));
      // day 3..: Ana's points expire on day 10 (fixed_days 10)
      await adjust(ana, 200, 'late');
      t.push(await advance(9 * DAY));
      t.push(await advance(60));
    }, 1_200_000); // distributed: may first wait (up to 15 min) for another topology on the broker to finish
    afterAll(async () => app?.close());

    it('as_of: the liability as it stood, with each entry\'s status then; without it today\'s cached figure; negative_balance_cents', async () => {
      const at = async (i: number) => {
        const r = await get(`/v1/tenant/liability?as_of=${encodeURIComponent(t[i])}`, readOnly);
        expect(r.status).toBe(200);
        return r.body.data;
      };
      // end of day 0: 1 000 available, 500 pending (not yet fulfilled), two members
      expect(await at(1)).toMatchObject({ as_of: new Date(t[1]).toISOString(), available_cents: 1_000, pending_cents: 500, outstanding_cents: 1_500, members: 2, negative_balance_cents: 0, lifetime_issued_cents: 1_000 });
      // day 1: released; Bob at −500
      expect(await at(2)).toMatchObject({ available_cents: 1_000, pending_cents: 0, outstanding_cents: 1_000, negative_balance_cents: 500, lifetime_issued_cents: 1_800 });
      // day 2: the partial refund took some of Ana's points back; Bob still owes 500
      const d2 = await at(3);
      expect(d2.outstanding_cents).toBeLessThan(1_000);
      expect(d2.negative_balance_cents).toBe(500);
      // today, cached: what the members read model says now (same figures as as_of now)
      const today = await get('/v1/tenant/liability', readOnly);
      expect(today.status).toBe(200);
      expect(today.headers.get('cache-control')).toBe('max-age=30');
      const now = await at(5);
      const { as_of: _a, ...a } = today.body.data;
      const { as_of: _b, ...b } = now;
      expect(b).toEqual(a);
      expect(a.negative_balance_cents).toBe(500);
    });

    it('roll-forward: opening + movements = closing, breakage, chaining; the CSV-free JSON shape', async () => {
      const rf = async (from: string, to: string) => {
        const r = await get(`/v1/tenant/liability/roll-forward?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`, readOnly);
        expect(r.status).toBe(200);
        return r.body.data;
      };
      const whole = await rf(t[0], t[5]);
      expect(Object.keys(whole).sort()).toEqual(['breakage', 'closing', 'from', 'movements', 'opening', 'to']);
      expect(whole.opening).toEqual({ outstanding_cents: 0, available_cents: 0, pending_cents: 0, members: 0 });
      const m = whole.movements;
      expect(m.earned_cents).toBe(1_500);
      expect(m.adjusted_cents).toBe(300 - 800 + 200);
      expect(m.reversed_cents).toBeGreaterThan(0);
      expect(m.expired_cents).toBeGreaterThan(0);
      expect(whole.closing.outstanding_cents).toBe(whole.opening.outstanding_cents + m.earned_cents + m.adjusted_cents - m.redeemed_cents + m.restored_cents - m.expired_cents - m.reversed_cents - m.rejected_cents);
      // breakage: everything that left by expiry or redemption left by expiry → 10 000 bps
      expect(whole.breakage).toEqual({ rate_bps: 10_000, expected_redemption_cents: whole.closing.outstanding_cents - Math.floor(whole.closing.outstanding_cents * 10_000 / 10_000) });
      const first = await rf(t[0], t[2]);
      const second = await rf(t[2], t[5]);
      expect(first.closing).toEqual(second.opening);
      expect(first.closing).toEqual((await rf(t[1], t[2])).closing);
      for (const k of Object.keys(m)) expect(first.movements[k] + second.movements[k]).toBe(m[k]);
    });

    it('ledger-entries: oldest first, cursor pages that never repeat or skip, type filter, the same period as streamed CSV', async () => {
      const period = `from=${encodeURIComponent(t[0])}&to=${encodeURIComponent(t[5])}`;
      const all: any[] = [];
      let cursor: string | null = null;
      do {
        const r = await get(`/v1/ledger-entries?${period}&limit=2${cursor ? `&cursor=${cursor}` : ''}`, readOnly);
        expect(r.status).toBe(200);
        expect(r.body.data.length).toBeLessThanOrEqual(2);
        all.push(...r.body.data);
        cursor = r.body.pagination.cursor;
      } while (cursor);
      expect(all.length).toBeGreaterThanOrEqual(7);
      expect(new Set(all.map((e) => e.id)).size).toBe(all.length);
      const keys = all.map((e) => `${e.created_at} ${e.id}`);
      expect([...keys].sort()).toEqual(keys);
      expect(all[0]).toMatchObject({ type: 'earn', status: 'posted', currency: 'points', order_ref: 'A-1', member_id: expect.stringMatching(/^M-/) });
      expect(all.map((e) => e.type)).toEqual(expect.arrayContaining(['earn', 'adjust', 'reverse', 'expire']));
      const adjusts = await get(`/v1/ledger-entries?${period}&type=adjust`, readOnly);
      expect(adjusts.body.data.map((e: any) => e.id)).toEqual(all.filter((e) => e.type === 'adjust').map((e) => e.id));

      const csv = await get(`/v1/ledger-entries?${period}&limit=1`, readOnly, { accept: 'text/csv' });
      expect(csv.status).toBe(200);
      expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
      const text = csv.body as unknown as string;
      const rows = parseCsv(text);
      expect(rows[0].join(',')).toBe(CSV_HEADER);
      // no pagination in CSV: every entry of the period, as in the JSON walk
      expect(rows.slice(1).map((r) => r[0])).toEqual(all.map((e) => e.id));
      const quoted = rows.find((r) => r[6] === 'goodwill, "quoted"');
      expect(quoted).toBeDefined();
      expect(text).toContain('"goodwill, ""quoted"""');
      expect(text).not.toMatch(/@example\.com/);
    });

    it('scopes, live/sandbox separation, validation errors on the offending field', async () => {
      for (const path of ['/v1/tenant/liability?as_of=2020-01-01T00:00:00Z', `/v1/tenant/liability/roll-forward?from=${t[0]}&to=${t[1]}`, '/v1/ledger-entries']) {
        const r = await get(path, actOnly);
        expect(r.status).toBe(403);
        expect(r.body.type).toMatch(/#insufficient-scope$/);
        expect((await app.http('GET', path)).status).toBe(401);
      }
      // the live programme sees none of the sandbox's books
      const live = await get('/v1/ledger-entries', p.liveKey);
      expect(live.status).toBe(200);
      expect(live.body.data).toEqual([]);
      const liveNow = new Date().toISOString();
      const liveRf = await get(`/v1/tenant/liability/roll-forward?from=2020-01-01T00:00:00Z&to=${encodeURIComponent(liveNow)}`, p.liveKey);
      expect(liveRf.body.data.closing).toEqual({ outstanding_cents: 0, available_cents: 0, pending_cents: 0, members: 0 });
      // the sandbox's clock is days ahead of real time: a live instant that far ahead is refused
      const ahead = await get(`/v1/tenant/liability?as_of=${encodeURIComponent(t[5])}`, p.liveKey);
      expect(ahead.status).toBe(422);

      const problem = async (path: string) => {
        const r = await get(path, readOnly);
        expect(r.status).toBe(422);
        expect(r.body.type).toMatch(/#validation$/);
        return r.body.errors.map((e: { path: string }) => e.path);
      };
      const future = encodeURIComponent(new Date(Date.parse(t[5]) + 3_600_000).toISOString());
      expect(await problem('/v1/tenant/liability?as_of=yesterday')).toEqual(['/as_of']);
      expect(await problem(`/v1/tenant/liability?as_of=${future}`)).toEqual(['/as_of']);
      expect(await problem('/v1/tenant/liability/roll-forward?to=2026-01-01T00:00:00Z')).toEqual(['/from']);
      expect(await problem(`/v1/tenant/liability/roll-forward?from=${t[3]}&to=${t[1]}`)).toEqual(['/from']);
      expect(await problem(`/v1/tenant/liability/roll-forward?from=${t[0]}&to=${future}`)).toEqual(['/to']);
      expect(await problem('/v1/ledger-entries?limit=5000')).toEqual(['/limit']);
      expect(await problem('/v1/ledger-entries?type=bonus')).toEqual(['/type']);
      expect(await problem('/v1/ledger-entries?cursor=xyz')).toEqual(['/cursor']);
      expect(await problem('/v1/ledger-entries?colour=red')).toEqual(['/colour']);
      // a refused CSV export is a problem too, not a broken stream
      const bad = await get('/v1/ledger-entries?from=soon', readOnly, { accept: 'text/csv' });
      expect(bad.status).toBe(422);
      expect(bad.body.errors).toEqual([expect.objectContaining({ path: '/from' })]);
    });

    it('CSV streams a period of many internal pages (LOYALTY_EXPORT_PAGE_ROWS=10) completely, in order', async () => {
      const q = await app.createProgram();
      const n = 47;
      const imported = await app.admin('POST', `/admin/v1/programs/${q.programId}/migrations`, {
        mode: 'live', entries: Array.from({ length: n }, (_, i) => ({ email: `bulk${i}@example.com`, amount_cents: 100 + i })),
      });
      expect(imported.status).toBe(201);
      const csv = await get('/v1/ledger-entries', q.liveKey, { accept: 'text/csv' });
      expect(csv.status).toBe(200);
      const rows = parseCsv(csv.body as unknown as string);
      expect(rows).toHaveLength(n + 1);
      const ids = rows.slice(1).map((r) => r[0]);
      expect(new Set(ids).size).toBe(n);
      expect(rows.slice(1).every((r) => r[2] === 'adjust' && r[6] === 'migration')).toBe(true);
      const total = rows.slice(1).reduce((sum, r) => sum + Number(r[4]), 0);
      expect(total).toBe(n * 100 + (n * (n - 1)) / 2);
      const keys = rows.slice(1).map((r) => `${r[10]} ${r[0]}`);
      expect([...keys].sort()).toEqual(keys);
    });

    it('admin plane: the roll-forward of a programme and mode (what the admin CLI prints)', async () => {
      const r = await app.admin('GET', `/admin/v1/programs/${p.programId}/finance/roll-forward?mode=test&from=${encodeURIComponent(t[0])}&to=${encodeURIComponent(t[5])}`);
      expect(r.status).toBe(200);
      const viaKey = await get(`/v1/tenant/liability/roll-forward?from=${encodeURIComponent(t[0])}&to=${encodeURIComponent(t[5])}`, readOnly);
      expect(r.body.data).toEqual(viaKey.body.data);
      expect((await app.admin('GET', `/admin/v1/programs/P-00000000000000000000000000/finance/roll-forward?from=${t[0]}&to=${t[1]}`)).status).toBe(404);
      // the admin CLI, in-process, against this service
      let out = '';
      const env = { LOYALTY_URL: app.url, LOYALTY_ADMIN_TOKEN: app.adminToken };
      const cli = (argv: string[]) => run(argv, { env, stdout: (x) => { out += x; }, stderr: () => undefined });
      expect(await cli(['--compact', 'finance', 'roll-forward', p.programId, '--mode', 'test', '--from', t[0], '--to', t[5]])).toBe(0);
      expect(JSON.parse(out)).toEqual(r.body.data);
      out = '';
      expect(await cli(['finance', 'roll-forward', p.programId, '--mode', 'test', '--from', t[0], '--to', t[5], '--csv'])).toBe(0);
      const lines = new Map(parseCsv(out).slice(1).map(([k, v]) => [k, v]));
      expect(Number(lines.get('closing_outstanding_cents'))).toBe(r.body.data.closing.outstanding_cents);
      expect(Number(lines.get('expired_cents'))).toBe(-r.body.data.movements.expired_cents);
      expect(await cli(['finance', 'roll-forward', p.programId, '--mode', 'test', '--from', t[5], '--to', t[0]])).toBe(1);
    });
  });
};

financeScenarios('standalone', () => startTestApp({ sweepIntervalMs: 0, exportPageRows: 10 }));
financeScenarios('distributed over Kafka', async () => startTestApp({}, await startDistributed({ env: { LOYALTY_EXPORT_PAGE_ROWS: '10' } })));
