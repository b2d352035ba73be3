import { Pool } from 'pg';
import { ProgramStore } from '@loyalty/programs';
import { createHash } from 'node:crypto';
import { decideAdjust, decideMigrationReversal, expiresAtFor, MemberAggregate, MemberEvent } from '@loyalty/domain-member';
import { CROCKFORD, FieldError, newId, notFound, validation } from '@loyalty/platform';
import { LedgerReadModels } from '../ledger.read-models';
import { normaliseEmail, normalisePhone } from '../members/identity';
import { MembersService } from '../members/members.service';
import { MIGRATION_REASON } from './migration-entries.projection';

export interface MigrationEntryInput { email: string; phone?: string; external_ref?: string; amount_cents: number; expires_at?: string }
export interface MigrationResult { batch_id: string; imported: number; members_created: number }
export interface MigrationReversal { batch_id: string; reversed: number; entries: number }

export const MAX_MIGRATION_ENTRIES = 10_000;
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** A batch id derived from the caller's Idempotency-Key: a retried import lands in the same batch. */
export const batchIdFor = (tenant: string, key: string): string => {
  const digest = createHash('sha256').update(`${tenant}\n${key}`).digest();
  let out = '';
  for (let i = 0; i < 26; i++) out += CROCKFORD[digest[i] % 32];
  return `MB-${out}`;
};

/** Entries imported side by side: their appends share group commits, so more in flight means fewer transactions. */
const IMPORT_CONCURRENCY = 256;

