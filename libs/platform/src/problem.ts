/** RFC 9457 problems with the slugs of decisions §2. Domain code throws ProblemError; the gateway renders it. */
export const PROBLEM_SLUGS = {
  validation: { status: 422, title: 'Validation failed' },
  'malformed-json': { status: 400, title: 'Malformed JSON' },
  unauthenticated: { status: 401, title: 'Unauthenticated' },
  'insufficient-scope': { status: 403, title: 'Insufficient scope' },
  'not-found': { status: 404, title: 'Not found' },
  'phone-conflict': { status: 409, title: 'Phone belongs to another member' },
  'invalid-state': { status: 409, title: 'Invalid state' },
  conflict: { status: 409, title: 'Conflict' },
  'idempotency-key-reused': { status: 409, title: 'Idempotency key reused with a different body' },
  'idempotency-in-progress': { status: 409, title: 'Request with this idempotency key is in progress' },
  'balance-insufficient': { status: 422, title: 'Spendable balance too low' },
  'rule-ineligible': { status: 422, title: 'Programme rules refuse this request' },
  'redemption-not-allowed': { status: 402, title: 'Redemption not allowed for this member' },
  'payload-too-large': { status: 413, title: 'Payload too large' },
  'rate-limited': { status: 429, title: 'Rate limit exceeded' },
  backlog: { status: 429, title: 'Event backlog full' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  internal: { status: 500, title: 'Internal server error' },
  unavailable: { status: 503, title: 'Service unavailable' },
} as const;
export type ProblemSlug = keyof typeof PROBLEM_SLUGS;

export interface FieldError { path: string; message: string }

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail?: string;
  errors?: FieldError[];
  [extra: string]: unknown;
}

/** A serialisable problem (crosses the command bus as plain JSON). */
export interface ProblemData {
  slug: ProblemSlug;
  detail?: string;
  errors?: FieldError[];
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
}

export class ProblemError extends Error {
  constructor(readonly problem: ProblemData) {
    super(problem.detail ?? PROBLEM_SLUGS[problem.slug].title);
    this.name = 'ProblemError';
  }
  get status(): number { return PROBLEM_SLUGS[this.problem.slug].status; }
  static is(e: unknown): e is ProblemError { return e instanceof ProblemError; }
}

export const problem = (slug: ProblemSlug, detail?: string, extra?: Partial<Omit<ProblemData, 'slug' | 'detail'>>): ProblemError =>
  new ProblemError({ slug, detail, ...extra });
export const notFound = (what: string): ProblemError => problem('not-found', `${what} not found`);

/** PostgreSQL SQLSTATEs of a server that is going away or not taking connections: try again later. */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '53400']);
const UNAVAILABLE_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND']);

/**
 * Whether an error means a dependency (the database) is unreachable or restarting rather than a
 * defect: a connection failure (SQLSTATE class 08), a server shutting down or refusing connections,
 * a socket error, or `pg`'s "Connection terminated". Such a call is answered 503 `unavailable`
 * with Retry-After (every write is safe to retry with its idempotency key), not 500.
 */
export const isUnavailable = (e: unknown): boolean => {
  if (!e || typeof e !== 'object') return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && (code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_ERRNOS.has(code))) return true;
  const message = (e as { message?: unknown }).message;
  return typeof message === 'string' && /^Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect/.test(message);
};

/** The problem for an unreachable dependency (see isUnavailable). */
export const unavailable = (): ProblemError =>
  problem('unavailable', 'A dependency of the service is unavailable; retry shortly with the same idempotency key', { headers: { 'Retry-After': '1' } });
export const validation = (errors: FieldError[], detail = 'The request is invalid'): ProblemError =>
  problem('validation', detail, { errors });

export const renderProblem = (p: ProblemData, baseUrl: string): ProblemBody => {
  const def = PROBLEM_SLUGS[p.slug];
  const body: ProblemBody = { type: `${baseUrl}/docs/api/errors#${p.slug}`, title: def.title, status: def.status };
  if (p.detail) body.detail = p.detail;
  if (p.errors) body.errors = p.errors;
  Object.assign(body, p.extra ?? {});
  return body;
};

/** JSON pointer (RFC 6901) from property path segments. */
export const pointer = (...segments: (string | number)[]): string =>
  segments.length === 0 ? '' : '/' + segments.map((s) => String(s).replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
