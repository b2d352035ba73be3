/**
 * Pure mapping from what an operator typed to the admin-plane request it means
 * (decisions §10). No I/O here: files arrive already read, the network is elsewhere.
 */

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface AdminRequest {
  method: HttpMethod;
  /** Path under the service base URL, always starting with `/admin/v1/`. */
  path: string;
  body?: unknown;
}

/** A mistake in the command line or an input file: reported without calling the service. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const MODES = ['live', 'test'] as const;
export type Mode = (typeof MODES)[number];

export const SCOPES = ['ingest', 'read', 'act', 'webhooks'] as const;
export type Scope = (typeof SCOPES)[number];

export const MEMBER_COMMANDS = ['suspend', 'reinstate', 'pause', 'resume'] as const;
export type MemberCommand = (typeof MEMBER_COMMANDS)[number];

export const REVIEW_DECISIONS = ['approve', 'reject'] as const;
export type ReviewDecision = (typeof REVIEW_DECISIONS)[number];

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One path segment, URL-encoded; ids are opaque to the CLI. */
const segment = (value: string, what: string): string => {
  const v = value.trim();
  if (!v) throw new UsageError(`${what} must not be empty`);
  return encodeURIComponent(v);
};

export const parseMode = (value: string): Mode => {
  const v = value.trim().toLowerCase();
  if (!(MODES as readonly string[]).includes(v)) throw new UsageError(`mode must be live or test, got "${value}"`);
  return v as Mode;
};

/** `read,act` → ['read', 'act']; order kept, duplicates dropped, unknown scopes refused. */
export const parseScopes = (value: string): Scope[] => {
  const scopes: Scope[] = [];
  for (const raw of value.split(',')) {
    const s = raw.trim().toLowerCase();
    if (!s) continue;
    if (!(SCOPES as readonly string[]).includes(s)) {
      throw new UsageError(`unknown scope "${raw.trim()}" (scopes: ${SCOPES.join(', ')})`);
    }
    if (!scopes.includes(s as Scope)) scopes.push(s as Scope);
  }
  if (scopes.length === 0) throw new UsageError('--scopes needs at least one scope');
  return scopes;
};

export const parsePositiveInt = (value: string, what: string): number => {
  const v = value.trim();
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`${what} must be a whole number of at least 1, got "${value}"`);
  return n;
};

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400, w: 604_800 };

/** Seconds to move a test clock: `90`, `90s`, `15m`, `2h`, `30d` or `1w`. */
export const parseDuration = (value: string): number => {
  const m = /^(\d+)\s*([smhdw]?)$/i.exec(value.trim());
  if (!m) throw new UsageError(`duration must be seconds or a number with s, m, h, d or w, got "${value}"`);
  const seconds = Number(m[1]) * UNIT_SECONDS[(m[2] || 's').toLowerCase()];
  if (!Number.isSafeInteger(seconds) || seconds < 1) throw new UsageError(`duration must be at least 1 second, got "${value}"`);
  return seconds;
};

/** A key's rate limit: both `--burst` and `--per-second`, or neither (the service default). */
export const rateLimit = (burst?: string, perSecond?: string): { burst: number; per_second: number } | undefined => {
  if (burst === undefined && perSecond === undefined) return undefined;
  if (burst === undefined || perSecond === undefined) throw new UsageError('--burst and --per-second go together');
  return { burst: parsePositiveInt(burst, '--burst'), per_second: parsePositiveInt(perSecond, '--per-second') };
};

/** A rules file holds either the array of rules or `{ "rules": [...] }` (what `programs get` prints). */
export const rulesFrom = (content: unknown, file = 'rules file'): unknown[] => listFrom(content, 'rules', file);
/** A tiers file holds either the array of tiers or `{ "tiers": [...] }`. */
export const tiersFrom = (content: unknown, file = 'tiers file'): unknown[] => listFrom(content, 'tiers', file);

