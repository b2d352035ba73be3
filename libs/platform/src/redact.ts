/**
 * Personal data and secrets never reach logs or the rejected-call list (issue 8), in any encoding.
 * Pure text functions: the gateway applies them to URLs, every process's logger to its lines.
 */

/** Query parameters whose value is personal data or a secret, compared after decoding and lower-casing. */
const SENSITIVE_PARAMS = new Set([
  'email', 'phone', 'external_ref', 'customer_ref', 'ref', 'api_key', 'apikey', 'key', 'token', 'access_token', 'secret',
  'password', 'authorization', 'auth', 'session', 'signature', 'code',
]);
/** Member ids that name a person: `ref:<external_ref>`, `phone:<number>`, `email:<address>`. */
const PII_SEGMENT = /^(ref|phone|email)\s*:/i;
const EMAIL = /[^\s"'<>()[\]{},;:/?#&=]+@[^\s"'<>()[\]{},;:/?#&=]+\.[^\s"'<>()[\]{},;:/?#&=]+/g;
const E164 = /\+\d{7,15}\b/g;

/** Percent-decoding until stable (double encoding), never throwing on broken sequences. */
export const decodeFully = (s: string, plusIsSpace = false): string => {
  let cur = plusIsSpace ? s.replace(/\+/g, ' ') : s;
  for (let i = 0; i < 4; i++) {
    let next: string;
    try {
      next = decodeURIComponent(cur);
    } catch {
      next = cur.replace(/%([0-9a-f]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    }
    if (next === cur) break;
    cur = next;
  }
  return cur;
};

const looksPersonal = (decoded: string): boolean => PII_SEGMENT.test(decoded) || /@/.test(decoded) || /^\s*\+?\d[\d\s().-]{6,}$/.test(decoded);

/**
 * A request URL without personal identifiers or secrets: path segments that decode to
 * `ref:…`/`phone:…`/`email:…`, an email address or a phone number, and query values of sensitive
 * parameters (names decoded first: `?%65mail=` is `email`) or that look personal themselves.
 */
export const redactUrl = (url: string): string => {
  const q = url.indexOf('?');
  const hash = url.indexOf('#');
  const pathEnd = q >= 0 ? q : hash >= 0 ? hash : url.length;
  const path = url.slice(0, pathEnd).split('/').map((seg) => {
    const d = decodeFully(seg);
    const m = PII_SEGMENT.exec(d);
    if (m) return `${m[1]}:[redacted]`;
    return looksPersonal(d) ? '[redacted]' : seg;
  }).join('/');
  if (q < 0) return path;
  const query = url.slice(q + 1, hash > q ? hash : undefined).split('&').map((part) => {
    if (!part) return part;
    const eq = part.indexOf('=');
    const rawName = eq < 0 ? part : part.slice(0, eq);
    const name = decodeFully(rawName, true).trim().toLowerCase().replace(/\[.*$/, '');
    if (eq < 0) return SENSITIVE_PARAMS.has(name) ? `${rawName}` : part;
    const value = decodeFully(part.slice(eq + 1), true);
    return SENSITIVE_PARAMS.has(name) || looksPersonal(value) ? `${rawName}=[redacted]` : part;
  }).join('&');
  return `${path}?${query}`;
};

/**
 * A log line without personal data: email addresses, E.164 numbers, member ids that name a person,
 * values PostgreSQL quotes in its errors (`invalid input syntax for type bigint: "…"`,
 * `Key (email)=(…)`), and URLs' sensitive query values.
 */
export const redactText = (text: string): string =>
  text
    .replace(/\b(Key \([^)]*\)=)\((?:[^()]|\([^()]*\))*\)/g, '$1([redacted])')
    .replace(/((?:input syntax for type|input value for enum|input syntax for)[^:"]*:\s*)"(?:[^"\\]|\\.)*"/gi, '$1"[redacted]"')
    .replace(/\b(value|input|string|character|literal|token)(\s+)"(?:[^"\\]|\\.)*"/gi, '$1$2"[redacted]"')
    .replace(/(\/(?:ref|phone|email)(?::|%3a))[^/\s?#"]*/gi, '$1[redacted]')
    .replace(/([?&](?:[^=&\s"]*)=)([^&\s"#]*)/g, (m, k: string, v: string) => {
      const name = decodeFully(k.slice(1, -1), true).trim().toLowerCase();
      return SENSITIVE_PARAMS.has(name) || looksPersonal(decodeFully(v, true)) ? `${k}[redacted]` : m;
    })
    .replace(EMAIL, '[email]')
    .replace(E164, '[phone]');
