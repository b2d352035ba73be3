import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, createServer as createNetServer, Server as NetServer, Socket } from 'node:net';
import { leanLoad, LeanResult } from './lean-load';

/** What the test server saw. */
interface Seen {
  hits: Record<string, number>;
  created: Map<Socket, number>;
  /** (created on this socket, asked for) pairs of the second step */
  pairs: Array<[number | undefined, number]>;
  sequence: string[];
  posted: Array<{ bytes: number; declared: string | undefined; token: string | string[] | undefined; text: string }>;
  sockets: Set<Socket>;
}

const CHUNK_PARTS = ['{"parts":[', '"a",', '"b",', '"c"', ']}'];
const BIG = 'x'.repeat(150_000) + 'é';

const listen = async (s: Server | NetServer): Promise<number> => {
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return (s.address() as AddressInfo).port;
};
const close = (s: Server | NetServer): Promise<void> => new Promise((resolve) => s.close(() => resolve()));

const readBody = (req: IncomingMessage): Promise<Buffer> => new Promise((resolve) => {
  const parts: Buffer[] = [];
  req.on('data', (b: Buffer) => parts.push(b));
  req.on('end', () => resolve(Buffer.concat(parts)));
});

const expectSane = (r: LeanResult): void => {
  expect(r['2xx'] + r.non2xx).toBe(r.requests.total);
  expect(Object.values(r.statuses).reduce((a, b) => a + b, 0)).toBe(r.requests.total);
  for (const v of [r.latency.p50, r.latency.p99, r.latency.mean, r.duration]) {
    expect(Number.isFinite(v)).toBe(true);
    expect(v).toBeGreaterThanOrEqual(0);
  }
  expect(r.latency.p99).toBeGreaterThanOrEqual(r.latency.p50);
};

