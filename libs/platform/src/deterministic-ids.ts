import { hash } from 'node:crypto';
import { CROCKFORD } from './ids';

/**
 * Ids derived from what caused them, so a retried command (Kafka redelivery, a crashed worker)
 * produces the very same ids and the event store's idempotent append can recognise it: the
 * SHA-256 of a seed (the one-shot `hash`, a third cheaper than a Hash object for inputs this short).
 */
const digest = (seed: string): Buffer => hash('sha256', seed, 'buffer');

/** A UUID (version 5 layout, SHA-256 based) for event-store event ids: a retried command appends the very same ids, which the store ignores. */
export const deterministicUuid = (seed: string): string => {
  const b = digest(seed).subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x50;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

/**
 * A ULID whose time part is `atMs` (so ids still sort roughly by time) and whose 80 "random" bits
 * come from the seed: the same seed and time give the same id.
 */
export const deterministicUlid = (seed: string, atMs: number): string => {
  let time = '';
  let t = Math.max(0, Math.min(Math.floor(atMs), 2 ** 48 - 1));
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  // the digest's first 80 bits, five at a time from the most significant (no BigInt: issue 7)
  const bytes = digest(seed);
  let rand = '';
  for (let i = 0; i < 16; i++) {
    const bit = i * 5;
    const k = bit >> 3;
    rand += CROCKFORD[(((bytes[k] << 8) | bytes[k + 1]) >> (11 - (bit & 7))) & 31];
  }
  return time + rand;
};

/** `LE-…` ledger entry id of a cause within a programme partition. */
export const entryIdFor = (tenant: string, cause: string, at: string): string =>
  `LE-${deterministicUlid(`${tenant}|entry|${cause}`, Date.parse(at) || 0)}`;
