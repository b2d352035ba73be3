import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import type { Mode } from '@loyalty/platform';
import { classifyAddress, isLoopbackName } from '../endpoints/address-policy';
import { Resolver, bareHost, systemResolver, targetsOwnPort } from '../endpoints/url-policy';

export interface SendRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  mode: Mode;
  timeoutMs: number;
}

/** What one attempt gave: a status (null when no response came), whether it counts as delivered, and why not. */
export interface SendResult {
  status_code: number | null;
  ok: boolean;
  duration_ms: number;
  error: string | null;
  /** the first bytes of the receiver's answer, for the attempt log */
  response_excerpt: string | null;
}

const EXCERPT_BYTES = 1024;
const USER_AGENT = 'Loyalty-Webhooks/1.0';

class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';
}

/**
 * The HTTP side of a delivery: one POST, no redirects followed, a hard deadline. In live mode the
 * connection may only go to a public address: IP literals are checked up front and host names are
 * resolved by a guarded look-up whose vetted address is the one the socket uses, so a DNS answer
 * that changes after the endpoint was created (rebinding) cannot reach an internal address.
 */
export class HttpSender {
  /**
   * Keep-alive pools, one per mode: a pooled live socket is connected to an address the guarded
   * look-up vetted; a sandbox socket (never vetted) can never be handed to a live delivery.
   */
  private readonly agents = {
    live: new https.Agent({ keepAlive: true, maxSockets: 16 }),
    testHttps: new https.Agent({ keepAlive: true, maxSockets: 16 }),
    testHttp: new http.Agent({ keepAlive: true, maxSockets: 16 }),
  };

  constructor(private readonly resolve: Resolver = systemResolver) {}

  close(): void {
    for (const a of Object.values(this.agents)) a.destroy();
  }

  async send(req: SendRequest): Promise<SendResult> {
    const started = Date.now();
    const done = (partial: Omit<SendResult, 'duration_ms'>): SendResult => ({ ...partial, duration_ms: Date.now() - started });
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return done({ status_code: null, ok: false, error: 'invalid url', response_excerpt: null });
    }
    const host = bareHost(url);
    if (req.mode === 'test' && (await targetsOwnPort(url, this.resolve))) {
      return done({ status_code: null, ok: false, error: "the url points to one of the service's own ports", response_excerpt: null });
    }
    if (req.mode === 'live') {
      if (url.protocol !== 'https:') return done({ status_code: null, ok: false, error: 'live endpoints must use https', response_excerpt: null });
      if (isLoopbackName(host)) return done({ status_code: null, ok: false, error: `${host} is not a public address`, response_excerpt: null });
      if (isIP(host) && classifyAddress(host) !== 'public') {
        return done({ status_code: null, ok: false, error: `${host} is not a public address`, response_excerpt: null });
      }
    }
    try {
      const { status, excerpt } = await this.post(url, req);
      const ok = status >= 200 && status < 300;
      return done({ status_code: status, ok, error: ok ? null : `receiver answered ${status}`, response_excerpt: excerpt });
    } catch (e) {
      return done({ status_code: null, ok: false, error: (e as Error).message || String(e), response_excerpt: null });
    }
  }

  private guardedLookup(): LookupFunction {
    return (hostname, options, callback) => {
      this.resolve(hostname).then(
        (all) => {
          const family = (options as { family?: number | string }).family;
          const wanted = family === 4 || family === 'IPv4' ? 4 : family === 6 || family === 'IPv6' ? 6 : 0;
          const addresses = all.filter((a) => wanted === 0 || isIP(a) === wanted);
          const blocked = all.find((a) => classifyAddress(a) !== 'public');
          if (blocked) {
            callback(new BlockedAddressError(`${hostname} resolves to a non-public address (${blocked})`), '', 0);
            return;
          }
          if (!addresses.length) {
            callback(Object.assign(new Error(`${hostname} did not resolve`), { code: 'ENOTFOUND' }), '', 0);
            return;
          }
          if ((options as { all?: boolean }).all) {
            (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, addresses.map((a) => ({ address: a, family: isIP(a) })));
          } else {
            callback(null, addresses[0], isIP(addresses[0]));
          }
        },
        (e: NodeJS.ErrnoException) => callback(e, '', 0),
      );
    };
  }

  private post(url: URL, req: SendRequest): Promise<{ status: number; excerpt: string }> {
    return new Promise((resolve, reject) => {
      const lib = url.protocol === 'https:' ? https : http;
      const body = Buffer.from(req.body, 'utf8');
      const request = lib.request(url, {
        method: 'POST',
        headers: { ...req.headers, 'content-type': 'application/json', 'content-length': String(body.length), 'user-agent': USER_AGENT },
        lookup: req.mode === 'live' ? this.guardedLookup() : undefined,
        agent: req.mode === 'live' ? this.agents.live : url.protocol === 'https:' ? this.agents.testHttps : this.agents.testHttp,
      });
      let settled = false;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        fn();
      };
      const deadline = setTimeout(() => {
        finish(() => reject(new Error(`timed out after ${req.timeoutMs} ms`)));
        request.destroy();
      }, req.timeoutMs);
      request.on('error', (e) => finish(() => reject(e)));
      request.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < EXCERPT_BYTES) chunks.push(c);
          size += c.length;
          if (size > 64 * 1024) {
            // the status is all that matters: do not read a large answer to its end
            finish(() => resolve({ status, excerpt: Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8') }));
            res.destroy();
          }
        });
        res.on('end', () => finish(() => resolve({ status, excerpt: Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8') })));
        res.on('error', (e) => finish(() => reject(e)));
        res.on('aborted', () => finish(() => resolve({ status, excerpt: Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8') })));
      });
      request.end(body);
    });
  }
}