/** Runs `fn` over the items with at most `limit` at a time; the first failure is thrown once all have stopped. */
const inParallel = async <T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> => {
  let next = 0;
  let failure: unknown = null;
  const worker = async () => {
    while (failure === null && next < items.length) {
      const item = items[next++];
      try {
        await fn(item);
      } catch (e) {
        failure ??= e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== null) throw failure;
};

interface Planned { index: number; email: string; phone?: string; external_ref?: string; amount_cents: number; expires_at: string | null }

/**
 * Migration import (decisions §10): balances from a previous system arrive as ONE `adjust` entry
 * with reason_code `migration` per member (never as replayed orders, which would earn again).
 * Customers unknown here are enrolled (`registered`: they had joined the old programme). An
 * entry is idempotent per (batch, member); the whole batch can be reversed by its id.
 */
export class MigrationsService {
  constructor(
    private readonly pool: Pool,
    private readonly programs: ProgramStore,
    private readonly readModels: LedgerReadModels,
    private readonly members: MembersService,
  ) {}

  private async emailOf(tenant: string, memberId: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ value: string }>(
      `select value from ledger.identities where tenant = $1 and member_id = $2 and kind = 'email'`, [tenant, memberId]);
    return rows[0]?.value ?? null;
  }

  /** The owners of every identifier the batch names, in one query (kind|value → member id). */
  private async owners(tenant: string, entries: MigrationEntryInput[]): Promise<Map<string, string>> {
    const kinds: string[] = [];
    const values: string[] = [];
    for (const e of entries) {
      if (typeof e?.email === 'string') { kinds.push('email'); values.push(normaliseEmail(e.email)); }
      if (typeof e?.phone === 'string') {
        const p = normalisePhone(e.phone);
        if (p.ok) { kinds.push('phone'); values.push(p.value); }
      }
      if (typeof e?.external_ref === 'string') { kinds.push('ref'); values.push(e.external_ref); }
    }
    const { rows } = await this.pool.query<{ kind: string; value: string; member_id: string }>(
      `select i.kind, i.value, i.member_id from unnest($2::text[], $3::text[]) as q(kind, value)
         join ledger.identities i on i.tenant = $1 and i.kind = q.kind and i.value = q.value`, [tenant, kinds, values]);
    return new Map(rows.map((r) => [`${r.kind}|${r.value}`, r.member_id]));
  }

  /** Everything that would refuse an entry is checked before anything is written: a 422 imports nothing. */
  private async plan(tenant: string, entries: MigrationEntryInput[], now: string): Promise<{ planned: Planned[]; emailOwners: Map<string, string> }> {
    const errors: FieldError[] = [];
    if (!Array.isArray(entries) || entries.length === 0) throw validation([{ path: '/entries', message: 'must contain at least 1 entry' }]);
    if (entries.length > MAX_MIGRATION_ENTRIES) throw validation([{ path: '/entries', message: `must contain at most ${MAX_MIGRATION_ENTRIES} entries` }]);
    const known = await this.owners(tenant, entries);
    const owner = (kind: 'email' | 'phone' | 'ref', value: string): string | null => known.get(`${kind}|${value}`) ?? null;
    const byEmail = new Map<string, number>();
    const phoneClaims = new Map<string, string>();
    const refClaims = new Map<string, string>();
    const planned: Planned[] = [];
    for (const [i, e] of entries.entries()) {
      const at = (field: string) => `/entries/${i}/${field}`;
      if (typeof e?.email !== 'string' || !e.email.includes('@')) { errors.push({ path: at('email'), message: 'must be an email' }); continue; }
      if (!Number.isSafeInteger(e.amount_cents) || e.amount_cents < 1) errors.push({ path: at('amount_cents'), message: 'must be an integer of at least 1' });
      const email = normaliseEmail(e.email);
      const first = byEmail.get(email);
      if (first !== undefined) errors.push({ path: at('email'), message: `duplicate email in this batch (first at /entries/${first})` });
      else byEmail.set(email, i);
      let phone: string | undefined;
      if (e.phone !== undefined) {
        const p = normalisePhone(e.phone, at('phone'));
        if (p.ok) phone = p.value;
        else errors.push(p.error);
      }
      let expires: string | null = null;
      if (e.expires_at !== undefined && e.expires_at !== null) {
        const t = typeof e.expires_at === 'string' && ISO_WITH_OFFSET.test(e.expires_at) ? Date.parse(e.expires_at) : NaN;
        if (Number.isNaN(t)) errors.push({ path: at('expires_at'), message: 'must be an ISO 8601 date-time with a UTC offset' });
        else if (t <= Date.parse(now)) errors.push({ path: at('expires_at'), message: 'must be in the future' });
        else expires = new Date(t).toISOString();
      }
      // identifiers that belong to another member would make the enrolment refuse this entry (an
      // enrolled member is credited as it is: its phone and ref are not touched, so not checked)
      const emailOwner = owner('email', email);
      const ownerState = emailOwner ? await this.members.load(tenant, emailOwner) : null;
      const enrols = !ownerState?.exists || ownerState.state === 'prospect';
      for (const [kind, value, claims, field] of [['phone', phone, phoneClaims, 'phone'], ['ref', e.external_ref, refClaims, 'external_ref']] as const) {
        if (value === undefined || !enrols) continue;
        const claimedBy = claims.get(value);
        if (claimedBy !== undefined && claimedBy !== email) { errors.push({ path: at(field), message: `${field} is also given for another email in this batch` }); continue; }
        claims.set(value, email);
        const other = owner(kind, value);
        if (!other || other === emailOwner) continue;
        // a prospect known only by this phone/ref (no email) is adopted by the enrolment; anyone else is a conflict
        const conflict = emailOwner !== null || (await this.emailOf(tenant, other)) !== null;
        if (conflict) errors.push({ path: at(field), message: `${field} belongs to a different member` });
      }
      planned.push({ index: i, email, phone, external_ref: e.external_ref, amount_cents: e.amount_cents, expires_at: expires });
    }
    if (errors.length) throw validation(errors);
    const emailOwners = new Map([...known].filter(([k]) => k.startsWith('email|')).map(([k, v]) => [k.slice(6), v]));
    return { planned, emailOwners };
  }

  async import(tenant: string, entries: MigrationEntryInput[], idempotencyKey?: string | null): Promise<MigrationResult> {
    const now = (await this.programs.now(tenant)).toISOString();
    const program = await this.programs.forTenant(tenant);
    const { planned, emailOwners } = await this.plan(tenant, entries, now);
    const batch_id = idempotencyKey ? batchIdFor(tenant, idempotencyKey) : newId('MB');
    let imported = 0;
    let members_created = 0;
    // entries name distinct members (emails are unique in a batch), so a few run side by side
    await inParallel(planned, IMPORT_CONCURRENCY, async (p) => {
      // the owners were read with the plan; an email claimed since then is found by the enrolment
      const existed = emailOwners.get(p.email) ?? null;
      let memberId = existed;
      const current = existed ? await this.members.load(tenant, existed) : null;
      const expires_at = p.expires_at ?? expiresAtFor(program.settings.expiry, null, now);
      const entryId = newId('LE');
      const entry = (id: string, s: MemberAggregate): MemberEvent[] => {
        const cause = `migration:${batch_id}:${id}`;
        if (s.causes.has(cause)) return [];
        return decideAdjust(s, {
          entryId, amount_cents: p.amount_cents, reason_code: MIGRATION_REASON, note: null, cause, actor: 'admin',
          at: now, expires_at, batch_id,
        });
      };
      if (!current?.exists || current.state === 'prospect') {
        // unknown customers (and prospects) are enrolled: they had joined the old programme, whose
        // signup bonus they already had; an enrolled member's profile is left as it is. A member
        // this call creates gets its entry in the same append as its creation.
        const r = await this.members.enrol(tenant, { email: p.email, phone: p.phone, external_ref: p.external_ref }, now, { signupBonus: false, also: entry });
        memberId = r.member.id;
        if (!current?.exists && r.created) members_created++;
        if (r.alsoApplied) {
          imported++;
          return;
        }
      }
      const id = memberId!;
      await this.members.decide(tenant, id, (s) => ({ events: entry(id, s), result: null }));
      imported++;
    });
    return { batch_id, imported, members_created };
  }

  /** Reverses every entry of the batch that is not reversed yet (a `reverse` entry each); a second call reverses nothing more. */
  async reverse(batchId: string): Promise<MigrationReversal> {
    // the batch's entries are read from a read model: include an import that just finished
    await this.readModels.catchUp(10_000);
    const { rows } = await this.pool.query<{ tenant: string; member_id: string; entry_id: string }>(
      'select tenant, member_id, entry_id from ledger.migration_entries where batch_id = $1 order by created_at, entry_id', [batchId]);
    if (!rows.length) throw notFound('migration batch');
    let reversed = 0;
    for (const r of rows) {
      const now = (await this.programs.now(r.tenant)).toISOString();
      const reversal = { credit_entry_id: r.entry_id, entryId: newId('LE'), batch_id: batchId, at: now };
      const { result } = await this.members.decide(r.tenant, r.member_id, (s) => {
        const { events, reversed: done } = decideMigrationReversal(s, reversal);
        return { events, result: done };
      });
      if (result) reversed++;
    }
    return { batch_id: batchId, reversed, entries: rows.length };
  }
}
