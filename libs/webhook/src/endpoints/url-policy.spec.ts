import { Resolver, checkEndpointUrl } from './url-policy';

/** A resolver from a table: no DNS traffic leaves the test. */
const table = (entries: Record<string, string[]>): Resolver => async (host) => {
  const a = entries[host];
  if (!a) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return a;
};
const dns = table({
  'hooks.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'internal.example.com': ['10.1.2.3'],
  'mixed.example.com': ['93.184.216.34', '192.168.0.10'],
  'v6local.example.com': ['fd00::5'],
  'metadata.example.com': ['169.254.169.254'],
});

describe('endpoint URL rules', () => {
  it('accepts a public https URL in live mode', async () => {
    await expect(checkEndpointUrl('https://hooks.example.com/loyalty', 'live', dns)).resolves.toBeNull();
    await expect(checkEndpointUrl('https://93.184.216.34:8443/x', 'live', dns)).resolves.toBeNull();
  });

  it.each([
    'https://127.0.0.1/hook', 'https://10.0.0.1/x', 'https://[::1]/x', 'https://localhost/x', 'https://0.0.0.0/x',
    'https://169.254.169.254/latest', 'https://[fd00::1]/x', 'https://[fe80::1]/x', 'https://100.64.1.1/x', 'https://172.20.0.1/x',
    'https://2130706433/x', 'https://0x7f.0.0.1/x', 'https://[::ffff:127.0.0.1]/x',
  ])('refuses %s in live mode', async (url) => {
    expect(await checkEndpointUrl(url, 'live', dns)).toMatch(/loopback|private|link-local|unique-local|cgnat|unspecified/);
  });

  it.each(['internal.example.com', 'mixed.example.com', 'v6local.example.com', 'metadata.example.com'])(
    'refuses a host name that resolves to a non-public address in live mode (%s)', async (host) => {
      expect(await checkEndpointUrl(`https://${host}/x`, 'live', dns)).toMatch(/resolves to/);
    });

  it('accepts a name that does not resolve now (delivery checks the address it connects to)', async () => {
    await expect(checkEndpointUrl('https://not-yet.example.com/x', 'live', dns)).resolves.toBeNull();
  });

  it('requires https, except http to a loopback host with a test key', async () => {
    expect(await checkEndpointUrl('http://hooks.example.com/x', 'live', dns)).toMatch(/https/);
    expect(await checkEndpointUrl('http://127.0.0.1:9999/x', 'live', dns)).toMatch(/https/);
    expect(await checkEndpointUrl('http://hooks.example.com/x', 'test', dns)).toMatch(/loopback/);
    expect(await checkEndpointUrl('http://10.0.0.1/x', 'test', dns)).toMatch(/https/);
    await expect(checkEndpointUrl('http://127.0.0.1:9999/x', 'test', dns)).resolves.toBeNull();
    await expect(checkEndpointUrl('http://localhost:9999/x', 'test', dns)).resolves.toBeNull();
    await expect(checkEndpointUrl('http://[::1]:9999/x', 'test', dns)).resolves.toBeNull();
    await expect(checkEndpointUrl('https://127.0.0.1/x', 'test', dns)).resolves.toBeNull();
  });

  it('refuses what is not an absolute http(s) URL, credentials and over-long URLs', async () => {
    expect(await checkEndpointUrl('not a url', 'live', dns)).toMatch(/absolute/);
    expect(await checkEndpointUrl('/relative', 'live', dns)).toMatch(/absolute/);
    expect(await checkEndpointUrl('ftp://hooks.example.com/x', 'live', dns)).toMatch(/https/);
    expect(await checkEndpointUrl('https://user:pw@hooks.example.com/x', 'live', dns)).toMatch(/credentials/);
    expect(await checkEndpointUrl(`https://hooks.example.com/${'a'.repeat(2048)}`, 'live', dns)).toMatch(/2048/);
  });
});

describe('endpoint URL rules (issue 8)', () => {
  const noDns: Resolver = async () => { throw new Error('no DNS in this test'); };

  it('refuses a URL that does not name a host, in either mode', async () => {
    for (const url of ['https:///path', 'https:/example.com/x', 'https://./x', 'https://../']) {
      expect(await checkEndpointUrl(url, 'live', noDns)).toBe('url must name a host');
      expect(await checkEndpointUrl(url, 'test', noDns)).toBe('url must name a host');
    }
    expect(await checkEndpointUrl('https://hooks.example.com/x', 'live', async () => ['93.184.216.34'])).toBeNull();
  });

  it("refuses the deployment's own ports on loopback in the sandbox, named or resolved", async () => {
    const saved = process.env.LOYALTY_RESERVED_PORTS;
    process.env.LOYALTY_RESERVED_PORTS = '4100,4101';
    try {
      const own = "url must not point to one of the service's own ports";
      expect(await checkEndpointUrl('http://127.0.0.1:4100/v1/ping', 'test', noDns)).toBe(own);
      expect(await checkEndpointUrl('http://localhost:4101/', 'test', noDns)).toBe(own);
      expect(await checkEndpointUrl('http://[::1]:4100/', 'test', noDns)).toBe(own);
      expect(await checkEndpointUrl('https://rebind.example:4100/', 'test', async () => ['127.0.0.1'])).toBe(own);
      // PostgreSQL of the deployment (DATABASE_URL, default 5432 on loopback)
      expect(await checkEndpointUrl('http://127.0.0.1:5432/', 'test', noDns)).toBe(own);
      // other loopback ports stay allowed in the sandbox (decisions §8)
      expect(await checkEndpointUrl('http://127.0.0.1:4102/hook', 'test', noDns)).toBeNull();
      expect(await checkEndpointUrl('https://public.example:4100/', 'test', async () => ['93.184.216.34'])).toBeNull();
    } finally {
      if (saved === undefined) delete process.env.LOYALTY_RESERVED_PORTS; else process.env.LOYALTY_RESERVED_PORTS = saved;
    }
  });
});
