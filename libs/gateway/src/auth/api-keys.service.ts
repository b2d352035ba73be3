import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { hash as oneShotHash, timingSafeEqual } from 'node:crypto';
import { Pool } from 'pg';
import { Repository } from 'typeorm';
import { AppConfig, Mode, NotifiedCache, configOrm, newId, notFound, problem, randomBase62, tenantKey } from '@loyalty/platform';
import { ApiKey } from './api-key.entity';
import { APP_CONFIG, PG_POOL } from '../tokens';
import { AuthContext, SCOPES, Scope } from '../http/request-context';

export const KEY_PREFIX_LENGTH = 12;
const DEFAULT_RATE = { burst: 50, perSecond: 10 };

export interface IssuedKey { id: string; key: string; mode: Mode; scopes: Scope[]; name: string | null; created_at: string; rate_limit: { burst: number; per_second: number } }

/** SHA-256 of a key, on every request: the one-shot `hash`, cheaper than a Hash object for inputs this short. */
const hashKey = (key: string): Buffer => oneShotHash('sha256', key, 'buffer');

type KeyRow = ApiKey & { scopes: Scope[] };

/**
 * API keys: shown once, stored as SHA-256, found by their first 12 characters and compared in
 * constant time. The key itself is never stored or logged. Rows are `ApiKey` entities (TypeORM).
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

  private async keys(): Promise<Repository<ApiKey>> {
    return (await configOrm(this.pool)).getRepository(ApiKey);
  }

  async issue(programId: string, mode: Mode, scopes: Scope[] = SCOPES, name: string | null = null, rate?: { burst?: number; per_second?: number }): Promise<IssuedKey> {
    const key = `svc_${mode}_${randomBase62(32)}`;
    const id = newId('K');
    const { generatedMaps } = await (await this.keys()).insert({
      id, program_id: programId, mode, name, prefix: key.slice(0, KEY_PREFIX_LENGTH), hash: hashKey(key), scopes,
      rate_burst: rate?.burst ?? null, rate_per_second: rate?.per_second ?? null,
    });
    const createdAt = (generatedMaps[0] as Partial<ApiKey>).created_at!;
    return { id, key, mode, scopes, name, created_at: createdAt.toISOString(), rate_limit: { burst: rate?.burst ?? DEFAULT_RATE.burst, per_second: rate?.per_second ?? DEFAULT_RATE.perSecond } };
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
    const { raw } = await (await this.keys()).createQueryBuilder().update()
      .set({ expires_at: () => `least(coalesce(expires_at, 'infinity'), now() + make_interval(secs => :grace))`, rotated_to: fresh.id })
      .where('id = :id', { id: keyId, grace: this.config.keyRotationGraceSeconds })
      .returning('expires_at')
      .execute();
    await this.byPrefix.propagate(old.prefix);
    return { ...fresh, old_key_expires_at: (raw as { expires_at: Date }[])[0].expires_at.toISOString() };
  }

  async revoke(keyId: string): Promise<void> {
    const row = await this.row(keyId);
    await (await this.keys()).update({ id: keyId }, { revoked_at: () => 'coalesce(revoked_at, now())' });
    // revoked at once everywhere: answer only when every replica has dropped the key
    await this.byPrefix.propagate(row.prefix);
  }

  async list(programId: string): Promise<unknown[]> {
    const rows = await (await this.keys()).find({ where: { program_id: programId }, order: { created_at: 'ASC' } });
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
      return (await (await this.keys()).findBy({ prefix })) as KeyRow[];
    });
  }

  private async row(keyId: string): Promise<KeyRow> {
    const row = await (await this.keys()).findOneBy({ id: keyId });
    if (!row) throw notFound('key');
    return row as KeyRow;
  }
}
