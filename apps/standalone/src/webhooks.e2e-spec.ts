import { randomUUID } from 'node:crypto';
import { IncomingHttpHeaders, Server, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { eventually } from '@loyalty/testing';
import { TestApp, startTestApp } from './testing/harness';
import { startDistributed } from './testing/distributed';

/** What the local receiver saw: one entry per request. */
interface Received { path: string; headers: IncomingHttpHeaders; raw: string; body: { id: string; type: string; created_at: string; livemode: boolean; data: any } }

/**
 * A webhook receiver on 127.0.0.1 (never any other address). The path picks its behaviour:
 * /ok → 200; /flaky → 500 for the first two attempts of each webhook-id, then 200;
 * /down → 500 always; /gone → 410.
 */
const startReceiver = async (): Promise<{ url: string; seen: Received[]; close: () => Promise<void> }> => {
  const seen: Received[] = [];
  const tries = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '/').split('?')[0];
      let body: Received['body'];
      try { body = JSON.parse(raw); } catch { body = { id: '', type: 'unparseable', created_at: '', livemode: false, data: null }; }
      seen.push({ path, headers: req.headers, raw, body });
      const id = String(req.headers['webhook-id']);
      const n = (tries.get(id) ?? 0) + 1;
      tries.set(id, n);
      const status = path.startsWith('/ok') ? 200 : path.startsWith('/flaky') ? (n <= 2 ? 500 : 200) : path.startsWith('/gone') ? 410 : 500;
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'thanks' : 'nope');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
};

const verify = (secret: string, r: Received): unknown =>
  new Webhook(secret).verify(r.raw, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  });

