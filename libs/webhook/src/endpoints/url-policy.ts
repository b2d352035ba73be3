import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { type Mode, ownPorts } from '@loyalty/platform';
import { AddressClass, classifyAddress, isLoopbackHost, isLoopbackName } from './address-policy';

/** Resolves a host name to every address it has (dns.lookup with all: true, as the HTTP client would). */
export type Resolver = (host: string) => Promise<string[]>;

export const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** How long URL validation waits for DNS before giving up on the look-up (the delivery re-checks anyway). */
const DNS_TIMEOUT_MS = 3_000;

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(Object.assign(new Error('DNS look-up timed out'), { code: 'ETIMEOUT' })), ms);
    t.unref();
    p.then((v) => { clearTimeout(t); resolve(v); }, (e: unknown) => { clearTimeout(t); reject(e); });
  });

export const MAX_URL_LENGTH = 2048;

const describe = (cls: AddressClass): string => (cls === 'unique-local' ? 'a unique-local' : `a ${cls}`);

/** `hostname` of a URL without IPv6 brackets. */
export const bareHost = (u: URL): string => (u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname);


/** The port a URL connects to. */
export const portOf = (u: URL): number => Number(u.port || (u.protocol === 'https:' ? 443 : 80));

/**
 * Whether a URL would connect to one of this deployment's own ports on this host (loopback or
 * the unspecified address, named or resolved): refused even in the sandbox, where loopback is
 * otherwise allowed.
 */
export const targetsOwnPort = async (u: URL, resolve: Resolver = systemResolver): Promise<boolean> => {
  if (!ownPorts().has(portOf(u))) return false;
  const host = bareHost(u);
  const local = (a: string) => { const c = classifyAddress(a); return c === 'loopback' || c === 'unspecified'; };
  if (isLoopbackName(host) || (isIP(host) && local(host))) return true;
  if (isIP(host)) return false;
  try {
    return (await withTimeout(resolve(host), DNS_TIMEOUT_MS)).some(local);
  } catch {
    return false;
  }
};

/**
 * The rules of decisions §8 for an endpoint URL; returns what is wrong (empty when fine).
 * - absolute http(s) URL, at most 2,048 characters, no credentials;
 * - https, except http to a loopback host with a sandbox (test) key;
 * - live mode: the host (an IP literal, or every address DNS gives it) must be public: never
 *   loopback, private, CGNAT, link-local, unique-local, multicast, reserved or unspecified (SSRF).
 *   A name that does not resolve now is accepted; every delivery checks the address it connects to.
 */
export const checkEndpointUrl = async (raw: string, mode: Mode, resolve: Resolver = systemResolver): Promise<string | null> => {
  if (raw.length > MAX_URL_LENGTH) return `url must be at most ${MAX_URL_LENGTH} characters`;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'url must be an absolute URL';
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'url must use https';
  // WHATWG parsing is forgiving: `https:///path` and `https:/path` parse with the path as host
  if (!u.hostname || !/^https?:\/\/[^/?#@:]/i.test(raw.trim()) || /^\.+$/.test(u.hostname)) return 'url must name a host';
  if (u.username || u.password) return 'url must not contain credentials';
  const host = bareHost(u);
  if (u.protocol === 'http:' && !(mode === 'test' && isLoopbackHost(host))) {
    return mode === 'test' ? 'url must use https (http is allowed only for a loopback host in test mode)' : 'url must use https';
  }
  if (mode === 'test') return (await targetsOwnPort(u, resolve)) ? "url must not point to one of the service's own ports" : null;
  if (isLoopbackName(host)) return 'url must not point to a loopback address';
  if (isIP(host)) {
    const cls = classifyAddress(host);
    return cls === 'public' ? null : `url must not point to ${describe(cls)} address`;
  }
  let addresses: string[];
  try {
    addresses = await withTimeout(resolve(host), DNS_TIMEOUT_MS);
  } catch {
    return null; // not resolvable now: nothing to refuse; delivery refuses a non-public address
  }
  for (const a of addresses) {
    const cls = classifyAddress(a);
    if (cls !== 'public') return `url resolves to ${describe(cls)} address (${a})`;
  }
  return null;
};
