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
