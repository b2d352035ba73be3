import { createCipheriv, createDecipheriv } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { prepared, randomBytesPooled } from '@loyalty/platform';
import { Pool } from 'pg';
import type { SealedPii } from '@loyalty/domain-member';
import { GroupCommitter } from '@loyalty/event-store';

/**
 * Key look-ups of a group, creating the missing ones asked for, prepared: the existing key is one
 * probe of the primary key per item (a \`lateral\` subquery), the only plan a generic plan can be.
 */
const FETCH_KEYS_SQL = prepared('pii_fetch_keys',
  `with q as (select * from unnest($1::text[], $2::text[], $3::bytea[]) with ordinality as q(tenant, member_id, key, n)),
        ins as (
          insert into ledger.member_keys (tenant, member_id, key)
          select tenant, member_id, key from q where key is not null order by tenant, member_id
          on conflict do nothing returning tenant, member_id, key)
   select q.n, coalesce(i.key, k.key) as key from q
     left join ins i on i.tenant = q.tenant and i.member_id = q.member_id
     left join lateral (select m.key from ledger.member_keys m where m.tenant = q.tenant and m.member_id = q.member_id limit 1) k on true`);

/** Members whose newest PII value a vault keeps in the clear (a few hundred bytes each). */
const PLAIN_CACHED = 50_000;

export interface Pii { email: string | null; phone: string | null; external_ref: string | null }

/**
 * Crypto-shredding: personal data in events is sealed with a per-member AES-256-GCM key kept
 * outside the event store. Erasure deletes the key; the sealed bytes become unreadable everywhere.
 */
export class PiiVault {
  private readonly keys = new Map<string, Buffer | null>();
  private readonly opened = new WeakMap<SealedPii, Pii>();
  /**
   * Per member, the sealed value this process last sealed or opened and what it holds, found by
   * its nonce (random per seal, so a nonce names one sealed value). An enrolment's response and
   * the members read model open the value the enrolment just sealed, each from its own copy of the
   * event: AES-GCM set-up was 6 % of an enrolment's CPU. Read only while the member's key exists,
   * dropped with it.
   */
  private readonly plain = new LRUCache<string, { iv: string; pii: Pii }>({ max: PLAIN_CACHED });
  /**
   * Key look-ups that arrive together share one statement (many enrolments at once): creating
   * ones insert a fresh key unless the member has one, and every item gets the member's key.
   */
  private readonly fetches = new GroupCommitter<{ tenant: string; memberId: string; create: boolean }, Buffer | null>(async (items) => {
    const { rows } = await this.pool.query<{ n: string; key: Buffer | null }>(FETCH_KEYS_SQL(
      [items.map((i) => i.tenant), items.map((i) => i.memberId), items.map((i) => (i.create ? randomBytesPooled(32) : null))]));
    const out: (Buffer | null)[] = items.map(() => null);
    for (const r of rows) out[Number(r.n) - 1] = r.key;
    return out;
  });
  constructor(private readonly pool: Pool) {}

  private id(tenant: string, memberId: string) { return `${tenant}/${memberId}`; }

  async keyFor(tenant: string, memberId: string, create: boolean): Promise<Buffer | null> {
    const cacheKey = this.id(tenant, memberId);
    const hit = this.keys.get(cacheKey);
    if (hit) return hit;
    const key = await this.fetches.submit({ tenant, memberId, create });
    if (key) this.keys.set(cacheKey, key);
    return key;
  }

  /** Remembers a member's key that the caller has just stored (e.g. with the member's identity claim). */
  adopt(tenant: string, memberId: string, key: Buffer): void {
    this.keys.set(this.id(tenant, memberId), key);
  }

  async seal(tenant: string, memberId: string, pii: Pii): Promise<SealedPii> {
    const key = await this.keyFor(tenant, memberId, true);
    if (!key) throw new Error('member key missing');
    const iv = randomBytesPooled(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const data = Buffer.concat([cipher.update(JSON.stringify(pii), 'utf8'), cipher.final()]);
    const sealed: SealedPii = { v: 1, kid: memberId, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
    this.plain.set(this.id(tenant, memberId), { iv: sealed.iv, pii: { email: pii.email ?? null, phone: pii.phone ?? null, external_ref: pii.external_ref ?? null } });
    return sealed;
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
    const recent = this.plain.get(this.id(tenant, memberId));
    if (recent && recent.iv === sealed.iv) {
      this.opened.set(sealed, recent.pii);
      return { ...recent.pii };
    }
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    const text = Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
    const pii = { ...empty, ...(JSON.parse(text) as Pii) };
    this.opened.set(sealed, pii);
    this.plain.set(this.id(tenant, memberId), { iv: sealed.iv, pii });
    return { ...pii };
  }

  /** Drops what this process holds of a member's key and PII (a key adopted for a creation that did not happen); nothing stored changes. */
  forget(tenant: string, memberId: string): void {
    this.keys.delete(this.id(tenant, memberId));
    this.plain.delete(this.id(tenant, memberId));
  }

  async destroy(tenant: string, memberId: string): Promise<void> {
    await this.pool.query('delete from ledger.member_keys where tenant = $1 and member_id = $2', [tenant, memberId]);
    this.keys.delete(this.id(tenant, memberId));
    this.plain.delete(this.id(tenant, memberId));
  }

  forgetCache(): void {
    this.keys.clear();
    this.plain.clear();
  }
}