describe('lean-load: a low-CPU HTTP/1.1 load generator', () => {
  let server: Server;
  let url: string;
  let seen: Seen;
  let nextId = 0;

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      void (async () => {
        const path = req.url ?? '';
        const route = path.split('?')[0].replace(/\/\d+$/, '/:id');
        seen.hits[route] = (seen.hits[route] ?? 0) + 1;
        seen.sockets.add(req.socket);
        const body = await readBody(req);
        if (route === '/ok') return res.end('ok');
        if (route === '/seq') {
          seen.sequence.push(new URL(path, 'http://x').searchParams.get('s') ?? '?');
          return res.end();
        }
        if (route === '/items' && req.method === 'POST') {
          const id = ++nextId;
          seen.created.set(req.socket, id);
          res.writeHead(201, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ id }));
        }
        if (route === '/items/:id') {
          seen.pairs.push([seen.created.get(req.socket), Number(path.split('/').pop())]);
          return res.end();
        }
        if (route === '/chunked') {
          // no content-length: Node sends each write as a chunk
          for (const p of CHUNK_PARTS) res.write(p);
          // "é" split between two chunks: the body is decoded after the chunks are joined
          const e = Buffer.from('é');
          res.write(e.subarray(0, 1));
          res.write(e.subarray(1));
          return res.end();
        }
        if (route === '/big') return res.end(BIG);
        if (route === '/big-chunked') {
          res.write(BIG.slice(0, 70_000));
          res.write(BIG.slice(70_000));
          return res.end();
        }
        if (route === '/posted') {
          seen.posted.push({ bytes: body.length, declared: req.headers['content-length'], token: req.headers['x-token'], text: body.toString('utf8') });
          return res.end(String(body.length));
        }
        if (route === '/closing') {
          res.setHeader('connection', 'close');
          return res.end('bye');
        }
        if (route === '/hang-up') return req.socket.destroy();
        res.statusCode = 404;
        res.end('not found');
      })();
    });
    url = `http://127.0.0.1:${await listen(server)}`;
  });
  afterAll(() => close(server));
  beforeEach(() => {
    seen = { hits: {}, created: new Map(), pairs: [], sequence: [], posted: [], sockets: new Set() };
  });

  it('runs for a duration and counts statuses, 2xx and non-2xx', async () => {
    let n = 0;
    const r = await leanLoad({
      url, connections: 4, duration: 0.3,
      requests: [{ setupRequest: (req) => ({ ...req, path: n++ % 2 === 0 ? '/ok' : '/missing' }) }],
    });
    expectSane(r);
    expect(r.errors).toBe(0);
    expect(r['2xx']).toBeGreaterThan(10);
    expect(r.non2xx).toBeGreaterThan(10);
    expect(r.statuses).toEqual({ 200: r['2xx'], 404: r.non2xx });
    expect(r.requests.total).toBe(seen.hits['/ok'] + seen.hits['/missing']);
    expect(Math.abs(r['2xx'] - r.non2xx)).toBeLessThanOrEqual(4);
    expect(r.duration).toBeGreaterThanOrEqual(0.29);
    expect(r.duration).toBeLessThan(1.5);
    expect(seen.sockets.size).toBe(4); // keep-alive: one socket per connection
  });

  it('sends exactly `amount` requests across the connections', async () => {
    const r = await leanLoad({ url, connections: 3, amount: 50, requests: [{ path: '/ok' }] });
    expectSane(r);
    expect(r.requests.total).toBe(50);
    expect(r['2xx']).toBe(50);
    expect(seen.hits['/ok']).toBe(50);
    expect(seen.sockets.size).toBe(3);
  });

  it("runs each connection's steps in turn, with a context that carries the first answer to the second step", async () => {
    const r = await leanLoad({
      url, connections: 4, amount: 40,
      requests: [
        {
          method: 'POST', path: '/items', body: '{}',
          onResponse: (status, body, context) => { context.id = status === 201 ? (JSON.parse(body) as { id: number }).id : undefined; },
        },
        { setupRequest: (req, context) => ({ ...req, path: `/items/${String(context.id)}` }) },
      ],
    });
    expectSane(r);
    expect(r.errors).toBe(0);
    // the amount can cut a connection's pair after its first step
    expect(r.statuses[201] + r.statuses[200]).toBe(40);
    expect(r.statuses[200]).toBeGreaterThanOrEqual(r.statuses[201] - 4);
    expect(seen.pairs).toHaveLength(r.statuses[200]);
    // each second step names the item its own connection created just before
    for (const [created, asked] of seen.pairs) expect(asked).toBe(created);
    expect(new Set(seen.pairs.map(([, id]) => id)).size).toBe(seen.pairs.length);
  });

  it('restarts the sequence at step 0 when setupRequest answers null', async () => {
    const r = await leanLoad({
      url, connections: 1, amount: 9,
      requests: [
        { path: '/seq?s=0', onResponse: (_status, _body, context) => { context.n = ((context.n as number | undefined) ?? 0) + 1; } },
        { setupRequest: (req, context) => ((context.n as number) % 2 === 1 ? null : { ...req, path: '/seq?s=1' }) },
        { path: '/seq?s=2' },
      ],
    });
    expect(r.errors).toBe(0);
    expect(r.requests.total).toBe(9);
    expect(seen.sequence).toEqual(['0', '0', '1', '2', '0', '0', '1', '2', '0']);
  });

  it('stops a connection whose step 0 answers null, counting an error, rather than spinning', async () => {
    const r = await leanLoad({ url, connections: 2, duration: 5, requests: [{ setupRequest: () => null }] });
    expect(r.errors).toBe(2);
    expect(r.requests.total).toBe(0);
    expect(r.duration).toBeLessThan(1);
  });

  it('decodes chunked and content-length bodies, also when split across reads', async () => {
    const bodies: Record<string, string[]> = { '/chunked': [], '/big': [], '/big-chunked': [] };
    const r = await leanLoad({
      url, connections: 2, amount: 12,
      requests: Object.keys(bodies).map((path) => ({ path, onResponse: (_s: number, body: string) => { bodies[path].push(body); } })),
    });
    expectSane(r);
    expect(r.errors).toBe(0);
    expect(r['2xx']).toBe(12);
    expect(bodies['/chunked']).toEqual(Array(4).fill(`${CHUNK_PARTS.join('')}é`));
    expect(bodies['/big']).toHaveLength(4);
    expect(bodies['/big-chunked']).toHaveLength(4);
    for (const b of [...bodies['/big'], ...bodies['/big-chunked']]) expect(b === BIG).toBe(true);
  });

  it('does not decode the body for an onResponse that does not take it', async () => {
    const got: string[] = [];
    await leanLoad({ url, connections: 1, amount: 2, requests: [{ path: '/chunked', onResponse: (status: number) => { got.push(String(status)); } }] });
    expect(got).toEqual(['200', '200']);
  });

  it('posts bodies intact, with their byte length, and lets step headers override global ones by name', async () => {
    const text = JSON.stringify({ name: 'Zoë ✓ 😀' });
    const r = await leanLoad({
      url, connections: 2, amount: 6,
      headers: { 'X-Token': 'global', 'content-type': 'application/json' },
      requests: [
        { method: 'POST', path: '/posted', body: text, headers: { 'x-token': 'step' } },
        { method: 'POST', path: '/posted', setupRequest: (req) => ({ ...req, body: `${text}!`, headers: { ...req.headers, 'X-TOKEN': 'request' } }) },
      ],
    });
    expect(r['2xx']).toBe(6);
    expect(seen.posted).toHaveLength(6);
    for (const p of seen.posted) {
      expect(p.bytes).toBe(Buffer.byteLength(p.text));
      expect(p.declared).toBe(String(p.bytes));
      expect([text, `${text}!`]).toContain(p.text);
      expect(p.token).toBe(p.text === text ? 'step' : 'request');
    }
    expect(Buffer.byteLength(text)).toBeGreaterThan(text.length);
  });

  it('reconnects when the server answers connection: close', async () => {
    const r = await leanLoad({ url, connections: 2, amount: 10, requests: [{ path: '/closing' }] });
    expect(r.errors).toBe(0);
    expect(r['2xx']).toBe(10);
    expect(seen.sockets.size).toBe(10);
  });

  it('counts a connection lost mid-request as an error, reconnects and carries on', async () => {
    let n = 0;
    const r = await leanLoad({
      url, connections: 1, amount: 9,
      requests: [{ setupRequest: (req) => ({ ...req, path: ++n % 3 === 0 ? '/hang-up' : '/ok' }) }],
    });
    expect(r.errors).toBe(3);
    expect(r['2xx']).toBe(6);
    expect(seen.hits['/ok']).toBe(6);
  });

  it('counts refused connections as errors and still ends', async () => {
    const probe = createNetServer();
    const port = await listen(probe);
    await close(probe);
    const r = await leanLoad({ url: `http://127.0.0.1:${port}`, connections: 2, amount: 4, requests: [{ path: '/' }] });
    expect(r.errors).toBe(4);
    expect(r.requests.total).toBe(0);
  });

  it('parses responses in small pieces, an interim 100 and a final answer in one read, and chunk extensions', async () => {
    const responses = [
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello',
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n',
      'HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n',
    ];
    let i = 0;
    const raw = createNetServer((socket) => {
      socket.setNoDelay(true);
      let buffered = '';
      socket.on('data', (d: Buffer) => {
        buffered += d.toString('latin1');
        while (buffered.includes('\r\n\r\n')) {
          buffered = buffered.slice(buffered.indexOf('\r\n\r\n') + 4);
          const text = responses[i++ % responses.length];
          // the first answer in pieces of 7 bytes, a few ms apart; the others at once
          if (i % responses.length !== 1) socket.write(text);
          else {
            let at = 0;
            const next = (): void => {
              if (at >= text.length) return;
              socket.write(text.slice(at, at + 7));
              at += 7;
              setTimeout(next, 2);
            };
            next();
          }
        }
      });
    });
    const port = await listen(raw);
    const bodies: string[] = [];
    try {
      const r = await leanLoad({
        url: `http://127.0.0.1:${port}`, connections: 1, amount: 6,
        requests: [{ path: '/raw', onResponse: (status, body) => { bodies.push(`${status}:${body}`); } }],
      });
      expect(r.errors).toBe(0);
      expect(r.statuses).toEqual({ 200: 2, 202: 2, 404: 2 });
      expect(bodies).toEqual(['200:hello', '202:abcde', '404:', '200:hello', '202:abcde', '404:']);
    } finally {
      await close(raw);
    }
  });
});