/** A settings file holds the settings object, or `{ "settings": {...} }`. */
export const settingsFrom = (content: unknown, file = 'settings file'): Json => {
  if (isObject(content) && Object.keys(content).length === 1 && isObject(content.settings)) return content.settings;
  if (!isObject(content)) throw new UsageError(`${file}: expected a JSON object of settings`);
  return content;
};

const listFrom = (content: unknown, key: string, file: string): unknown[] => {
  if (Array.isArray(content)) return content;
  if (isObject(content) && Array.isArray(content[key])) return content[key] as unknown[];
  throw new UsageError(`${file}: expected a JSON array of ${key} or an object with "${key}"`);
};

export const createProgram = (o: { name: string; currency: string; rules?: unknown[]; tiers?: unknown[]; settings?: Json }): AdminRequest => {
  if (!o.name.trim()) throw new UsageError('--name must not be empty');
  if (!o.currency.trim()) throw new UsageError('--currency must not be empty');
  const body: Json = { program_name: o.name, currency_name: o.currency };
  if (o.settings !== undefined) body.settings = o.settings;
  if (o.rules !== undefined) body.rules = o.rules;
  if (o.tiers !== undefined) body.tiers = o.tiers;
  return { method: 'POST', path: '/admin/v1/programs', body };
};

export const getProgram = (pid: string): AdminRequest => ({ method: 'GET', path: `/admin/v1/programs/${segment(pid, 'programme id')}` });

export const patchProgram = (pid: string, o: { name?: string; currency?: string; settings?: Json }): AdminRequest => {
  const body: Json = {};
  if (o.name !== undefined) body.program_name = o.name;
  if (o.currency !== undefined) body.currency_name = o.currency;
  if (o.settings !== undefined) body.settings = o.settings;
  if (Object.keys(body).length === 0) throw new UsageError('nothing to change: pass --name, --currency or --settings');
  return { method: 'PATCH', path: `/admin/v1/programs/${segment(pid, 'programme id')}`, body };
};

export const putRules = (pid: string, rules: unknown[]): AdminRequest =>
  ({ method: 'PUT', path: `/admin/v1/programs/${segment(pid, 'programme id')}/rules`, body: { rules } });

export const putTiers = (pid: string, tiers: unknown[]): AdminRequest =>
  ({ method: 'PUT', path: `/admin/v1/programs/${segment(pid, 'programme id')}/tiers`, body: { tiers } });

export const createKey = (pid: string, o: { mode: string; scopes?: string; name?: string; burst?: string; perSecond?: string }): AdminRequest => {
  const body: Json = { mode: parseMode(o.mode) };
  if (o.scopes !== undefined) body.scopes = parseScopes(o.scopes);
  if (o.name !== undefined) body.name = o.name;
  const rate = rateLimit(o.burst, o.perSecond);
  if (rate) body.rate_limit = rate;
  return { method: 'POST', path: `/admin/v1/programs/${segment(pid, 'programme id')}/keys`, body };
};

export const listKeys = (pid: string): AdminRequest => ({ method: 'GET', path: `/admin/v1/programs/${segment(pid, 'programme id')}/keys` });
export const rotateKey = (kid: string): AdminRequest => ({ method: 'POST', path: `/admin/v1/keys/${segment(kid, 'key id')}/rotate` });
export const revokeKey = (kid: string): AdminRequest => ({ method: 'DELETE', path: `/admin/v1/keys/${segment(kid, 'key id')}` });

export const memberState = (id: string, command: MemberCommand, mode?: string): AdminRequest => ({
  method: 'POST',
  path: `/admin/v1/members/${segment(id, 'member id')}/${command}`,
  body: mode === undefined ? {} : { mode: parseMode(mode) },
});

export const advanceClock = (pid: string, duration: string): AdminRequest => ({
  method: 'POST', path: `/admin/v1/programs/${segment(pid, 'programme id')}/test-clock/advance`, body: { seconds: parseDuration(duration) },
});

