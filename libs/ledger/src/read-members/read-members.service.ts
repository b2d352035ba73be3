import { Pool } from 'pg';
import type { LedgerEntryStatus, LedgerEntryType, LedgerEntryView, MemberState, MemberView } from '@loyalty/contracts';
import { Page, decodeCursor, decodeCursorAs, encodeCursor } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { LedgerReadModels } from '../ledger.read-models';
import { normaliseEmail } from '../members/identity';
import { MembersService } from '../members/members.service';

/** A row of ledger.finance_entries as the member's ledger reads it. */
interface LedgerRow {
  id: string; type: LedgerEntryType; status: LedgerEntryStatus; amount_cents: string; reason_code: string | null; rule: string | null;
  parent_entry_id: string | null; order_ref: string | null; release_at: Date | null; expires_at: Date | null; created_at: Date; member_rev: string;
}

/** GET /v1/members (the members read model) and GET /v1/members/{id}/ledger (the entries read model), caught up first. */
export class ReadMembersService {
  constructor(
    private readonly members: MembersService,
    private readonly readModels: Pick<LedgerReadModels, 'catchUp'>,
    private readonly pool: Pool,
    private readonly programs: ProgramStore,
  ) {}

  async list(tenant: string, q: { limit?: number; cursor?: string; email?: string; state?: MemberState }): Promise<Page<MemberView>> {
    await this.readModels.catchUp();
    const limit = q.limit ?? 25;
    const after = decodeCursor(q.cursor);
    const params: unknown[] = [tenant, after ? Number(after[0]) : 0, limit + 1];
    let where = 'tenant = $1 and seq > $2';
    if (q.email) { params.push(normaliseEmail(q.email)); where += ` and email = $${params.length}`; }
    if (q.state) { params.push(q.state); where += ` and state = $${params.length}`; }
    const { rows } = await this.pool.query<{ seq: string; member_id: string }>(
      `select seq, member_id from ledger.members where ${where} order by seq limit $3`, params);
    const page = rows.slice(0, limit);
    const data = await Promise.all(page.map((r) => this.members.view(tenant, r.member_id)));
    return { data, pagination: { cursor: rows.length > limit ? encodeCursor([page[page.length - 1].seq]) : null } };
  }

  /**
   * The member's ledger in recording order. Read from the ledger's entry read model (the member
   * aggregate keeps only the entries decisions can still reach, issue 13), caught up first so a
   * read right after a write sees it. The cursor is the last row's (stream revision, id).
   */
  async entries(tenant: string, raw: string, q: { limit?: number; cursor?: string }) {
    const id = await this.members.resolveId(tenant, raw);
    const limit = q.limit ?? 50;
    const after = q.cursor === undefined || q.cursor === null ? null : decodeCursorAs<[number, string]>(q.cursor, (v) =>
      v.length === 2 && Number.isSafeInteger(v[0]) && (v[0] as number) >= -1 && typeof v[1] === 'string' && v[1].length <= 64);
    await this.readModels.catchUp(10_000);
    const params: unknown[] = [tenant, id, limit + 1];
    if (after) params.push(String(after[0]), after[1]);
    const { rows } = await this.pool.query<LedgerRow>(
      `select id, type, status, amount_cents, reason_code, rule, parent_entry_id, order_ref, release_at, expires_at, created_at, member_rev
         from ledger.finance_entries where tenant = $1 and member_id = $2 ${after ? 'and (member_rev, id) > ($4::bigint, $5)' : ''}
        order by member_rev, id limit $3`, params);
    const program = await this.programs.forTenant(tenant);
    const more = rows.length > limit;
    const page = more ? rows.slice(0, limit) : rows;
    const data = page.map((r): LedgerEntryView => ({
      id: r.id, type: r.type, status: r.status, amount_cents: Number(r.amount_cents), currency: program.currency_name, reason_code: r.reason_code,
      rule: r.rule, parent_entry_id: r.parent_entry_id, release_at: r.release_at?.toISOString() ?? null, expires_at: r.expires_at?.toISOString() ?? null,
      created_at: r.created_at.toISOString(), order_ref: r.order_ref,
    }));
    const last = page[page.length - 1];
    return { data, pagination: { cursor: more && last ? encodeCursor([Number(last.member_rev), last.id]) : null } };
  }
}
