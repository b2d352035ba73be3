import { randomBytes, randomFillSync, randomInt } from 'node:crypto';
import { monotonicFactory } from 'ulid';

/**
 * Cryptographically random bytes drawn 4 KiB at a time (as nanoid does): the ulid package's own
 * generator asks the system for one byte per character, 16 calls per id, a visible share of a
 * write's CPU.
 */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
const randomByte = (): number => {
  if (poolAt >= pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++];
};

/**
 * `n` cryptographically random bytes (a copy the caller owns) from a pool of its own, refilled 4 KiB
 * at a time; what was handed out is zeroed in the pool. For the small secrets minted per write
 * (a member's 32-byte PII key, a 12-byte AES-GCM nonce): `randomBytes` per call was 2.7 % of an
 * enrolment's CPU. Larger requests go to `randomBytes` directly.
 */
const secretPool = Buffer.alloc(4096);
let secretAt = secretPool.length;
export const randomBytesPooled = (n: number): Buffer => {
  if (n > 256) return randomBytes(n);
  if (secretAt + n > secretPool.length) {
    randomFillSync(secretPool);
    secretAt = 0;
  }
  const out = Buffer.allocUnsafe(n);
  secretPool.copy(out, 0, secretAt, secretAt + n);
  secretPool.fill(0, secretAt, secretAt + n);
  secretAt += n;
  return out;
};

const ulid = monotonicFactory(() => randomByte() / 256);

/** Public identifiers (decisions §1): a prefix plus a 26-character ULID. */
export const newId = (prefix: 'P' | 'M' | 'LE' | 'EV' | 'RD' | 'RS' | 'RF' | 'WE' | 'WD' | 'K' | 'MB'): string => `${prefix}-${ulid()}`;
export const newUlid = (): string => ulid();

/** Crockford base32 without the ambiguous I, L, O, U. */
export const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export const randomCrockford = (length: number): string => {
  let out = '';
  // 32 symbols: the low five bits of a random byte are uniform over them
  for (let i = 0; i < length; i++) out += CROCKFORD[randomByte() & 31];
  return out;
};
export const newVoucherCode = (): string => `RWD-${randomCrockford(4)}-${randomCrockford(4)}`;
export const newReferralCode = (): string => randomCrockford(8);

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const randomBase62 = (length: number): string => {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
};
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;
