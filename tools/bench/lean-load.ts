import * as net from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * A small HTTP/1.1 load generator for the benchmarks: raw keep-alive sockets, one request in flight
 * per socket, each connection running the steps of `requests` in turn (autocannon's `requests`
 * sequence, so call sites change little). autocannon spends about 0.1 ms of CPU a request on the
 * benchmark machine, which the service under test then lacks; this spends a fraction of that: a
 * step without setupRequest is serialised once, a response is framed with Buffer.indexOf and a
 * single lower-cased string of its head, and its body is decoded only when onResponse asks for it.
 */

export interface LeanRequest { method?: string; path?: string; headers?: Record<string, string>; body?: string }

export interface LeanStep {
  /** defaults for the step */
  method?: string; path?: string; headers?: Record<string, string>; body?: string;
  /** returns the request to send (merged over the step's defaults), or null: the connection restarts its sequence at step 0 */
  setupRequest?: (req: LeanRequest, context: Record<string, unknown>) => LeanRequest | null;
  /** status, body text (decoded only when this function declares a second parameter, i.e. fn.length >= 2), the connection's context */
  onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
}

export interface LeanOptions {
  /** http://host:port[/default-path] (plain HTTP only) */
  url: string;
  /** keep-alive sockets, each runs the steps in turn, one request in flight per socket */
  connections: number;
  /** seconds (10 when neither this nor amount is given) */
  duration?: number;
  /** total requests issued across connections; the run ends when all of them are answered (or failed) */
  amount?: number;
  /** sent with every request (step and request headers override them by name, case-insensitive) */
  headers?: Record<string, string>;
  requests: LeanStep[];
}

export interface LeanResult {
  /** seconds, from the start to the last response */
  duration: number;
  /** responses received */
  requests: { total: number };
  '2xx': number; non2xx: number; errors: number;
  statuses: Record<string, number>;
  /** milliseconds: p50 and p99 rounded to integers (as autocannon does), mean to two decimals */
  latency: { p50: number; p99: number; mean: number };
}

/** How long in-flight requests may still take once a duration run is over. */
const GRACE_MS = 2_000;
/** Pause before reconnecting after a connection attempt that failed (no hot loop against a closed port). */
const RECONNECT_DELAY_MS = 20;
const CRLFCRLF = Buffer.from('\r\n\r\n', 'latin1');
const CRLF = Buffer.from('\r\n', 'latin1');

/** A growable array of latencies (ms). */
class Samples {
  private a = new Float64Array(16_384);
  n = 0;
  push(v: number): void {
    if (this.n === this.a.length) {
      const b = new Float64Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    this.a[this.n++] = v;
  }
  summary(): { p50: number; p99: number; mean: number } {
    if (this.n === 0) return { p50: 0, p99: 0, mean: 0 };
    const s = this.a.slice(0, this.n).sort();
    let sum = 0;
    for (let i = 0; i < s.length; i++) sum += s[i];
    const at = (q: number): number => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
    return { p50: Math.round(at(0.5)), p99: Math.round(at(0.99)), mean: Math.round((sum / s.length) * 100) / 100 };
  }
}

/** Header lines by lower-cased name; the last writer's spelling of a name wins. */
type HeaderLines = Record<string, string>;

const addHeaders = (into: HeaderLines, headers: Record<string, string> | undefined): HeaderLines => {
  if (!headers) return into;
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value === undefined || value === null) continue;
    const lower = name.toLowerCase();
    // the framing is this client's: it writes content-length itself, from the body it sends
    if (lower === 'content-length') continue;
    into[lower] = `${name}: ${value}\r\n`;
  }
  return into;
};

