import { randomBytesPooled } from './ids';

describe('randomBytesPooled', () => {
  it('hands out copies of the asked length that differ from each other, across pool refills', () => {
    const seen = new Set<string>();
    // 4096-byte pool: 400 draws of 32 bytes cross three refills
    for (let i = 0; i < 400; i++) {
      const b = randomBytesPooled(32);
      expect(b).toHaveLength(32);
      seen.add(b.toString('hex'));
    }
    expect(seen.size).toBe(400);
  });

  it('gives the caller its own bytes: changing them changes nothing that is handed out later', () => {
    const a = randomBytesPooled(12);
    const before = Buffer.from(a);
    a.fill(7);
    const b = randomBytesPooled(12);
    expect(b.equals(a)).toBe(false);
    expect(before.equals(Buffer.alloc(12, 0))).toBe(false); // not the zeroed pool
  });

  it('serves sizes above its limit straight from the system', () => {
    expect(randomBytesPooled(1000)).toHaveLength(1000);
    expect(randomBytesPooled(0)).toHaveLength(0);
  });
});
