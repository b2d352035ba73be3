import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '@loyalty/admin-cli';
import { eventually } from '@loyalty/testing';
import { TestApp, startTestApp } from './testing/harness';

/** The admin CLI driven in-process (its exported run()) against the real standalone app over HTTP. */
describe('admin CLI against the standalone app', () => {
  let app: TestApp;
  let dir: string;

  const cli = async (...argv: string[]) => {
    let out = '';
    let err = '';
    const code = await run(argv, {
      env: { LOYALTY_URL: app.url, LOYALTY_ADMIN_TOKEN: app.adminToken },
      stdout: (t) => { out += t; },
      stderr: (t) => { err += t; },
      cwd: dir,
    });
    return { code, out, err, json: () => JSON.parse(out) };
  };

  beforeAll(async () => {
    app = await startTestApp();
    dir = await mkdtemp(join(tmpdir(), 'admin-cli-e2e-'));
    await writeFile(join(dir, 'rules.json'), JSON.stringify([{ id: 'base', type: 'base', earn_rate_pct: 5, timing: 'immediate' }]));
    await writeFile(join(dir, 'tiers.json'), JSON.stringify({ tiers: [{ name: 'Gold', level: 1, threshold_type: 'spend', threshold_value: 100000 }] }));
    await writeFile(join(dir, 'settings.json'), JSON.stringify({ earn_on: 'order.placed' }));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await app.close();
  });

  it('creates a programme from files, whose keys then work, and reads and changes it', async () => {
    const created = await cli('programs', 'create', '--name', 'CLI programme', '--currency', 'stars',
      '--rules', 'rules.json', '--tiers', 'tiers.json', '--settings', 'settings.json');
    expect(created).toMatchObject({ code: 0, err: '' });
    const p = created.json();
    expect(p.id).toMatch(/^P-[0-9A-Z]{26}$/);
    expect(p.keys.live.key).toMatch(/^svc_live_/);
    expect(p.keys.test.key).toMatch(/^svc_test_/);
    expect(p.rules).toEqual([expect.objectContaining({ id: 'base', type: 'base', earn_rate_pct: 5, version: 1 })]);
    expect(p.tiers).toEqual([expect.objectContaining({ name: 'Gold', threshold_value: 100000 })]);
    expect(p.settings.earn_on).toBe('order.placed');

    const ping = await app.http('GET', '/v1/ping', { key: p.keys.live.key });
    expect(ping.status).toBe(200);
    expect(ping.body.data.mode).toBe('live');

    const got = await cli('programs', 'get', p.id);
    expect(got.code).toBe(0);
    expect(got.json().program_name).toBe('CLI programme');
    expect(got.json().keys.map((k: { id: string }) => k.id).sort()).toEqual([p.keys.live.id, p.keys.test.id].sort());

    expect((await cli('programs', 'patch', p.id, '--currency', 'gems')).code).toBe(0);
    await writeFile(join(dir, 'rules2.json'), JSON.stringify({ rules: [{ id: 'base', type: 'base', earn_rate_pct: 7, timing: 'immediate' }] }));
    const rules = await cli('rules', 'put', p.id, 'rules2.json');
    expect(rules.code).toBe(0);
    expect(rules.json().rules[0]).toMatchObject({ id: 'base', earn_rate_pct: 7, version: 2 });
    await writeFile(join(dir, 'tiers2.json'), JSON.stringify([{ name: 'Silver', level: 1 }, { name: 'Gold', level: 2, threshold_value: 5000 }]));
    expect((await cli('tiers', 'put', p.id, 'tiers2.json')).code).toBe(0);

    const seen = await app.http('GET', '/v1/programs', { key: p.keys.live.key });
    expect(seen.status).toBe(200);
    expect(seen.body.data.currency_name).toBe('gems');
    expect(seen.body.data.rules[0].earn_rate_pct).toBe(7);
    expect(seen.body.data.tiers.map((t: { name: string }) => t.name)).toEqual(['Silver', 'Gold']);
  });

  it('issues a scoped, rate-limited key, rotates it with a grace period and revokes the new one at once', async () => {
    const { programId } = await app.createProgram();
    const created = await cli('keys', 'create', programId, '--mode', 'test', '--scopes', 'read', '--name', 'till', '--burst', '5', '--per-second', '1');
    expect(created.code).toBe(0);
    const key = created.json();
    expect(key).toMatchObject({ mode: 'test', scopes: ['read'], name: 'till', rate_limit: { burst: 5, per_second: 1 } });
    const ping = await app.http('GET', '/v1/ping', { key: key.key });
    expect(ping.status).toBe(200);
    expect(ping.body.data).toMatchObject({ mode: 'test', scopes: ['read'] });
    expect(ping.headers.get('x-ratelimit-limit')).toBe('5');

    const rotated = await cli('keys', 'rotate', key.id);
    expect(rotated.code).toBe(0);
    const fresh = rotated.json();
    expect(fresh.key).not.toBe(key.key);
    expect((await app.http('GET', '/v1/ping', { key: fresh.key })).status).toBe(200);
    expect((await app.http('GET', '/v1/ping', { key: key.key })).status).toBe(200); // the old key's grace period

    const revoked = await cli('keys', 'revoke', fresh.id);
    expect(revoked.code).toBe(0);
    expect((await app.http('GET', '/v1/ping', { key: fresh.key })).status).toBe(401);
  });

  it('suspends and reinstates a member', async () => {
    const { liveKey } = await app.createProgram();
    const enrolled = await app.http('POST', '/v1/members', { key: liveKey, body: { email: 'cli@example.com' } });
    expect(enrolled.status).toBe(201);
    const id = enrolled.body.data.id as string;

    expect((await cli('members', 'suspend', id)).code).toBe(0);
    expect((await app.http('GET', `/v1/members/${id}`, { key: liveKey })).body.data.state).toBe('suspended');
    expect((await cli('members', 'reinstate', id)).code).toBe(0);
    expect((await app.http('GET', `/v1/members/${id}`, { key: liveKey })).body.data.state).toBe('registered');
  });

  it('advances the sandbox clock and lists rejected calls', async () => {
    const { programId, liveKey } = await app.createProgram();
    const before = Date.now();
    const advanced = await cli('clock', 'advance', programId, '2d');
    expect(advanced.code).toBe(0);
    expect(advanced.json()).toMatchObject({ program_id: programId, mode: 'test' });
    expect(Date.parse(advanced.json().now)).toBeGreaterThanOrEqual(before + 2 * 86_400_000);

    expect((await app.http('GET', '/v1/members/M-00000000000000000000000000', { key: liveKey })).status).toBe(404);
    // the rejected-call log is written after the response, best effort
    await eventually(async () => {
      const listed = await cli('rejected-calls', programId, '--limit', '5');
      expect(listed.code).toBe(0);
      expect(listed.json()).toEqual([expect.objectContaining({ method: 'GET', status: 404, slug: 'not-found' })]);
    });
  });

  it('exits 1 with the problem when the service refuses, and when the token is wrong', async () => {
    const missing = await cli('programs', 'get', 'P-00000000000000000000000000');
    expect(missing.code).toBe(1);
    expect(missing.out).toBe('');
    expect(missing.err).toMatch(/^error: .*\(404 not-found\)/);

    const invalid = await cli('keys', 'create', 'P-00000000000000000000000000', '--mode', 'live');
    expect(invalid.code).toBe(1);
    expect(invalid.err).toContain('404 not-found');

    let err = '';
    const code = await run(['programs', 'get', 'P-00000000000000000000000000'], {
      env: { LOYALTY_URL: app.url, LOYALTY_ADMIN_TOKEN: 'adm_wrong' }, stdout: () => undefined, stderr: (t) => { err += t; },
    });
    expect(code).toBe(1);
    expect(err).toContain('401 unauthenticated');
  });
});
