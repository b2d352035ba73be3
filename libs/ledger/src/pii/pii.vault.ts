import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import type { SealedPii } from '@loyalty/domain-member';

export interface Pii { email: string | null; phone: string | null; external_ref: string | null }

/**
 * Crypto-shredding: personal data in events is sealed with a per-member AES-256-GCM key kept
 * outside the event store. Erasure deletes the key; the sealed bytes become unreadable everywhere.
 */
export class PiiVault {
  private readonly keys = new Map<string, Buffer | null>();
  private readonly opened = new WeakMap<SealedPii, Pii>();
  constructor(private readonly pool: Pool) {}

  private id(tenant: string, memberId: string) { return `${tenant}/${memberId}`; }

  async keyFor(tenant: string, memberId: string, create: boolean): Promise<Buffer | null> {
    const cacheKey = this.id(tenant, memberId);
    const hit = this.keys.get(cacheKey);
    if (hit) return hit;
    if (create) {
      await this.pool.query('insert into ledger.member_keys (tenant, member_id, key) values ($1,$2,$3) on conflict do nothing', [tenant, memberId, randomBytes(32)]);
    }
    const { rows } = await this.pool.query<{ key: Buffer }>('select key from ledger.member_keys where tenant = $1 and member_id = $2', [tenant, memberId]);
    const key = rows[0]?.key ?? null;
    if (key) this.keys.set(cacheKey, key);
    return key;
  }

  async seal(tenant: string, memberId: string, pii: Pii): Promise<SealedPii> {
    const key = await this.keyFor(tenant, memberId, true);
    if (!key) throw new Error('member key missing');
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const data = Buffer.concat([cipher.update(JSON.stringify(pii), 'utf8'), cipher.final()]);
    return { v: 1, kid: memberId, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
  }

  /** The member's PII, or all-null once the key is destroyed. */
  async open(tenant: string, memberId: string, sealed: SealedPii | null): Promise<Pii> {
    const empty: Pii = { email: null, phone: null, external_ref: null };
    if (!sealed) return empty;
    const key = await this.keyFor(tenant, memberId, false);
    if (!key) return empty;
    // a sealed value is immutable: decrypt it once (only while its key exists, checked just above)
    const known = this.opened.get(sealed);
    if (known) return { ...known };
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    const text = Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
    const pii = { ...empty, ...(JSON.parse(text) as Pii) };
    this.opened.set(sealed, pii);
    return { ...pii };
  }

  async destroy(tenant: string, memberId: string): Promise<void> {
    await this.pool.query('delete from ledger.member_keys where tenant = $1 and member_id = $2', [tenant, memberId]);
    this.keys.delete(this.id(tenant, memberId));
  }

  forgetCache(): void { this.keys.clear(); }
}