export const rejectedCalls = (pid: string, limit?: string): AdminRequest => ({
  method: 'GET',
  path: `/admin/v1/programs/${segment(pid, 'programme id')}/rejected-calls${limit === undefined ? '' : `?limit=${parsePositiveInt(limit, '--limit')}`}`,
});

export const reviewEntry = (id: string, decision: ReviewDecision): AdminRequest =>
  ({ method: 'POST', path: `/admin/v1/ledger-entries/${segment(id, 'ledger entry id')}/${decision}` });

export const reviewReferral = (id: string, decision: ReviewDecision): AdminRequest =>
  ({ method: 'POST', path: `/admin/v1/referrals/${segment(id, 'referral id')}/${decision}` });

export const importMigration = (pid: string, mode: string, entries: Json[]): AdminRequest => {
  if (entries.length === 0) throw new UsageError('the migration file has no entries');
  return { method: 'POST', path: `/admin/v1/programs/${segment(pid, 'programme id')}/migrations`, body: { mode: parseMode(mode), entries } };
};

export const reverseMigration = (batch: string): AdminRequest =>
  ({ method: 'DELETE', path: `/admin/v1/migrations/${segment(batch, 'batch id')}` });

export const wipeSandbox = (pid: string): AdminRequest =>
  ({ method: 'POST', path: `/admin/v1/programs/${segment(pid, 'programme id')}/sandbox/wipe` });

/** GET /admin/v1/programs/{pid}/finance/roll-forward (decisions §9a); the service checks the instants. */
export const rollForward = (pid: string, o: { from: string; to: string; mode?: string }): AdminRequest => {
  if (o.mode !== undefined && !(MODES as readonly string[]).includes(o.mode)) throw new UsageError(`--mode must be live or test, got "${o.mode}"`);
  const q = new URLSearchParams({ mode: o.mode ?? 'live', from: o.from, to: o.to });
  return { method: 'GET', path: `/admin/v1/programs/${segment(pid, 'programme id')}/finance/roll-forward?${q.toString()}` };
};

interface RollForwardData {
  from: string; to: string;
  opening: Record<string, number>; closing: Record<string, number>;
  movements: Record<string, number>; breakage: { rate_bps: number; expected_redemption_cents: number };
}

/** How each movement moves outstanding (decisions §9a): the CSV shows it signed, so the lines foot to the closing figure. */
const MOVEMENT_LINES: [string, 1 | -1][] = [
  ['earned_cents', 1], ['adjusted_cents', 1], ['redeemed_cents', -1], ['restored_cents', 1], ['expired_cents', -1], ['reversed_cents', -1], ['rejected_cents', -1],
];

/**
 * A roll-forward as a two-column CSV (`line,value`, RFC 4180, CRLF) for a spreadsheet: the period,
 * the opening outstanding, each movement signed as it moves outstanding, the closing outstanding
 * (so opening + the movement lines = closing), then the balances behind them and the breakage.
 */
export const rollForwardCsv = (data: unknown): string => {
  const d = data as RollForwardData;
  const lines: [string, string | number][] = [
    ['from', d.from], ['to', d.to], ['opening_outstanding_cents', d.opening.outstanding_cents],
    ...MOVEMENT_LINES.map(([k, sign]): [string, number] => [k, sign * d.movements[k]]),
    ['closing_outstanding_cents', d.closing.outstanding_cents],
    ['opening_available_cents', d.opening.available_cents], ['opening_pending_cents', d.opening.pending_cents], ['opening_members', d.opening.members],
    ['closing_available_cents', d.closing.available_cents], ['closing_pending_cents', d.closing.pending_cents], ['closing_members', d.closing.members],
    ['breakage_rate_bps', d.breakage.rate_bps], ['expected_redemption_cents', d.breakage.expected_redemption_cents],
  ];
  return ['line,value', ...lines.map(([k, v]) => `${k},${v}`)].join('\r\n') + '\r\n';
};
