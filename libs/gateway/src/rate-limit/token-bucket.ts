/** A pure token bucket: up to `burst` tokens, refilled at `perSecond`. */
export interface TokenBucket { tokens: number; updatedAt: number }

export const takeFromBucket = (
  bucket: TokenBucket, rate: { burst: number; perSecond: number }, cost: number, now: number,
): { bucket: TokenBucket; allowed: boolean; remaining: number; retryAfterSeconds: number } => {
  const tokens = Math.min(rate.burst, bucket.tokens + ((now - bucket.updatedAt) * rate.perSecond) / 1000);
  if (tokens >= cost) {
    return { bucket: { tokens: tokens - cost, updatedAt: now }, allowed: true, remaining: tokens - cost, retryAfterSeconds: 0 };
  }
  return { bucket: { tokens, updatedAt: now }, allowed: false, remaining: tokens, retryAfterSeconds: (cost - tokens) / rate.perSecond };
};