describe('webhooks over HTTP (standalone)', () => {
  let app: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    app = await startTestApp({ webhookRetrySchedule: [1, 1, 1], webhookDisableAfter: 3, webhookTimeoutMs: 3000, sweepIntervalMs: 1000 });
  });
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
  });

  const createEndpoint = async (key: string, path: string, events: string[]) => {
    const r = await app.http('POST', '/v1/webhook_endpoints', { key, body: { url: `${receiver.url}${path}`, events } });
    expect(r.status).toBe(201);
    return r.body.data as { id: string; secret: string; url: string };
  };
  const enrol = async (key: string) => {
    const r = await app.http('POST', '/v1/members', { key, body: { email: `w-${randomUUID()}@example.com` } });
    expect(r.status).toBe(201);
    return r.body.data.id as string;
  };
  const seenAt = (path: string) => receiver.seen.filter((s) => s.path === path);

  it('creates an endpoint (201, secret once), lists it without the secret, validates the body', async () => {
    const { testKey } = await app.createProgram();
    const created = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body: { url: `${receiver.url}/ok/create`, events: ['member.enrolled', 'balance.updated'] } });
    expect(created.status).toBe(201);
    const ep = created.body.data;
    expect(ep).toMatchObject({ url: `${receiver.url}/ok/create`, events: ['member.enrolled', 'balance.updated'], status: 'active', failure_count: 0, disabled_at: null });
    expect(ep.id).toMatch(/^WE-[0-9A-Z]{26}$/);
    expect(ep.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(ep.secret.slice(6), 'base64')).toHaveLength(32);
    expect(new Date(ep.created_at).toISOString()).toBe(ep.created_at);

    const list = await app.http('GET', '/v1/webhook_endpoints', { key: testKey });
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0]).toEqual({ id: ep.id, url: ep.url, events: ep.events, status: 'active', failure_count: 0, disabled_at: null, created_at: ep.created_at });
    expect(JSON.stringify(list.body)).not.toContain('whsec_');

    const unknownKind = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body: { url: `${receiver.url}/ok`, events: ['member.exploded'] } });
    expect(unknownKind.status).toBe(422);
    expect(unknownKind.headers.get('content-type')).toContain('application/problem+json');
    expect(unknownKind.body.type).toMatch(/#validation$/);
    expect(unknownKind.body.errors).toEqual([expect.objectContaining({ path: '/events/0' })]);

    const second = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body: { url: `${receiver.url}/ok`, events: ['balance.updated', 42] } });
    expect(second.status).toBe(422);
    expect(second.body.errors.map((e: { path: string }) => e.path)).toEqual(['/events/1']);

    for (const body of [{ url: `${receiver.url}/ok`, events: [] }, { url: `${receiver.url}/ok` }, { events: ['balance.updated'] },
      { url: 'not a url', events: ['balance.updated'] }, { url: `https://x.example/${'a'.repeat(2050)}`, events: ['balance.updated'] },
      { url: `${receiver.url}/ok`, events: ['balance.updated'], extra: 1 }]) {
      const r = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body });
      expect(r.status).toBe(422);
    }
    // http is for loopback receivers in the sandbox only
    const httpRemote = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body: { url: 'http://hooks.example.com/x', events: ['balance.updated'] } });
    expect(httpRemote.status).toBe(422);
    expect(httpRemote.body.errors[0].path).toBe('/url');
  });

  it('refuses private, loopback and plain-http URLs with a live key (SSRF): 422 on /url', async () => {
    const { liveKey } = await app.createProgram();
    for (const url of ['https://127.0.0.1/hook', 'https://10.0.0.1/x', 'https://[::1]/x', 'https://169.254.169.254/latest/meta-data', 'https://192.168.1.1/x',
      'https://localhost/x', 'https://[fd00::1]/x', 'https://100.64.0.1/x', `${receiver.url}/ok`]) {
      const r = await app.http('POST', '/v1/webhook_endpoints', { key: liveKey, body: { url, events: ['balance.updated'] } });
      expect({ url, status: r.status }).toEqual({ url, status: 422 });
      expect(r.body.errors).toEqual([expect.objectContaining({ path: '/url' })]);
    }
    const list = await app.http('GET', '/v1/webhook_endpoints', { key: liveKey });
    expect(list.body.data).toEqual([]);
  });

  it('delivers member.enrolled, ledger.entry.created and balance.updated, signed, within seconds', async () => {
    const { testKey } = await app.createProgram();
    const ep = await createEndpoint(testKey, '/ok/flow', ['member.enrolled', 'ledger.entry.created', 'balance.updated']);
    const memberId = await enrol(testKey);
    const adj = await app.http('POST', `/v1/members/${memberId}/adjust`, { key: testKey, body: { amount_cents: 1250, reason_code: 'goodwill' } });
    expect(adj.status).toBe(201);

    const got = await eventually(() => {
      const mine = seenAt('/ok/flow');
      const kinds = mine.map((s) => s.body.type);
      expect(kinds).toEqual(expect.arrayContaining(['member.enrolled', 'ledger.entry.created', 'balance.updated']));
      return mine;
    }, { timeoutMs: 10_000, intervalMs: 50 });

    for (const r of got) {
      expect(verify(ep.secret, r)).toEqual(r.body);
      expect(r.headers['webhook-id']).toMatch(/^WD-[0-9A-Z]{26}$/);
      expect(r.body.id).toBe(r.headers['webhook-id']);
      expect(Number(r.headers['webhook-timestamp'])).toBeGreaterThan(Date.now() / 1000 - 60);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.body.livemode).toBe(false);
      expect(new Date(r.body.created_at).toISOString()).toBe(r.body.created_at);
    }
    const enrolled = got.find((r) => r.body.type === 'member.enrolled')!;
    expect(enrolled.body.data).toMatchObject({ id: memberId, state: 'registered', balances: { available_cents: 0, spendable_cents: 0 } });
    expect(enrolled.body.data).not.toHaveProperty('email');
    const entry = got.find((r) => r.body.type === 'ledger.entry.created')!;
    expect(entry.body.data).toMatchObject({ id: adj.body.data.ledger_entry_id, type: 'adjust', status: 'posted', amount_cents: 1250, reason_code: 'goodwill', member_id: memberId });
    const balance = got.filter((r) => r.body.type === 'balance.updated');
    expect(balance).toHaveLength(1);
    expect(balance[0].body.data).toMatchObject({ id: memberId, balances: { available_cents: 1250, spendable_cents: 1250, pending_cents: 0, reserved_cents: 0, lifetime_earned_cents: 1250 } });
    // the member as the API shows it agrees with the notice
    const member = await app.http('GET', `/v1/members/${memberId}`, { key: testKey });
    expect(member.body.data.balances).toEqual(balance[0].body.data.balances);
  });

  it('sends only the kinds an endpoint subscribed to, and nothing to other programmes or modes', async () => {
    const a = await app.createProgram();
    const b = await app.createProgram();
    await createEndpoint(a.testKey, '/ok/only-balance', ['balance.updated']);
    await createEndpoint(b.testKey, '/ok/other-programme', ['member.enrolled', 'balance.updated']);
    const memberId = await enrol(a.testKey);
    await app.http('POST', `/v1/members/${memberId}/adjust`, { key: a.testKey, body: { amount_cents: 100, reason_code: 'x' } });
    // a live member of programme a must not reach the sandbox endpoint either
    const live = await app.http('POST', '/v1/members', { key: a.liveKey, body: { email: `l-${randomUUID()}@example.com` } });
    await app.http('POST', `/v1/members/${live.body.data.id}/adjust`, { key: a.liveKey, body: { amount_cents: 100, reason_code: 'x' } });
    await eventually(() => expect(seenAt('/ok/only-balance').length).toBeGreaterThanOrEqual(1), { timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 1000));
    expect(seenAt('/ok/only-balance').map((s) => s.body.type)).toEqual(['balance.updated']);
    expect(seenAt('/ok/only-balance')[0].body.data.id).toBe(memberId);
    expect(seenAt('/ok/other-programme')).toEqual([]);
  });

  it('POST /{id}/test sends a signed webhook.test at once: 200 with the receiver status', async () => {
    const { testKey } = await app.createProgram();
    const ep = await createEndpoint(testKey, '/ok/test-call', ['balance.updated']);
    const r = await app.http('POST', `/v1/webhook_endpoints/${ep.id}/test`, { key: testKey });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ status_code: 200, ok: true });
    expect(r.body.data.delivery_id).toMatch(/^WD-[0-9A-Z]{26}$/);
    expect(Number.isInteger(r.body.data.duration_ms)).toBe(true);
    const hit = seenAt('/ok/test-call');
    expect(hit).toHaveLength(1);
    expect(hit[0].body.type).toBe('webhook.test');
    expect(hit[0].headers['webhook-id']).toBe(r.body.data.delivery_id);
    expect(verify(ep.secret, hit[0])).toEqual(hit[0].body);

    const down = await createEndpoint(testKey, '/down/test-call', ['balance.updated']);
    const bad = await app.http('POST', `/v1/webhook_endpoints/${down.id}/test`, { key: testKey });
    expect(bad.status).toBe(200);
    expect(bad.body.data).toMatchObject({ status_code: 500, ok: false });
    // a test never counts against the endpoint
    const after = await app.http('GET', `/v1/webhook_endpoints/${down.id}`, { key: testKey });
    expect(after.body.data).toMatchObject({ status: 'active', failure_count: 0 });
  });

  it('retries a failing delivery with the same webhook-id; failure_count rises and returns to 0 on success', async () => {
    const { testKey } = await app.createProgram();
    const ep = await createEndpoint(testKey, '/flaky/a', ['member.enrolled']);
    await enrol(testKey);
    const counts: number[] = [];
    await eventually(async () => {
      const r = await app.http('GET', `/v1/webhook_endpoints/${ep.id}`, { key: testKey });
      counts.push(r.body.data.failure_count);
      expect(seenAt('/flaky/a').length).toBe(3);
      expect(r.body.data.failure_count).toBe(0);
    }, { timeoutMs: 15_000, intervalMs: 100 });
    expect(Math.max(...counts)).toBeGreaterThanOrEqual(1);
    const attempts = seenAt('/flaky/a');
    expect(new Set(attempts.map((a) => a.headers['webhook-id'])).size).toBe(1);
    expect(new Set(attempts.map((a) => a.raw)).size).toBe(1);
    for (const a of attempts) expect(verify(ep.secret, a)).toEqual(a.body);
    const deliveries = await app.http('GET', `/v1/webhook_endpoints/${ep.id}/deliveries`, { key: testKey });
    expect(deliveries.status).toBe(200);
    expect(deliveries.body.data[0]).toMatchObject({ id: attempts[0].headers['webhook-id'], type: 'member.enrolled', status: 'delivered', attempts: 3, last_status_code: 200 });
  });

  it('disables an endpoint after webhookDisableAfter consecutive failures', async () => {
    const { testKey } = await app.createProgram();
    const ep = await createEndpoint(testKey, '/down/a', ['member.enrolled']);
    await enrol(testKey);
    const seenCounts: number[] = [];
    const final = await eventually(async () => {
      const r = await app.http('GET', `/v1/webhook_endpoints/${ep.id}`, { key: testKey });
      seenCounts.push(r.body.data.failure_count);
      expect(r.body.data.status).toBe('disabled');
      return r.body.data;
    }, { timeoutMs: 15_000, intervalMs: 100 });
    expect(final.failure_count).toBe(3);
    expect(new Date(final.disabled_at).toISOString()).toBe(final.disabled_at);
    expect(seenCounts.some((c) => c > 0 && c < 3)).toBe(true);
    expect(seenAt('/down/a')).toHaveLength(3);
    // a disabled endpoint gets nothing new
    await enrol(testKey);
    await new Promise((r) => setTimeout(r, 1500));
    expect(seenAt('/down/a')).toHaveLength(3);
    const list = await app.http('GET', '/v1/webhook_endpoints', { key: testKey });
    expect(list.body.data[0]).toMatchObject({ id: ep.id, status: 'disabled', failure_count: 3 });
  });

  it('a 410 Gone disables the endpoint at once', async () => {
    const { testKey } = await app.createProgram();
    const ep = await createEndpoint(testKey, '/gone/a', ['member.enrolled']);
    await enrol(testKey);
    const final = await eventually(async () => {
      const r = await app.http('GET', `/v1/webhook_endpoints/${ep.id}`, { key: testKey });
      expect(r.body.data.status).toBe('disabled');
      return r.body.data;
    }, { timeoutMs: 10_000, intervalMs: 50 });
    expect(final.failure_count).toBe(1);
    expect(final.disabled_at).not.toBeNull();
    await new Promise((r) => setTimeout(r, 1500));
    expect(seenAt('/gone/a')).toHaveLength(1);
  });

  it('DELETE → 204 then 404; another programme or mode sees 404; scopes are enforced', async () => {
    const a = await app.createProgram();
    const b = await app.createProgram();
    const ep = await createEndpoint(a.testKey, '/ok/delete', ['balance.updated']);
    expect((await app.http('DELETE', `/v1/webhook_endpoints/${ep.id}`, { key: b.testKey })).status).toBe(404);
    expect((await app.http('POST', `/v1/webhook_endpoints/${ep.id}/test`, { key: b.testKey })).status).toBe(404);
    expect((await app.http('DELETE', `/v1/webhook_endpoints/${ep.id}`, { key: a.liveKey })).status).toBe(404);
    expect((await app.http('GET', '/v1/webhook_endpoints', { key: a.liveKey })).body.data).toEqual([]);
    expect((await app.http('GET', '/v1/webhook_endpoints', { key: b.testKey })).body.data).toEqual([]);

    const readOnly = (await app.admin('POST', `/admin/v1/programs/${a.programId}/keys`, { mode: 'test', scopes: ['read'] })).body.data.key;
    const webhooksOnly = (await app.admin('POST', `/admin/v1/programs/${a.programId}/keys`, { mode: 'test', scopes: ['webhooks'] })).body.data.key;
    const actOnly = (await app.admin('POST', `/admin/v1/programs/${a.programId}/keys`, { mode: 'test', scopes: ['act'] })).body.data.key;
    expect((await app.http('GET', '/v1/webhook_endpoints', { key: readOnly })).status).toBe(200);
    expect((await app.http('GET', '/v1/webhook_endpoints', { key: webhooksOnly })).status).toBe(200);
    expect((await app.http('GET', '/v1/webhook_endpoints', { key: actOnly })).status).toBe(403);
    const refused = await app.http('POST', '/v1/webhook_endpoints', { key: readOnly, body: { url: `${receiver.url}/ok`, events: ['balance.updated'] } });
    expect(refused.status).toBe(403);
    expect(refused.body.type).toMatch(/#insufficient-scope$/);
    expect((await app.http('DELETE', `/v1/webhook_endpoints/${ep.id}`, { key: readOnly })).status).toBe(403);
    expect((await app.http('POST', `/v1/webhook_endpoints/${ep.id}/test`, { key: readOnly })).status).toBe(403);
    expect((await app.http('GET', '/v1/webhook_endpoints')).status).toBe(401);

    const del = await app.http('DELETE', `/v1/webhook_endpoints/${ep.id}`, { key: webhooksOnly });
    expect(del.status).toBe(204);
    expect(del.body).toBeNull();
    expect((await app.http('DELETE', `/v1/webhook_endpoints/${ep.id}`, { key: a.testKey })).status).toBe(404);
    expect((await app.http('POST', `/v1/webhook_endpoints/${ep.id}/test`, { key: a.testKey })).status).toBe(404);
    expect((await app.http('GET', '/v1/webhook_endpoints', { key: a.testKey })).body.data).toEqual([]);
    expect((await app.http('DELETE', '/v1/webhook_endpoints/WE-01J00000000000000000000000', { key: a.testKey })).status).toBe(404);
  });

  it('redemptions: created, confirmed, voided; a reservation confirm is one balance notice with the final figures', async () => {
    const { testKey } = await app.createProgram();
    const path = '/ok/redeem';
    await createEndpoint(testKey, path, ['ledger.entry.created', 'balance.updated', 'redemption.created', 'redemption.confirmed', 'redemption.voided']);
    const memberId = await enrol(testKey);
    await app.http('POST', `/v1/members/${memberId}/adjust`, { key: testKey, body: { amount_cents: 5000, reason_code: 'seed' } });
    const v1 = await app.http('POST', `/v1/members/${memberId}/redemptions`, { key: testKey, body: { amount_cents: 1000 } });
    expect(v1.status).toBe(201);
    expect((await app.http('POST', `/v1/redemptions/${v1.body.data.id}/confirm`, { key: testKey, body: { order_ref: 'o-1' } })).status).toBe(200);
    const v2 = await app.http('POST', `/v1/members/${memberId}/redemptions`, { key: testKey, body: { amount_cents: 700 } });
    expect((await app.http('POST', `/v1/redemptions/${v2.body.data.id}/void`, { key: testKey })).status).toBe(200);

    const kindsOf = () => seenAt(path).map((r) => r.body.type);
    await eventually(() => expect(kindsOf()).toEqual(expect.arrayContaining(['redemption.created', 'redemption.confirmed', 'redemption.voided'])), { timeoutMs: 10_000 });
    const byType = (t: string) => seenAt(path).filter((r) => r.body.type === t).map((r) => r.body.data);
    expect(byType('redemption.created').map((d) => d.id).sort()).toEqual([v1.body.data.id, v2.body.data.id].sort());
    expect(byType('redemption.created').find((d) => d.id === v1.body.data.id)).toMatchObject({
      status: 'created', mode: 'voucher', amount_cents: 1000, code: v1.body.data.code, ledger_entry_id: v1.body.data.ledger_entry_id, member_id: memberId,
    });
    expect(byType('redemption.confirmed')).toEqual([expect.objectContaining({ id: v1.body.data.id, status: 'used', order_ref: 'o-1' })]);
    expect(byType('redemption.voided')).toEqual([expect.objectContaining({ id: v2.body.data.id, status: 'restored' })]);
    // one notice per balance change: adjust 5000, voucher 4000, voucher 3300, void 4000 (confirming a voucher moves no balance)
    await eventually(() => expect(byType('balance.updated').map((d) => d.balances.available_cents)).toEqual([5000, 4000, 3300, 4000]), { timeoutMs: 10_000 });
    expect(byType('ledger.entry.created').map((d) => d.type).sort()).toEqual(['adjust', 'redeem', 'redeem', 'reverse']);

    // reservation: held (reserved rises), then confirmed (reserved falls and available falls in one append: one notice)
    const before = byType('balance.updated').length;
    const rs = await app.http('POST', '/v1/redemption-reservations', { key: testKey, body: { member_id: memberId, amount_cents: 300 } });
    expect(rs.status).toBe(201);
    await eventually(() => expect(byType('balance.updated').length).toBe(before + 1), { timeoutMs: 10_000 });
    expect(byType('balance.updated')[before].balances).toMatchObject({ available_cents: 4000, reserved_cents: 300, spendable_cents: 3700 });
    expect((await app.http('POST', `/v1/redemption-reservations/${rs.body.data.id}/confirm`, { key: testKey, body: { order_ref: 'o-2' } })).status).toBe(200);
    await eventually(() => expect(byType('balance.updated').length).toBe(before + 2), { timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 500));
    const notices = byType('balance.updated');
    expect(notices).toHaveLength(before + 2);
    expect(notices[before + 1].balances).toMatchObject({ available_cents: 3700, reserved_cents: 0, spendable_cents: 3700 });
    const member = await app.http('GET', `/v1/members/${memberId}`, { key: testKey });
    expect(member.body.data.balances).toEqual(notices[before + 1].balances);
  });

  it('reward.expiring_soon: once per lot when it comes within expiry_warning_days of the sandbox clock', async () => {
    const { testKey, programId } = await app.createProgram({ settings: { expiry: { policy: 'fixed_days', days: 40 }, expiry_warning_days: 30 } });
    const path = '/ok/expiring';
    await createEndpoint(testKey, path, ['reward.expiring_soon']);
    const memberId = await enrol(testKey);
    const adj = await app.http('POST', `/v1/members/${memberId}/adjust`, { key: testKey, body: { amount_cents: 900, reason_code: 'seed' } });
    expect(adj.status).toBe(201);
    await new Promise((r) => setTimeout(r, 1500));
    expect(seenAt(path)).toEqual([]); // 40 days away: not yet
    expect((await app.admin('POST', `/admin/v1/programs/${programId}/test-clock/advance`, { seconds: 15 * 86400 })).status).toBe(200);
    const got = await eventually(() => {
      const hits = seenAt(path);
      expect(hits).toHaveLength(1);
      return hits[0];
    }, { timeoutMs: 12_000, intervalMs: 100 });
    expect(got.body.type).toBe('reward.expiring_soon');
    expect(got.body.data).toMatchObject({ member_id: memberId, ledger_entry_id: adj.body.data.ledger_entry_id, amount_cents: 900 });
    expect(Date.parse(got.body.data.expires_at)).toBeGreaterThan(Date.parse(got.body.created_at));
    // once per lot: another clock move sends nothing more
    await app.admin('POST', `/admin/v1/programs/${programId}/test-clock/advance`, { seconds: 86400 });
    await new Promise((r) => setTimeout(r, 2500));
    expect(seenAt(path)).toHaveLength(1);
  });

  it('tier.changed and referral.qualified reach a subscribed endpoint', async () => {
    const p = await app.createProgram({
      rules: [
        { id: 'base', name: 'Base 10 %', type: 'base', earn_rate_pct: 10, timing: 'paid' },
        { id: 'ref', name: 'Refer a friend', type: 'referral', amount_cents: 1_000, min_order_cents: 5_000 },
      ],
      // the friend's order earns 2,000 points (Silver); the advocate's 1,000-point reward stays below the threshold
      tiers: [{ name: 'Silver', level: 1, threshold_type: 'points', threshold_value: 1_500, earn_multiplier: 1.5 }],
    });
    const path = '/ok/tier-referral';
    await createEndpoint(p.testKey, path, ['tier.changed', 'referral.qualified']);
    const advocate = await app.http('POST', '/v1/members', { key: p.testKey, body: { email: `adv-${randomUUID()}@example.com` } });
    const friendEmail = `fr-${randomUUID()}@example.com`;
    const friend = await app.http('POST', '/v1/members', { key: p.testKey, body: { email: friendEmail } });
    const ref = await app.http('POST', '/v1/referrals', { key: p.testKey, body: { code: advocate.body.data.referral_code, friend_member_id: friend.body.data.id } });
    expect(ref.status).toBe(201);
    const sent = await app.http('POST', '/v1/events', { key: p.testKey, body: { type: 'order.paid', order_ref: `o-${randomUUID()}`, gross_cents: 20_000, email: friendEmail } });
    expect(sent.status).toBe(202);
    await eventually(() => expect(seenAt(path).map((r) => r.body.type).sort()).toEqual(['referral.qualified', 'tier.changed']), { timeoutMs: 20_000, intervalMs: 100 });
    // the advocate's reward lands after qualification: still no second tier change
    await eventually(async () => {
      const adv = await app.http('GET', `/v1/members/${advocate.body.data.id}`, { key: p.testKey });
      expect(adv.body.data.balances.available_cents).toBe(1_000);
    }, { timeoutMs: 20_000, intervalMs: 100 });
    await new Promise((r) => setTimeout(r, 500));
    expect(seenAt(path)).toHaveLength(2);
    const tier = seenAt(path).find((r) => r.body.type === 'tier.changed')!.body.data;
    expect(tier).toEqual({ member_id: friend.body.data.id, from: null, to: expect.objectContaining({ name: 'Silver', level: 1 }) });
    const qualified = seenAt(path).find((r) => r.body.type === 'referral.qualified')!.body.data;
    expect(qualified).toMatchObject({ id: ref.body.data.id, advocate_id: advocate.body.data.id, friend_id: friend.body.data.id, status: 'qualified' });
  });

  it('honours Idempotency-Key on creation: the same key and body replays the same endpoint', async () => {
    const { testKey } = await app.createProgram();
    const headers = { 'idempotency-key': `we-${randomUUID()}` };
    const body = { url: `${receiver.url}/ok/idem`, events: ['balance.updated'] };
    const first = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body, headers });
    const again = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replay')).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
    expect((await app.http('GET', '/v1/webhook_endpoints', { key: testKey })).body.data).toHaveLength(1);
  });
});

