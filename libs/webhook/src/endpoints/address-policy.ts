import { isIP } from 'node:net';

/**
 * SSRF protection (decisions §8): which IP addresses a live-mode webhook may never reach.
 * Pure and synchronous, so the creation check and the delivery-time check (DNS rebinding) agree.
 */
export type AddressClass =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'cgnat'
  | 'link-local'
  | 'unique-local'
  | 'multicast'
  | 'reserved'
  | 'invalid';

type V4Rule = [base: number, bits: number, cls: AddressClass];

const v4 = (a: number, b: number, c: number, d: number): number => ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;

const V4_RULES: V4Rule[] = [
  [v4(0, 0, 0, 0), 8, 'unspecified'], // "this network"; 0.0.0.0 reaches the local host
  [v4(10, 0, 0, 0), 8, 'private'],
  [v4(100, 64, 0, 0), 10, 'cgnat'],
  [v4(127, 0, 0, 0), 8, 'loopback'],
  [v4(169, 254, 0, 0), 16, 'link-local'], // cloud metadata services live here
  [v4(172, 16, 0, 0), 12, 'private'],
  [v4(192, 0, 0, 0), 24, 'reserved'], // IETF protocol assignments
  [v4(192, 0, 2, 0), 24, 'reserved'], // documentation
  [v4(192, 88, 99, 0), 24, 'reserved'], // 6to4 relay anycast
  [v4(192, 168, 0, 0), 16, 'private'],
  [v4(198, 18, 0, 0), 15, 'reserved'], // benchmarking
  [v4(198, 51, 100, 0), 24, 'reserved'],
  [v4(203, 0, 113, 0), 24, 'reserved'],
  [v4(224, 0, 0, 0), 4, 'multicast'],
  [v4(240, 0, 0, 0), 4, 'reserved'], // incl. 255.255.255.255
];

const parseV4 = (s: string): number | null => {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return null;
    const x = Number(p);
    if (x > 255) return null;
    n = n * 256 + x;
  }
  return n;
};

const classifyV4Number = (n: number): AddressClass => {
  for (const [base, bits, cls] of V4_RULES) {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    if (((n & mask) >>> 0) === base) return cls;
  }
  return 'public';
};

/** The eight 16-bit groups of an IPv6 address (zone id dropped, embedded dotted quad accepted), or null. */
export const parseV6 = (input: string): number[] | null => {
  let s = input.toLowerCase();
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  // an embedded IPv4 tail (::ffff:10.0.0.1) becomes two hex groups
  const lastColon = s.lastIndexOf(':');
  if (lastColon >= 0 && s.slice(lastColon + 1).includes('.')) {
    const n = parseV4(s.slice(lastColon + 1));
    if (n === null) return null;
    s = `${s.slice(0, lastColon + 1)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const want = 8;
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const toGroups = (h: string): number[] | null => {
    if (h === '') return [];
    const out: number[] = [];
    for (const g of h.split(':')) {
      if (!/^[0-9a-f]{1,4}$/.test(g)) return null;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = toGroups(halves[0]);
  if (!head) return null;
  if (halves.length === 1) {
    return head.length === want ? head : null;
  }
  const rest = toGroups(halves[1]);
  if (!rest) return null;
  const missing = want - head.length - rest.length;
  if (missing < 1) return null;
  return [...head, ...new Array<number>(missing).fill(0), ...rest];
};

const classifyV6 = (g: number[]): AddressClass => {
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (g.every((x) => x === 0)) return 'unspecified';
  if (zeroUpTo(7) && g[7] === 1) return 'loopback';
  const embedded = (hi: number, lo: number) => classifyV4Number(((hi << 16) >>> 0) + lo);
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d carry an IPv4 destination
  if (zeroUpTo(5) && g[5] === 0xffff) return embedded(g[6], g[7]);
  if (zeroUpTo(6)) return embedded(g[6], g[7]);
  // NAT64 64:ff9b::/96 reaches the embedded IPv4 address
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return embedded(g[6], g[7]);
  // 6to4 2002:AABB:CCDD::/48 tunnels to the IPv4 address AABBCCDD
  if (g[0] === 0x2002) {
    const inner = embedded(g[1], g[2]);
    if (inner !== 'public') return inner;
  }
  if ((g[0] & 0xfe00) === 0xfc00) return 'unique-local'; // fc00::/7
  if ((g[0] & 0xffc0) === 0xfe80) return 'link-local'; // fe80::/10
  if ((g[0] & 0xffc0) === 0xfec0) return 'private'; // fec0::/10, deprecated site-local
  if ((g[0] & 0xff00) === 0xff00) return 'multicast';
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'reserved'; // documentation
  if (g[0] === 0x0100 && g[1] === 0 && g[2] === 0 && g[3] === 0) return 'reserved'; // discard-only 100::/64
  return 'public';
};

/** The class of an IP address literal (IPv4 dotted quad or IPv6, brackets allowed). */
export const classifyAddress = (address: string): AddressClass => {
  const a = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(a.split('%')[0]);
  if (family === 4) {
    const n = parseV4(a);
    return n === null ? 'invalid' : classifyV4Number(n);
  }
  if (family === 6) {
    const g = parseV6(a);
    return g ? classifyV6(g) : 'invalid';
  }
  return 'invalid';
};

/** True when a live webhook may connect to this address. */
export const isPublicAddress = (address: string): boolean => classifyAddress(address) === 'public';

/** Host names that always mean this machine, whatever DNS says. */
export const isLoopbackName = (host: string): boolean => {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
};

/** A URL host (as `new URL().hostname` gives it) that is a loopback address or name. */
export const isLoopbackHost = (hostname: string): boolean =>
  isLoopbackName(hostname) || classifyAddress(hostname) === 'loopback';
