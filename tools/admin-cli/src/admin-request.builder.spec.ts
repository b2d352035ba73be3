import * as build from './admin-request.builder';
import { UsageError } from './admin-request.builder';

describe('admin request builder', () => {
  describe('programmes', () => {
    it('creates a programme with the admin plane\'s field names, leaving out what was not given', () => {
      expect(build.createProgram({ name: 'Acme', currency: 'stars' })).toEqual({
        method: 'POST', path: '/admin/v1/programs', body: { program_name: 'Acme', currency_name: 'stars' },
      });
      const rules = [{ type: 'base', earn_rate_pct: 5 }];
      const tiers = [{ name: 'Gold', level: 1 }];
      expect(build.createProgram({ name: 'Acme', currency: 'stars', rules, tiers, settings: { earn_on: 'order.placed' } }).body).toEqual({
        program_name: 'Acme', currency_name: 'stars', rules, tiers, settings: { earn_on: 'order.placed' },
      });
    });

    it('refuses an empty name or currency', () => {
      expect(() => build.createProgram({ name: ' ', currency: 'stars' })).toThrow(UsageError);
      expect(() => build.createProgram({ name: 'Acme', currency: '' })).toThrow(/--currency/);
    });

    it('patches only the fields given and refuses an empty patch', () => {
      expect(build.patchProgram('P-1', { currency: 'gems' })).toEqual({ method: 'PATCH', path: '/admin/v1/programs/P-1', body: { currency_name: 'gems' } });
      expect(() => build.patchProgram('P-1', {})).toThrow(/nothing to change/);
    });

    it('url-encodes ids so that a stray slash cannot reach another endpoint', () => {
      expect(build.getProgram('P-1/keys').path).toBe('/admin/v1/programs/P-1%2Fkeys');
      expect(() => build.getProgram('  ')).toThrow(/programme id must not be empty/);
    });

    it('puts rules and tiers wrapped in their key', () => {
      expect(build.putRules('P-1', [{ type: 'base' }])).toEqual({ method: 'PUT', path: '/admin/v1/programs/P-1/rules', body: { rules: [{ type: 'base' }] } });
      expect(build.putTiers('P-1', [])).toEqual({ method: 'PUT', path: '/admin/v1/programs/P-1/tiers', body: { tiers: [] } });
    });
  });

  describe('input files', () => {
    it('accepts rules and tiers as an array or wrapped in an object (what `programs get` prints)', () => {
      expect(build.rulesFrom([{ type: 'base' }])).toEqual([{ type: 'base' }]);
      expect(build.rulesFrom({ id: 'P-1', rules: [{ type: 'base' }], tiers: [] })).toEqual([{ type: 'base' }]);
      expect(build.tiersFrom({ tiers: [{ name: 'Gold' }] })).toEqual([{ name: 'Gold' }]);
      expect(() => build.rulesFrom({ type: 'base' }, 'r.json')).toThrow(/r\.json: expected a JSON array of rules/);
    });

    it('accepts settings as the object or wrapped in {settings}', () => {
      expect(build.settingsFrom({ earn_on: 'order.paid' })).toEqual({ earn_on: 'order.paid' });
      expect(build.settingsFrom({ settings: { earn_on: 'order.paid' } })).toEqual({ earn_on: 'order.paid' });
      expect(() => build.settingsFrom([1])).toThrow(UsageError);
    });
  });

  describe('keys', () => {
    it('creates a key with mode, scopes, name and rate limit', () => {
      expect(build.createKey('P-1', { mode: 'TEST', scopes: 'read, act,read', name: 'till', burst: '100', perSecond: '20' })).toEqual({
        method: 'POST', path: '/admin/v1/programs/P-1/keys',
        body: { mode: 'test', scopes: ['read', 'act'], name: 'till', rate_limit: { burst: 100, per_second: 20 } },
      });
      expect(build.createKey('P-1', { mode: 'live' }).body).toEqual({ mode: 'live' });
    });

    it('refuses unknown modes and scopes, half a rate limit and non-integers', () => {
      expect(() => build.createKey('P-1', { mode: 'prod' })).toThrow(/mode must be live or test/);
      expect(() => build.createKey('P-1', { mode: 'live', scopes: 'read,admin' })).toThrow(/unknown scope "admin"/);
      expect(() => build.createKey('P-1', { mode: 'live', scopes: ' , ' })).toThrow(/at least one scope/);
      expect(() => build.createKey('P-1', { mode: 'live', burst: '10' })).toThrow(/go together/);
      expect(() => build.createKey('P-1', { mode: 'live', burst: '10', perSecond: '2.5' })).toThrow(/--per-second must be a whole number/);
      expect(() => build.createKey('P-1', { mode: 'live', burst: '0', perSecond: '1' })).toThrow(/--burst/);
    });

    it('rotates with POST and revokes with DELETE', () => {
      expect(build.rotateKey('K-1')).toEqual({ method: 'POST', path: '/admin/v1/keys/K-1/rotate' });
      expect(build.revokeKey('K-1')).toEqual({ method: 'DELETE', path: '/admin/v1/keys/K-1' });
      expect(build.listKeys('P-1')).toEqual({ method: 'GET', path: '/admin/v1/programs/P-1/keys' });
    });
  });

  describe('members, reviews, sandbox', () => {
    it('changes a member\'s state, with the mode only when given', () => {
      expect(build.memberState('M-1', 'suspend')).toEqual({ method: 'POST', path: '/admin/v1/members/M-1/suspend', body: {} });
      expect(build.memberState('M-1', 'resume', 'test').body).toEqual({ mode: 'test' });
    });

    it('approves and rejects entries and referrals', () => {
      expect(build.reviewEntry('LE-1', 'approve')).toEqual({ method: 'POST', path: '/admin/v1/ledger-entries/LE-1/approve' });
      expect(build.reviewReferral('RF-1', 'reject')).toEqual({ method: 'POST', path: '/admin/v1/referrals/RF-1/reject' });
    });

    it('advances the test clock by a duration in seconds', () => {
      expect(build.advanceClock('P-1', '30d')).toEqual({ method: 'POST', path: '/admin/v1/programs/P-1/test-clock/advance', body: { seconds: 2_592_000 } });
      expect(build.parseDuration('90')).toBe(90);
      expect(build.parseDuration('15m')).toBe(900);
      expect(build.parseDuration('2H')).toBe(7200);
      expect(build.parseDuration('1w')).toBe(604_800);
      expect(() => build.parseDuration('0')).toThrow(/at least 1 second/);
      expect(() => build.parseDuration('-5')).toThrow(UsageError);
      expect(() => build.parseDuration('1.5h')).toThrow(UsageError);
    });

    it('lists rejected calls with an optional limit', () => {
      expect(build.rejectedCalls('P-1').path).toBe('/admin/v1/programs/P-1/rejected-calls');
      expect(build.rejectedCalls('P-1', '20').path).toBe('/admin/v1/programs/P-1/rejected-calls?limit=20');
      expect(() => build.rejectedCalls('P-1', 'all')).toThrow(/--limit/);
    });

    it('wipes the sandbox, imports and reverses migrations', () => {
      expect(build.wipeSandbox('P-1')).toEqual({ method: 'POST', path: '/admin/v1/programs/P-1/sandbox/wipe' });
      const entries = [{ email: 'a@example.com', amount_cents: 500 }];
      expect(build.importMigration('P-1', 'live', entries)).toEqual({ method: 'POST', path: '/admin/v1/programs/P-1/migrations', body: { mode: 'live', entries } });
      expect(() => build.importMigration('P-1', 'live', [])).toThrow(/no entries/);
      expect(build.reverseMigration('MB-1')).toEqual({ method: 'DELETE', path: '/admin/v1/migrations/MB-1' });
    });
  });
});