/** The same flow with the webhook service as its own process, the gateway talking to it over Kafka. */
describe('webhooks in the distributed topology (separate processes over Kafka)', () => {
  let app: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    app = await startTestApp({}, await startDistributed());
  }, 300_000);
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
  });

  it('registers an endpoint, delivers signed member events and answers the test call', async () => {
    const { testKey, liveKey } = await app.createProgram();
    const created = await app.http('POST', '/v1/webhook_endpoints', { key: testKey, body: { url: `${receiver.url}/ok/dist`, events: ['member.enrolled', 'balance.updated'] } });
    expect(created.status).toBe(201);
    const { id, secret } = created.body.data;
    expect((await app.http('POST', '/v1/webhook_endpoints', { key: liveKey, body: { url: 'https://10.0.0.1/x', events: ['balance.updated'] } })).status).toBe(422);
    const m = await app.http('POST', '/v1/members', { key: testKey, body: { email: `d-${randomUUID()}@example.com` } });
    expect(m.status).toBe(201);
    await app.http('POST', `/v1/members/${m.body.data.id}/adjust`, { key: testKey, body: { amount_cents: 300, reason_code: 'x' } });
    const got = await eventually(() => {
      const hits = receiver.seen.filter((r) => r.path === '/ok/dist');
      expect(hits.map((h) => h.body.type).sort()).toEqual(['balance.updated', 'member.enrolled']);
      return hits;
    }, { timeoutMs: 20_000, intervalMs: 100 });
    for (const h of got) expect(verify(secret, h)).toEqual(h.body);
    const test = await app.http('POST', `/v1/webhook_endpoints/${id}/test`, { key: testKey });
    expect(test.status).toBe(200);
    expect(test.body.data).toMatchObject({ ok: true, status_code: 200 });
    expect((await app.http('DELETE', `/v1/webhook_endpoints/${id}`, { key: testKey })).status).toBe(204);
  });
});
