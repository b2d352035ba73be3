import { CliDeps, DEFAULT_URL, EXIT, run } from './admin-cli.program';

interface Sent { url: string; method: string; headers: Record<string, string>; body: unknown }

/** Runs the CLI in-process against a scripted HTTP responder and records what it sent and printed. */
const harness = (respond: (req: Sent) => Response = () => json(200, { data: { ok: true } }), extra: Partial<CliDeps> = {}) => {
  const sent: Sent[] = [];
  let stdout = '';
  let stderr = '';
  const deps: CliDeps = {
    env: { LOYALTY_ADMIN_TOKEN: 'adm_env' },
    stdout: (t) => { stdout += t; },
    stderr: (t) => { stderr += t; },
    cwd: '/work',
    fetch: (async (url: string, init: RequestInit) => {
      const req = {
        url, method: String(init.method), headers: init.headers as Record<string, string>,
        body: init.body === undefined ? undefined : JSON.parse(String(init.body)),
      };
      sent.push(req);
      return respond(req);
    }) as unknown as typeof fetch,
    ...extra,
  };
  return { deps, sent, out: () => stdout, err: () => stderr };
};

const json = (status: number, body: unknown, type = 'application/json') =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': type } });

describe('admin CLI run()', () => {
  it('sends the request to LOYALTY_URL with the admin token and prints the data as JSON', async () => {
    const h = harness(() => json(200, { data: { id: 'P-1', program_name: 'Acme' } }));
    const code = await run(['programs', 'get', 'P-1'], { ...h.deps, env: { LOYALTY_ADMIN_TOKEN: 'adm_env', LOYALTY_URL: 'https://loyalty.example.com' } });
    expect(code).toBe(EXIT.ok);
    expect(h.sent).toHaveLength(1);
    expect(h.sent[0].url).toBe('https://loyalty.example.com/admin/v1/programs/P-1');
    expect(h.sent[0].method).toBe('GET');
    expect(h.sent[0].headers.authorization).toBe('Bearer adm_env');
    expect(JSON.parse(h.out())).toEqual({ id: 'P-1', program_name: 'Acme' });
  });

  it('lets --url and --token override the environment, and defaults the URL', async () => {
    const h = harness();
    expect(await run(['--url', 'http://loyalty.internal:8080/', 'keys', 'rotate', 'K-1', '--token', 'adm_flag'], h.deps)).toBe(EXIT.ok);
    expect(h.sent[0]).toMatchObject({ url: 'http://loyalty.internal:8080/admin/v1/keys/K-1/rotate', method: 'POST' });
    expect(h.sent[0].headers.authorization).toBe('Bearer adm_flag');
    expect(await run(['keys', 'revoke', 'K-1'], h.deps)).toBe(EXIT.ok);
    expect(h.sent[1]).toMatchObject({ url: `${DEFAULT_URL}/admin/v1/keys/K-1`, method: 'DELETE' });
  });

  it('reads rules, tiers and settings files for programs create', async () => {
    const files: Record<string, string> = {
      '/work/rules.json': JSON.stringify([{ type: 'base', earn_rate_pct: 5 }]),
      '/work/tiers.json': JSON.stringify({ tiers: [{ name: 'Gold', level: 1 }] }),
      '/tmp/settings.json': JSON.stringify({ earn_on: 'order.placed' }),
    };
    const h = harness(() => json(201, { data: { id: 'P-1' } }), { readFile: async (p) => { if (!(p in files)) throw Object.assign(new Error('nope'), { code: 'ENOENT' }); return files[p]; } });
    const code = await run(['programs', 'create', '--name', 'Acme', '--currency', 'stars', '--rules', 'rules.json', '--tiers', 'tiers.json', '--settings', '/tmp/settings.json'], h.deps);
    expect(code).toBe(EXIT.ok);
    expect(h.sent[0].body).toEqual({
      program_name: 'Acme', currency_name: 'stars', rules: [{ type: 'base', earn_rate_pct: 5 }], tiers: [{ name: 'Gold', level: 1 }], settings: { earn_on: 'order.placed' },
    });
    expect(await run(['rules', 'put', 'P-1', 'missing.json'], h.deps)).toBe(EXIT.usage);
    expect(h.err()).toContain('cannot read missing.json: ENOENT');
    expect(h.sent).toHaveLength(1);
  });

  it('maps each command to its admin-plane request', async () => {
    const h = harness(() => json(200, { data: {} }), { readFile: async () => 'email,amount_cents\na@example.com,700\n' });
    const cases: [string[], string, string, unknown][] = [
      [['keys', 'create', 'P-1', '--mode', 'test', '--scopes', 'read,act', '--name', 'till', '--burst', '5', '--per-second', '1'], 'POST', '/admin/v1/programs/P-1/keys',
        { mode: 'test', scopes: ['read', 'act'], name: 'till', rate_limit: { burst: 5, per_second: 1 } }],
      [['keys', 'list', 'P-1'], 'GET', '/admin/v1/programs/P-1/keys', undefined],
      [['programs', 'patch', 'P-1', '--name', 'New'], 'PATCH', '/admin/v1/programs/P-1', { program_name: 'New' }],
      [['members', 'suspend', 'M-1'], 'POST', '/admin/v1/members/M-1/suspend', {}],
      [['members', 'reinstate', 'M-1'], 'POST', '/admin/v1/members/M-1/reinstate', {}],
      [['members', 'pause', 'M-1', '--mode', 'test'], 'POST', '/admin/v1/members/M-1/pause', { mode: 'test' }],
      [['members', 'resume', 'M-1'], 'POST', '/admin/v1/members/M-1/resume', {}],
      [['clock', 'advance', 'P-1', '2d'], 'POST', '/admin/v1/programs/P-1/test-clock/advance', { seconds: 172_800 }],
      [['rejected-calls', 'P-1', '--limit', '10'], 'GET', '/admin/v1/programs/P-1/rejected-calls?limit=10', undefined],
      [['entries', 'approve', 'LE-1'], 'POST', '/admin/v1/ledger-entries/LE-1/approve', undefined],
      [['entries', 'reject', 'LE-1'], 'POST', '/admin/v1/ledger-entries/LE-1/reject', undefined],
      [['referrals', 'approve', 'RF-1'], 'POST', '/admin/v1/referrals/RF-1/approve', undefined],
      [['migrations', 'import', 'P-1', 'b.csv', '--mode', 'live'], 'POST', '/admin/v1/programs/P-1/migrations', { mode: 'live', entries: [{ email: 'a@example.com', amount_cents: 700 }] }],
      [['migrations', 'reverse', 'MB-1'], 'DELETE', '/admin/v1/migrations/MB-1', undefined],
      [['sandbox', 'wipe', 'P-1'], 'POST', '/admin/v1/programs/P-1/sandbox/wipe', undefined],
    ];
    for (const [argv, method, path, body] of cases) {
      const before = h.sent.length;
      expect([argv.join(' '), await run(argv, h.deps)]).toEqual([argv.join(' '), EXIT.ok]);
      expect(h.sent).toHaveLength(before + 1);
      expect({ argv, method: h.sent[before].method, url: h.sent[before].url, body: h.sent[before].body })
        .toEqual({ argv, method, url: `${DEFAULT_URL}${path}`, body });
    }
  });

  it('exits 1 with the problem\'s title and detail when the service refuses', async () => {
    const h = harness(() => json(404, { type: 'https://x/docs/api/errors#not-found', title: 'Not found', status: 404, detail: 'programme P-9 not found' }, 'application/problem+json'));
    expect(await run(['programs', 'get', 'P-9'], h.deps)).toBe(EXIT.api);
    expect(h.err()).toBe('error: Not found (404 not-found): programme P-9 not found\n');
    expect(h.out()).toBe('');
  });

  it('exits 2 without calling the service on bad usage or a missing token', async () => {
    const h = harness();
    expect(await run(['keys', 'create', 'P-1'], h.deps)).toBe(EXIT.usage);
    expect(h.err()).toMatch(/required option '--mode <mode>' not specified/);
    expect(await run(['keys', 'create', 'P-1', '--mode', 'staging'], h.deps)).toBe(EXIT.usage);
    expect(h.err()).toContain('mode must be live or test');
    expect(await run(['programs', 'frobnicate'], h.deps)).toBe(EXIT.usage);
    expect(await run(['clock', 'advance', 'P-1', 'soon'], h.deps)).toBe(EXIT.usage);
    expect(await run(['programs', 'get', 'P-1'], { ...h.deps, env: {} })).toBe(EXIT.usage);
    expect(h.err()).toContain('no admin token: pass --token or set LOYALTY_ADMIN_TOKEN');
    expect(h.sent).toHaveLength(0);
  });

  it('exits 0 for --help and prints it', async () => {
    const h = harness();
    expect(await run(['--help'], h.deps)).toBe(EXIT.ok);
    expect(h.out()).toContain('Usage: loyalty-admin');
    expect(h.sent).toHaveLength(0);
  });

  it('exits 3 when the service cannot be reached', async () => {
    const h = harness(() => { throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }); });
    expect(await run(['programs', 'get', 'P-1'], h.deps)).toBe(EXIT.unreachable);
    expect(h.err()).toBe(`error: cannot reach ${DEFAULT_URL}: ECONNREFUSED\n`);
  });

  it('prints compact JSON with --compact', async () => {
    const h = harness(() => json(200, { data: { id: 'P-1' } }));
    expect(await run(['--compact', 'programs', 'get', 'P-1'], h.deps)).toBe(EXIT.ok);
    expect(h.out()).toBe('{"id":"P-1"}\n');
  });
  describe('finance roll-forward', () => {
    const roll = {
      from: '2026-10-01T00:00:00.000Z', to: '2026-10-31T23:59:59.999Z',
      opening: { outstanding_cents: 10_000, available_cents: 9_000, pending_cents: 1_000, members: 4 },
      closing: { outstanding_cents: 11_150, available_cents: 11_000, pending_cents: 150, members: 5 },
      movements: { earned_cents: 3_000, adjusted_cents: -100, redeemed_cents: 1_500, restored_cents: 200, expired_cents: 300, reversed_cents: 100, rejected_cents: 50 },
      breakage: { rate_bps: 1875, expected_redemption_cents: 9_060 },
    };

    it('asks the admin plane for the programme, mode and period, and prints JSON', async () => {
      const h = harness(() => json(200, { data: roll }));
      expect(await run(['finance', 'roll-forward', 'P-1', '--from', roll.from, '--to', roll.to, '--mode', 'test'], h.deps)).toBe(EXIT.ok);
      const url = new URL(h.sent[0].url);
      expect(url.pathname).toBe('/admin/v1/programs/P-1/finance/roll-forward');
      expect(Object.fromEntries(url.searchParams)).toEqual({ mode: 'test', from: roll.from, to: roll.to });
      expect(h.sent[0].method).toBe('GET');
      expect(JSON.parse(h.out())).toEqual(roll);
    });

    it('--csv prints line,value rows whose signed movements foot from opening to closing', async () => {
      const h = harness(() => json(200, { data: roll }));
      expect(await run(['finance', 'roll-forward', 'P-1', '--from', roll.from, '--to', roll.to, '--csv'], h.deps)).toBe(EXIT.ok);
      expect(new URL(h.sent[0].url).searchParams.get('mode')).toBe('live');
      const lines = h.out().split('\r\n').filter(Boolean).map((l) => l.split(','));
      expect(lines[0]).toEqual(['line', 'value']);
      const value = (k: string) => Number(lines.find((l) => l[0] === k)![1]);
      expect(value('redeemed_cents')).toBe(-1_500);
      expect(value('restored_cents')).toBe(200);
      const moves = ['earned_cents', 'adjusted_cents', 'redeemed_cents', 'restored_cents', 'expired_cents', 'reversed_cents', 'rejected_cents'].map(value);
      expect(value('opening_outstanding_cents') + moves.reduce((a, b) => a + b, 0)).toBe(value('closing_outstanding_cents'));
      expect(value('breakage_rate_bps')).toBe(1875);
    });

    it('refuses a missing period or a bad mode without calling the service', async () => {
      const h = harness();
      expect(await run(['finance', 'roll-forward', 'P-1', '--to', roll.to], h.deps)).toBe(EXIT.usage);
      expect(h.err()).toMatch(/required option '--from <instant>' not specified/);
      expect(await run(['finance', 'roll-forward', 'P-1', '--from', roll.from, '--to', roll.to, '--mode', 'staging'], h.deps)).toBe(EXIT.usage);
      expect(h.sent).toHaveLength(0);
    });
  });
});