/** The request's text: request line, headers, content-length when there is a body, blank line, body. */
const serialise = (method: string, path: string, lines: HeaderLines, body: string | undefined): string => {
  let s = `${method} ${path} HTTP/1.1\r\n`;
  for (const k in lines) s += lines[k];
  if (body !== undefined) s += `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  else s += '\r\n';
  return s;
};

interface PreparedStep {
  step: LeanStep;
  method: string;
  path: string;
  body: string | undefined;
  /** global + step headers, with host first */
  lines: HeaderLines;
  /** the step's defaults in the original spelling, handed (copied) to setupRequest */
  headers: Record<string, string>;
  /** the whole request, when the step has no setupRequest */
  fixed: Buffer | null;
  wantsBody: boolean;
}

const enum Parse { Head, Body, UntilClose, ChunkSize, ChunkData, ChunkEnd, Trailers }

class Run {
  readonly conns: Conn[] = [];
  readonly samples = new Samples();
  readonly statuses: Record<string, number> = {};
  issued = 0;
  responses = 0;
  ok = 0;
  non2xx = 0;
  errors = 0;
  stopping = false;
  over = false;
  startedAt = 0;
  lastResponseAt = 0;
  private timers: NodeJS.Timeout[] = [];

  constructor(
    readonly host: string, readonly port: number, readonly steps: PreparedStep[], readonly amount: number | undefined,
    private readonly resolve: (r: LeanResult) => void, private readonly reject: (e: unknown) => void,
  ) {}

  start(connections: number, durationS: number | undefined): void {
    this.startedAt = performance.now();
    if (durationS !== undefined) {
      this.timers.push(setTimeout(() => {
        this.stopping = true;
        this.timers.push(setTimeout(() => this.finish(true), GRACE_MS));
        this.maybeFinish();
      }, durationS * 1000));
    }
    for (let i = 0; i < connections; i++) this.conns.push(new Conn(this));
    for (const c of this.conns) if (!this.over) c.issue();
    this.maybeFinish();
  }

  /** May a connection issue one more request? */
  mayIssue(): boolean {
    if (this.stopping || this.over) return false;
    if (this.amount !== undefined && this.issued >= this.amount) {
      this.stopping = true;
      return false;
    }
    return true;
  }

  /** One more request issued; the amount, once reached, stops the issuing. */
  count(): void {
    this.issued++;
    if (this.amount !== undefined && this.issued >= this.amount) this.stopping = true;
  }

  record(status: number, latency: number, at: number): void {
    this.responses++;
    this.lastResponseAt = at;
    this.samples.push(latency);
    if (status >= 200 && status < 300) this.ok++;
    else this.non2xx++;
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
  }

  maybeFinish(): void {
    if (this.over) return;
    let allStopped = true;
    for (const c of this.conns) {
      if (c.inFlight) return;
      if (!c.stopped) allStopped = false;
    }
    if (this.stopping || allStopped) this.finish(false);
  }

  /** Ends the run; `forced`: the grace period is over and what is still in flight counts as errors. */
  finish(forced: boolean): void {
    if (this.over) return;
    this.over = true;
    const end = performance.now();
    for (const c of this.conns) {
      if (forced && c.inFlight) this.errors++;
      c.inFlight = false;
    }
    const closing = this.closeAll();
    const result: LeanResult = {
      duration: ((this.responses > 0 ? this.lastResponseAt : end) - this.startedAt) / 1000,
      requests: { total: this.responses },
      '2xx': this.ok, non2xx: this.non2xx, errors: this.errors,
      statuses: this.statuses,
      latency: this.samples.summary(),
    };
    void closing.then(() => this.resolve(result));
  }

  /** A setupRequest or onResponse threw: the run stops and rejects with it. */
  fail(e: unknown): void {
    if (this.over) return;
    this.over = true;
    void this.closeAll().then(() => this.reject(e));
  }

  private closeAll(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    return Promise.all(this.conns.map((c) => c.close())).then(() => undefined);
  }
}

class Conn {
  readonly context: Record<string, unknown> = {};
  socket: net.Socket | null = null;
  connected = false;
  inFlight = false;
  stopped = false;
  step = 0;
  private sentAt = 0;
  private headMethod = false;
  private timer: NodeJS.Timeout | null = null;
  // response parser
  private state = Parse.Head;
  private pending: Buffer | null = null;
  private remaining = 0;
  private status = 0;
  private closeAfter = false;
  private parts: Buffer[] = [];

  constructor(private readonly run: Run) {}

  /** Sends the next request of the sequence, when the run allows one more. */
  issue(): void {
    const run = this.run;
    if (run.over || this.stopped || this.inFlight) return;
    if (!run.mayIssue()) {
      run.maybeFinish();
      return;
    }
    let data: Buffer | string;
    let method: string;
    for (;;) {
      const p = run.steps[this.step];
      if (!p.step.setupRequest) {
        data = p.fixed!;
        method = p.method;
        break;
      }
      let r: LeanRequest | null;
      try {
        r = p.step.setupRequest({ method: p.method, path: p.path, headers: { ...p.headers }, body: p.body }, this.context);
      } catch (e) {
        run.fail(e);
        return;
      }
      if (r) {
        const m = { method: p.method, path: p.path, body: p.body, ...r };
        method = m.method ?? 'GET';
        const lines = r.headers ? addHeaders({ ...p.lines }, r.headers) : p.lines;
        data = serialise(method, m.path ?? '/', lines, m.body);
        break;
      }
      if (this.step === 0) {
        // the sequence cannot start: this connection stops rather than spin
        run.errors++;
        this.stopped = true;
        this.close();
        run.maybeFinish();
        return;
      }
      this.step = 0;
    }
    run.count();
    const s = this.socket ?? this.open();
    this.inFlight = true;
    this.headMethod = method === 'HEAD';
    this.sentAt = performance.now();
    s.write(data);
  }

  private open(): net.Socket {
    const s = net.connect({ host: this.run.host, port: this.run.port });
    s.setNoDelay(true);
    this.socket = s;
    this.connected = false;
    this.resetParser();
    s.on('connect', () => {
      if (s !== this.socket) return;
      this.connected = true;
      // the request was written before the connection was up: its latency starts now
      if (this.inFlight) this.sentAt = performance.now();
    });
    s.on('data', (chunk: Buffer) => this.onData(s, chunk));
    s.on('error', () => undefined); // 'close' follows and does the accounting
    s.on('close', () => this.onClose(s));
    return s;
  }

  private resetParser(): void {
    this.state = Parse.Head;
    this.pending = null;
    this.parts = [];
    this.remaining = 0;
    this.closeAfter = false;
  }

  /** Drops the current socket without counting anything (its 'close' is then ignored). */
  private retire(): void {
    const s = this.socket;
    this.socket = null;
    this.connected = false;
    if (s) s.destroy();
  }

  /** Closes the socket (end of the run, or this connection stopped); resolves once it is closed. */
  close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const s = this.socket;
    this.socket = null;
    if (!s || s.closed) return Promise.resolve();
    return new Promise((resolve) => {
      s.once('close', () => resolve());
      s.destroy();
    });
  }

  private onClose(s: net.Socket): void {
    if (s !== this.socket) return;
    const run = this.run;
    const wasConnected = this.connected;
    this.socket = null;
    this.connected = false;
    if (run.over) return;
    if (this.inFlight && this.state === Parse.UntilClose) {
      // a response without length ends with the connection
      this.complete();
      return;
    }
    if (this.inFlight) {
      this.inFlight = false;
      run.errors++;
    }
    this.resetParser();
    // later steps depend on what earlier ones answered: start the sequence over
    this.step = 0;
    if (wasConnected) this.issue();
    else {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.issue();
      }, RECONNECT_DELAY_MS);
      run.maybeFinish();
    }
  }

  /** An unparseable response: counts as a failed request, the connection starts over on a new socket. */
  private protocolError(): void {
    this.retire();
    this.resetParser();
    if (this.inFlight) {
      this.inFlight = false;
      this.run.errors++;
    }
    this.step = 0;
    this.issue();
  }

  private onData(s: net.Socket, chunk: Buffer): void {
    if (s !== this.socket || this.run.over) return;
    let buf = chunk;
    if (this.pending) {
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = null;
    }
    let off = 0;
    const len = buf.length;
    while (off < len) {
      switch (this.state) {
        case Parse.Head: {
          const end = buf.indexOf(CRLFCRLF, off);
          if (end < 0) {
            this.pending = buf.subarray(off);
            return;
          }
          if (!this.inFlight || !this.parseHead(buf, off, end)) return this.protocolError();
          off = end + 4;
          // an interim answer (100 Continue): the final one follows
          if (this.status >= 100 && this.status < 200) break;
          if (this.state === Parse.Head) {
            this.complete();
            if (s !== this.socket) return;
          }
          break;
        }
        case Parse.Body:
        case Parse.ChunkData: {
          const n = Math.min(this.remaining, len - off);
          if (this.run.steps[this.step].wantsBody) this.parts.push(buf.subarray(off, off + n));
          off += n;
          this.remaining -= n;
          if (this.remaining === 0) {
            if (this.state === Parse.ChunkData) {
              this.state = Parse.ChunkEnd;
              this.remaining = 2;
            } else {
              this.complete();
              if (s !== this.socket) return;
            }
          }
          break;
        }
        case Parse.UntilClose: {
          if (this.run.steps[this.step].wantsBody) this.parts.push(off === 0 ? buf : buf.subarray(off));
          off = len;
          break;
        }
        case Parse.ChunkSize: {
          const eol = this.lineEnd(buf, off);
          if (eol < 0) return;
          // parseInt stops at a chunk extension (";name=value")
          const size = parseInt(buf.toString('latin1', off, eol), 16);
          if (!(size >= 0)) return this.protocolError();
          off = eol + 2;
          if (size === 0) this.state = Parse.Trailers;
          else {
            this.state = Parse.ChunkData;
            this.remaining = size;
          }
          break;
        }
        case Parse.ChunkEnd: {
          // the CRLF after a chunk's data, possibly split across reads
          const n = Math.min(this.remaining, len - off);
          off += n;
          this.remaining -= n;
          if (this.remaining === 0) this.state = Parse.ChunkSize;
          break;
        }
        case Parse.Trailers: {
          const eol = this.lineEnd(buf, off);
          if (eol < 0) return;
          const empty = eol === off;
          off = eol + 2;
          if (empty) {
            this.complete();
            if (s !== this.socket) return;
          }
          break;
        }
      }
    }
  }

  /** Where the line starting at `off` ends, or -1 with the rest kept for the next read. */
  private lineEnd(buf: Buffer, off: number): number {
    const eol = buf.indexOf(CRLF, off);
    if (eol < 0) this.pending = buf.subarray(off);
    return eol;
  }

  /**
   * Reads the status line and the framing headers of the head in buf[start, end) (without its final
   * blank line); sets status, closeAfter and the body's state. False when it is not an HTTP response.
   */
  private parseHead(buf: Buffer, start: number, end: number): boolean {
    // "HTTP/1.1 200 ..."
    if (end - start < 12 || buf[start] !== 0x48 || buf[start + 4] !== 0x2f || buf[start + 8] !== 0x20) return false;
    const d0 = buf[start + 9] - 48;
    const d1 = buf[start + 10] - 48;
    const d2 = buf[start + 11] - 48;
    if (d0 < 1 || d0 > 9 || d1 < 0 || d1 > 9 || d2 < 0 || d2 > 9) return false;
    const status = d0 * 100 + d1 * 10 + d2;
    this.status = status;
    if (status < 200) {
      this.state = Parse.Head;
      return true;
    }
    const head = buf.toString('latin1', start, end).toLowerCase();
    const http10 = buf[start + 7] === 0x30;
    const connection = headerValue(head, '\r\nconnection:');
    this.closeAfter = connection !== null ? connection.includes('close') || (http10 && !connection.includes('keep-alive')) : http10;
    this.parts = [];
    if (this.headMethod || status === 204 || status === 304) {
      this.state = Parse.Head;
      return true;
    }
    const te = headerValue(head, '\r\ntransfer-encoding:');
    if (te !== null && te.includes('chunked')) {
      this.state = Parse.ChunkSize;
      return true;
    }
    const cl = headerValue(head, '\r\ncontent-length:');
    if (cl !== null) {
      const n = Number(cl);
      if (!Number.isInteger(n) || n < 0 || cl === '') return false;
      this.remaining = n;
      this.state = n === 0 ? Parse.Head : Parse.Body;
      return true;
    }
    this.state = Parse.UntilClose;
    this.closeAfter = true;
    return true;
  }

  /** The response in flight is complete: counts it, hands it to onResponse, sends the next request. */
  private complete(): void {
    const run = this.run;
    const now = performance.now();
    this.inFlight = false;
    run.record(this.status, now - this.sentAt, now);
    const p = run.steps[this.step];
    const parts = this.parts;
    this.parts = [];
    this.state = Parse.Head;
    this.remaining = 0;
    if (p.step.onResponse) {
      let body = '';
      if (p.wantsBody && parts.length > 0) body = parts.length === 1 ? parts[0].toString('utf8') : Buffer.concat(parts).toString('utf8');
      try {
        p.step.onResponse(this.status, body, this.context);
      } catch (e) {
        run.fail(e);
        return;
      }
    }
    this.step = (this.step + 1) % run.steps.length;
    if (this.closeAfter) {
      this.retire();
      this.resetParser();
    }
    this.issue();
  }
}

/** The value of a header in a lower-cased head (`name` given as "\r\nname:"), trimmed; null when absent. */
const headerValue = (head: string, name: string): string | null => {
  const i = head.indexOf(name);
  if (i < 0) return null;
  const from = i + name.length;
  const eol = head.indexOf('\r\n', from);
  return (eol < 0 ? head.slice(from) : head.slice(from, eol)).trim();
};

/** Runs the load; resolves with autocannon-like figures. */
export const leanLoad = (opts: LeanOptions): Promise<LeanResult> => {
  const url = new URL(opts.url);
  if (url.protocol !== 'http:') throw new Error(`lean-load: only http:// URLs (got ${opts.url})`);
  if (!(opts.connections >= 1)) throw new Error('lean-load: connections must be at least 1');
  if (opts.requests.length === 0) throw new Error('lean-load: no requests');
  if (opts.amount !== undefined && !(opts.amount >= 0)) throw new Error('lean-load: amount must not be negative');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port ? Number(url.port) : 80;
  const defaultPath = `${url.pathname || '/'}${url.search}`;
  const steps = opts.requests.map((step): PreparedStep => {
    const lines = addHeaders(addHeaders({ host: `host: ${url.host}\r\n` }, opts.headers), step.headers);
    const headers: Record<string, string> = {};
    for (const h of [opts.headers, step.headers]) {
      if (!h) continue;
      for (const name of Object.keys(h)) {
        for (const k of Object.keys(headers)) if (k.toLowerCase() === name.toLowerCase()) delete headers[k];
        headers[name] = h[name];
      }
    }
    const method = step.method ?? 'GET';
    const path = step.path ?? defaultPath;
    return {
      step, method, path, body: step.body, lines, headers,
      fixed: step.setupRequest ? null : Buffer.from(serialise(method, path, lines, step.body), 'utf8'),
      wantsBody: !!step.onResponse && step.onResponse.length >= 2,
    };
  });
  const duration = opts.duration ?? (opts.amount === undefined ? 10 : undefined);
  return new Promise<LeanResult>((resolve, reject) => {
    const run = new Run(host, port, steps, opts.amount, resolve, reject);
    run.start(Math.floor(opts.connections), duration);
  });
};
