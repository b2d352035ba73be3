import { classifyAddress, isLoopbackHost, isPublicAddress, parseV6 } from './address-policy';

describe('SSRF address classification', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.20', 'private'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['169.254.169.254', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456:789a::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['64:ff9b::192.168.0.1', 'private'],
    ['2002:0a00:0001::1', 'private'],
  ])('%s is %s', (address, cls) => {
    expect(classifyAddress(address)).toBe(cls);
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.15.255.255', '172.32.0.1', '100.63.255.255', '100.128.0.1', '169.253.0.1', '192.169.0.1', '11.0.0.1',
    '2606:4700:4700::1111', '2a00:1450:4001:81c::200e', 'fbff::1', '2001:4860::1', '::ffff:8.8.8.8'])('%s is public', (address) => {
    expect(classifyAddress(address)).toBe('public');
    expect(isPublicAddress(address)).toBe(true);
  });

  it('refuses what is not an address', () => {
    expect(classifyAddress('example.com')).toBe('invalid');
    expect(classifyAddress('1.2.3')).toBe('invalid');
    expect(classifyAddress('1:2:3')).toBe('invalid');
    expect(isPublicAddress('256.1.1.1')).toBe(false);
  });

  it('expands IPv6 forms to eight groups', () => {
    expect(parseV6('::1')).toEqual([0, 0, 0, 0, 0, 0, 0, 1]);
    expect(parseV6('fe80::1:2')).toEqual([0xfe80, 0, 0, 0, 0, 0, 1, 2]);
    expect(parseV6('::ffff:1.2.3.4')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]);
    expect(parseV6('1:2:3:4:5:6:7:8')).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(parseV6('1::2::3')).toBeNull();
    expect(parseV6('1:2:3:4:5:6:7:8:9')).toBeNull();
  });

  it('knows loopback host names', () => {
    expect(isLoopbackHost('localhost')).toBe(true);
    expect(isLoopbackHost('api.localhost')).toBe(true);
    expect(isLoopbackHost('127.0.0.1')).toBe(true);
    expect(isLoopbackHost('::1')).toBe(true);
    expect(isLoopbackHost('10.0.0.1')).toBe(false);
    expect(isLoopbackHost('example.com')).toBe(false);
  });
});
