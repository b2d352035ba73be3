import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import { Pool } from 'pg';
import { AppConfig, Mode, NotifiedCache, newId, notFound, problem, randomBase62, tenantKey } from '@loyalty/platform';
import { APP_CONFIG, PG_POOL } from '../tokens';
import { AuthContext, SCOPES, Scope } from '../http/request-context';

export const KEY_PREFIX_LENGTH = 12;
const DEFAULT_RATE = { burst: 50, perSecond: 10 };

export interface IssuedKey { id: string; key: string; mode: Mode; scopes: Scope[]; name: string | null; created_at: string; rate_limit: { burst: number; per_second: number } }

const hashKey = (key: string): Buffer => createHash('sha256').update(key).digest();

type KeyRow = { id: string; prefix: string; program_id: string; mode: Mode; name: string | null; hash: Buffer; scopes: Scope[]; rate_burst: number | null; rate_per_second: number | null; created_at: Date; expires_at: Date | null; revoked_at: Date | null };

/**
 * API keys: shown once, stored as SHA-256, found by their first 12 characters and compared in
 * constant time. The key itself is never stored or logged.
 */
@Injectable()
export class ApiKeysService implements OnApplicationShutdown {
  /** Rows by lookup prefix, dropped in every process by the api_key_changed notification (a trigger sends it on every change). */
  private readonly byPrefix: NotifiedCache<KeyRow[]>;

  constructor(@Inject(PG_POOL) private readonly pool: Pool, @Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.byPrefix = new NotifiedCache(pool, 'api_key_changed');
  }

  async onApplicationShutdown(): Promise<void> {
    await this.byPrefix.close();
  }

  async issue(programId: string, mode: Mode, scopes: Scope[] = SCOPES, name: string | null = null, rate?: { burst?: number; per_second?: number }): Promise<IssuedKey> {
    const key = `svc_${mode}_${randomBase62(32)}`;
    const id = newId('K');
    const { rows } = await this.pool.query<{ created_at: Date }>(
      `insert into gateway.api_keys (id, program_id, mode, name, prefix, hash, scopes, rate_burst, rate_per_second)
       values ($1,$2,$3,$4,$5,$6,$7,$8,$9) returning created_at`,
      [id, programId, mode, name, key.slice(0, KEY_PREFIX_LENGTH), hashKey(key), scopes, rate?.burst ?? null, rate?.per_second ?? null]);
    return { id, key, mode, scopes, name, created_at: rows[0].created_at.toISOString(), rate_limit: { burst: rate?.burst ?? DEFAULT_RATE.burst, per_second: rate?.per_second ?? DEFAULT_RATE.perSecond } };
  }

  /** A new key with the same programme, mode and scopes; the old one keeps working for the grace period. */
  async rotate(keyId: string): Promise<IssuedKey & { old_key_expires_at: string }> {
    const old = await this.row(keyId);
    // a revoked or lapsed key stays dead: rotation must not bring its access back
    if (old.revoked_at || (old.expires_at && old.expires_at.getTime() <= Date.now())) {
      throw problem('invalid-state', 'This key is revoked or expired; create a new key instead');
    }
    const fresh = await this.issue(old.program_id, old.mode, old.scopes, old.name,
      { burst: old.rate_burst ?? undefined, per_second: old.rate_per_second ?? undefined });
    const { rows } = await this.pool.query<{ expires_at: Date }>(
      `update gateway.api_keys set expires_at = least(coalesce(expires_at, 'infinity'), now() + make_interval(secs => $2)), rotated_to = $3
       where id = $1 returning expires_at`, [keyId, this.config.keyRotationGraceSeconds, fresh.id]);
    return { ...fresh, old_key_expires_at: rows[0].expires_at.toISOString() };
  }

  async revoke(keyId: string): Promise<void> {
    await this.row(keyId);
    await this.pool.query('update gateway.api_keys set revoked_at = coalesce(revoked_at, now()) where id = $1', [keyId]);
  }

  async list(programId: string): Promise<unknown[]> {
    const { rows } = await this.pool.query<KeyRow & { prefix: string }>('select * from gateway.api_keys where program_id = $1 order by created_at', [programId]);
    return rows.map((r) => ({
      id: r.id, mode: r.mode, name: r.name, scopes: r.scopes, prefix: r.prefix, created_at: r.created_at.toISOString(),
      expires_at: r.expires_at?.toISOString() ?? null, revoked_at: r.revoked_at?.toISOString() ?? null,
    }));
  }

  /** Verifies a presented key; null when unknown, revoked or expired. */
  async verify(presented: string): Promise<AuthContext | null> {
    if (!/^svc_(live|test)_[0-9A-Za-z]{32}$/.test(presented)) return null;
    const prefix = presented.slice(0, KEY_PREFIX_LENGTH);
    const rows = await this.candidates(prefix);
    const hash = hashKey(presented);
    const now = Date.now();
    for (const r of rows) {
      if (!timingSafeEqual(r.hash, hash)) continue;
      if (r.revoked_at || (r.expires_at && r.expires_at.getTime() <= now)) return null;
      return {
        keyId: r.id, programId: r.program_id, mode: r.mode, tenant: tenantKey({ programId: r.program_id, mode: r.mode }),
        scopes: r.scopes, rate: { burst: r.rate_burst ?? DEFAULT_RATE.burst, perSecond: r.rate_per_second ?? DEFAULT_RATE.perSecond },
      };
    }
    return null;
  }

  /**
   * Rows sharing the presented key's lookup prefix, cached in process: a revocation or rotation
   * changes the row, whose trigger notifies every replica, so it takes effect at once everywhere;
   * expiry (a rotation's grace) is checked against the clock on each request.
   */
  private candidates(prefix: string): Promise<KeyRow[]> {
    return this.byPrefix.get(prefix, 'rows', async () => {
      const { rows } = await this.pool.query<KeyRow>('select * from gateway.api_keys where prefix = $1', [prefix]);
      return rows;
    });
  }

  private async row(keyId: string): Promise<KeyRow> {
    const { rows } = await this.pool.query<KeyRow>('select * from gateway.api_keys where id = $1', [keyId]);
    if (!rows.length) throw notFound('key');
    return rows[0];
  }
}
