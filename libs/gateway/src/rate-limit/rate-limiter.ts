import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
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

/**
 * Per-key token bucket: shared through Redis when REDIS_URL is set, in process otherwise. While
 * Redis cannot be reached the limiter falls back to the in-process bucket (limits then hold per
 * replica) rather than failing every request.
 */
@Injectable()
export class RateLimiter implements OnModuleDestroy {
  private readonly local = new Map<string, TokenBucket>();
  private readonly redis: Redis | null;
  private readonly log = new Logger('RateLimiter');
  private lastWarning = 0;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.redis = config.redisUrl
      ? new Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: true, connectTimeout: 2000, commandTimeout: 500, disconnectTimeout: 200 })
      : null;
    this.redis?.on('error', () => undefined); // reported once per minute by take()
  }

  async take(keyId: string, rate: { burst: number; perSecond: number }, cost: number): Promise<TakeResult> {
    // while reconnecting after an outage, go local at once instead of queueing behind the reconnect
    if (this.redis && this.redis.status !== 'reconnecting' && this.redis.status !== 'end' && this.redis.status !== 'close') {
      try {
        const [allowed, tokens, wait] = (await this.redis.eval(TAKE_SCRIPT, 1, `rl:${keyId}`, rate.burst, rate.perSecond, cost)) as [number, string, string];
        return { allowed: allowed === 1, remaining: Number(tokens), retryAfterSeconds: Number(wait) };
      } catch (e) {
        if (Date.now() - this.lastWarning > 60_000) {
          this.lastWarning = Date.now();
          this.log.warn(`Redis unavailable (${(e as Error).message}); rate limits apply per replica until it returns`);
        }
      }
    }
    const bucket = this.local.get(keyId) ?? { tokens: rate.burst, updatedAt: Date.now() };
    const r = takeFromBucket(bucket, rate, cost, Date.now());
    this.local.set(keyId, r.bucket);
    return r;
  }

  async onModuleDestroy(): Promise<void> {
    if (!this.redis) return;
    // quit() waits for a connection that may never come; disconnect() also stops reconnecting
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => undefined);
    else this.redis.disconnect();
  }
}
