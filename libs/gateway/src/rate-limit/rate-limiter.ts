import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import Redis from 'ioredis';
import { AppConfig } from '@loyalty/platform';
import { APP_CONFIG } from '../tokens';
import { TokenBucket, takeFromBucket } from './token-bucket';

export interface TakeResult { allowed: boolean; remaining: number; retryAfterSeconds: number }

// Token bucket in Redis: one atomic script per call so every gateway replica shares the bucket.
const TAKE_SCRIPT = `
local key = KEYS[1]
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', key, 'tokens', 'ts')
local tokens = tonumber(b[1])
local ts = tonumber(b[2])
if tokens == nil then tokens = burst; ts = now end
tokens = math.min(burst, tokens + (now - ts) * rate / 1000)
local allowed = 0
if tokens >= cost then tokens = tokens - cost; allowed = 1 end
redis.call('HSET', key, 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', key, math.ceil(burst / rate * 1000) + 1000)
local wait = 0
if allowed == 0 then wait = (cost - tokens) / rate end
return {allowed, tostring(tokens), tostring(wait)}
`;

/** Per-key token bucket: shared through Redis when REDIS_URL is set, in process otherwise. */
@Injectable()
export class RateLimiter implements OnModuleDestroy {
  private readonly local = new Map<string, TokenBucket>();
  private readonly redis: Redis | null;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.redis = config.redisUrl ? new Redis(config.redisUrl, { maxRetriesPerRequest: 2, enableOfflineQueue: true }) : null;
  }

  async take(keyId: string, rate: { burst: number; perSecond: number }, cost: number): Promise<TakeResult> {
    if (this.redis) {
      const [allowed, tokens, wait] = (await this.redis.eval(TAKE_SCRIPT, 1, `rl:${keyId}`, rate.burst, rate.perSecond, cost)) as [number, string, string];
      return { allowed: allowed === 1, remaining: Number(tokens), retryAfterSeconds: Number(wait) };
    }
    const bucket = this.local.get(keyId) ?? { tokens: rate.burst, updatedAt: Date.now() };
    const r = takeFromBucket(bucket, rate, cost, Date.now());
    this.local.set(keyId, r.bucket);
    return r;
  }

  async onModuleDestroy(): Promise<void> {
    await this.redis?.quit().catch(() => undefined);
  }
}
