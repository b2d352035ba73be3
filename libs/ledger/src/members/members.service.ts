import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { ProgramStore, ReadonlyProgram } from '@loyalty/programs';
import { MemberView, Rule, memberStreamId as memberStream } from '@loyalty/contracts';
import {
  AppendResult, AppendRow, CommandHandler, Decided, Decision, EventStore, GroupCommitter, GroupOutcome, NewEvent, PostgresEventStore, WrongExpectedRevisionError,
  appendFewArguments, appendOutcomeOf, decideOn,
} from '@loyalty/event-store';
import {
  CreateMemberCommand, MemberAggregate, MemberEvent, ProfileCommand, decideCreate, decideProfile, decideSignupBonus, memberEvolver,
} from '@loyalty/domain-member';
import { FieldError, KeyedMutex, ProblemError, entryIdFor, newId, newReferralCode, notFound, pgArray, prepared, problem, randomBytesPooled, validation } from '@loyalty/platform';
import { LedgerReadModels } from '../ledger.read-models';
import type { Pii, PiiVault } from '../pii/pii.vault';
import { MemberRef, normaliseEmail, normalisePhone, parseMemberRef } from './identity';
import { identityKeys } from './identity-locks';
import { toMemberView } from './member.view';

/** Events a caller adds to a member's creation, in the same append (e.g. a migration import's balance), given the state after the creation. */
export type AlsoOnCreation = (memberId: string, created: MemberAggregate) => MemberEvent[];

/** `alsoApplied`: this call created the member and appended the caller's `also` events with it. */
export interface EnrolOutcome { created: boolean; member: MemberView; alsoApplied: boolean }

export interface ProfileInput { email?: string; phone?: string; external_ref?: string; accepted_terms_version?: string; marketing_consent?: boolean }

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Identity look-ups of a group, prepared. Written as one probe of the identity key per item (a
 * `lateral` subquery): a generic plan made while the table was small read it whole (a hash join
 * over a sequential scan) and kept doing so as it grew.
 */
const LOOKUP_SQL = prepared('identity_lookup',
  `select q.n, i.member_id from unnest($1::text[], $2::text[], $3::text[]) with ordinality as q(tenant, kind, value, n)
     cross join lateral (
       select x.member_id from ledger.identities x where x.tenant = q.tenant and x.kind = q.kind and x.value = q.value limit 1) i`);

/** Identity claims of a group: see MembersService.claims. */
const CLAIM_TEXT = `with q as (select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[]) with ordinality as q(tenant, kind, value, member_id, key, n)),
            ins as (
              insert into ledger.identities (tenant, kind, value, member_id)
              select distinct on (tenant, kind, value) tenant, kind, value, member_id from q order by tenant, kind, value, n
              on conflict (tenant, kind, value) do nothing returning tenant, kind, value, member_id),
            keys as (
              insert into ledger.member_keys (tenant, member_id, key)
              select q.tenant, q.member_id, q.key from q join ins i on i.tenant = q.tenant and i.kind = q.kind and i.value = q.value and i.member_id = q.member_id
              where q.key is not null order by 1, 2
              on conflict do nothing)
       select q.n, coalesce(i.member_id, x.member_id) as member_id from q
         left join ins i on i.tenant = q.tenant and i.kind = q.kind and i.value = q.value
         left join lateral (
           select y.member_id from ledger.identities y where y.tenant = q.tenant and y.kind = q.kind and y.value = q.value limit 1) x on true`;
/**
 * Groups of up to this many claims run the claim prepared (its generic plan joins the group's rows
 * by nested loops, which is the plan for a handful of rows, not for thousands); larger groups (an
 * import) are planned for their size.
 */
const CLAIM_PREPARED_MAX = 64;
const CLAIM_SQL = prepared('identity_claim', CLAIM_TEXT);

/**
 * A cached programme's rules as the deciders take them: copied once per programme version (the
 * cache hands out a new frozen object when the programme changes), not once per enrolment.
 */
const RULES = new WeakMap<ReadonlyProgram, Rule[]>();
const rulesOf = (program: ReadonlyProgram): Rule[] => {
  let rules = RULES.get(program);
  if (!rules) {
    rules = structuredClone(program.rules) as Rule[];
    RULES.set(program, rules);
  }
  return rules;
};

/** A new member's email claim and creation in one statement (ledger.enrol_new), prepared. */
const ENROL_NEW_SQL = prepared('ledger_enrol_new',
  `select * from ledger.enrol_new($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::text[], $7::int[], $8::uuid[], $9::text[], $10::json, $11::json)`);

/** A member to create with its email's claim (MembersService.creations). */
interface NewMember { tenant: string; email: string; memberId: string; key: Buffer; events: NewEvent[] }
/** The email's owner after the claim (null: lost to a concurrent claim, look again), and the creation when this item made it. */
interface NewMemberOutcome { owner: string | null; created: AppendResult | null }

/** One per process: every MembersService of the process serialises on the same identity values. */
const LOCKS = new KeyedMutex();

/**
 * The member stream and identity (ledger service): load, decide and view a member, resolve any id
 * form, and the use cases that claim identifiers: enrol, resolve (find or create a prospect) and
 * profile changes. The other member use cases stand in their own folders (read-members, erase,
 * adjust, member-state, referral-reward) and reach the stream through this class.
 */
export class MembersService {
  /** Identity look-ups that arrive while one runs share the next query (many order events at once). */
  private readonly lookups = new GroupCommitter<{ tenant: string; kind: string; value: string }, string | null>(async (items) => {
    const { rows } = await this.pool.query<{ n: string; member_id: string }>(
      LOOKUP_SQL([pgArray(items.map((i) => i.tenant)), pgArray(items.map((i) => i.kind)), pgArray(items.map((i) => i.value))]));
    const out: (string | null)[] = items.map(() => null);
    for (const r of rows) out[Number(r.n) - 1] = r.member_id;
    return out;
  });

  /**
   * Identity claims that arrive together share one statement (many enrolments at once). Each item
   * gets the value's owner: itself when its insert won; another member when the value was taken
   * (or claimed by an earlier item of the same statement). A claim that lost to a transaction
   * committed after the statement began sees no owner (null): the caller looks again, as on any lost claim.
   */
  private readonly claims = new GroupCommitter<{ tenant: string; kind: string; value: string; memberId: string; key: Buffer | null }, string | null>(async (items) => {
    const claim = items.length <= CLAIM_PREPARED_MAX ? CLAIM_SQL : (values: unknown[]) => ({ text: CLAIM_TEXT, values });
    const { rows } = await this.pool.query<{ n: string; member_id: string | null }>(claim(
      [pgArray(items.map((i) => i.tenant)), pgArray(items.map((i) => i.kind)), pgArray(items.map((i) => i.value)), pgArray(items.map((i) => i.memberId)), items.map((i) => i.key)]));
    const out: (string | null)[] = items.map(() => null);
    for (const r of rows) out[Number(r.n) - 1] = r.member_id;
    items.forEach((it, i) => { if (it.key && out[i] === it.memberId) this.vault.adopt(it.tenant, it.memberId, it.key); });
    return out;
  }, 500, 2);

  /**
   * Claims an identifier for a member id this call just minted, creating the member's PII key in
   * the same statement when the claim wins. Answers the identifier's owner: the minted id when
   * the claim won, another member when it is taken, null when it lost to a concurrent claim.
   */
  private claimForNew(tenant: string, kind: 'email' | 'phone' | 'ref', value: string, memberId: string): Promise<string | null> {
    return this.claims.submit({ tenant, kind, value, memberId, key: randomBytesPooled(32) });
  }

  /**
   * Enrolments of new members by email alone that arrive together: each email claimed and each
   * member created in one statement, one transaction (ledger.enrol_new), instead of a claim's group
   * commit and then a creation's. Only over the PostgreSQL event store, which keeps es.append_few in
   * the ledger's database; other stores take the two steps.
   */
  private readonly creations: GroupCommitter<NewMember, NewMemberOutcome> | null;

  constructor(
    private readonly pool: Pool,
    private readonly handler: CommandHandler,
    private readonly programs: ProgramStore,
    private readonly vault: PiiVault,
    private readonly readModels: LedgerReadModels,
    store: EventStore | null = null,
  ) {
    this.store = store instanceof PostgresEventStore ? store : null;
    this.creations = this.store ? new GroupCommitter((items) => this.createMany(items), 500, 2) : null;
  }

  /** The event store when it is PostgreSQL's (the one statement needs es.append_few in this database). */
  private readonly store: PostgresEventStore | null;

  private async createMany(items: NewMember[]): Promise<GroupOutcome<NewMemberOutcome>[]> {
    const appends = items.map((i) => ({ streamId: memberStream(i.tenant, i.memberId), events: i.events, expected: 'no_stream' as const }));
    const { rows } = await this.pool.query<AppendRow & { n: number; owner: string | null }>(ENROL_NEW_SQL([
      pgArray(items.map((i) => i.tenant)), pgArray(items.map((i) => i.email)), pgArray(items.map((i) => i.memberId)), items.map((i) => i.key),
      ...appendFewArguments(appends)]));
    const out: GroupOutcome<NewMemberOutcome>[] = items.map(() => ({ owner: null, created: null }));
    for (const r of rows) {
      const k = r.n - 1;
      const created = r.outcome === null ? null : appendOutcomeOf(appends[k].streamId, 'no_stream', r);
      out[k] = { owner: r.owner, created: created instanceof Error ? null : created };
    }
    if (rows.some((r) => r.outcome === 'ok')) this.store!.appendedElsewhere();
    return out;
  }

  // ---------- reads ----------

  async load(tenant: string, memberId: string): Promise<MemberAggregate> {
    const { state } = await this.handler.load(memberStream(tenant, memberId), memberEvolver);
    return state;
  }

  /** Resolves any accepted id form to a member id of this tenant, or 404. */
  async resolveId(tenant: string, raw: string): Promise<string> {
    const ref = parseMemberRef(raw);
    if (!ref) throw notFound('member');
    const id = await this.lookup(tenant, ref);
    if (!id) throw notFound('member');
    if (ref.kind === 'id' && !(await this.exists(tenant, id))) throw notFound('member');
    return id;
  }

  private async lookup(tenant: string, ref: MemberRef): Promise<string | null> {
    if (ref.kind === 'id') return ref.value;
    return this.lookups.submit({ tenant, kind: ref.kind, value: ref.value });
  }

  /** The programme partition of a member id (admin plane calls name only the id). */
  async tenantOf(memberId: string): Promise<string> {
    const find = async () => (await this.pool.query<{ tenant: string }>('select tenant from ledger.members where member_id = $1', [memberId])).rows[0];
    // the read model may not have caught up with a member enrolled a moment ago: catch up (as long
    // as a busy machine needs: the admin plane is not latency-bound) and look again
    const row = (await find()) ?? (await this.readModels.catchUp(10_000), await find());
    if (!row) throw notFound('member');
    return row.tenant;
  }

  async view(tenant: string, memberId: string, current?: MemberAggregate): Promise<MemberView> {
    const s = current ?? await this.load(tenant, memberId);
    if (!s.exists) throw notFound('member');
    const pii = await this.vault.open(tenant, memberId, s.pii);
    const program = await this.programs.readOnlyForTenant(tenant);
    return toMemberView(s, pii, await this.programs.now(tenant), program.settings.expiry);
  }

  async get(tenant: string, raw: string): Promise<MemberView> {
    return this.view(tenant, await this.resolveId(tenant, raw));
  }

  /** Whether the member exists: a member never stops existing, so a cached sighting is enough. */
  private async exists(tenant: string, memberId: string): Promise<boolean> {
    if (this.handler.peek<MemberAggregate>(memberStream(tenant, memberId))?.exists) return true;
    return (await this.load(tenant, memberId)).exists;
  }

  // ---------- writes ----------

  /**
   * Runs a decision on a member stream. It does not wait for the read models: GET by any id reads
   * the stream itself, and the reads that use read models (lists, admin look-ups by member id,
   * liability) catch up first (LedgerReadModels.catchUp).
   */
  decide<R>(tenant: string, memberId: string, decide: (s: MemberAggregate) => Decision<MemberEvent, R> | Promise<Decision<MemberEvent, R>>): Promise<Decided<MemberAggregate, MemberEvent, R>> {
    return decideOn(this.handler, memberStream(tenant, memberId), memberEvolver, decide);
  }

  private async validatedIdentity(input: ProfileInput): Promise<{ email?: string; phone?: string; external_ref?: string }> {
    const errors: FieldError[] = [];
    let phone: string | undefined;
    if (input.phone !== undefined) {
      const p = normalisePhone(input.phone);
      if (p.ok) phone = p.value;
      else errors.push(p.error);
    }
    if (errors.length) throw validation(errors);
    return { email: input.email !== undefined ? normaliseEmail(input.email) : undefined, phone, external_ref: input.external_ref };
  }

  private async owner(tenant: string, kind: 'email' | 'phone' | 'ref', value: string | undefined): Promise<string | null> {
    if (value === undefined) return null;
    return this.lookup(tenant, { kind, value } as MemberRef);
  }

  private async claim(tenant: string, kind: 'email' | 'phone' | 'ref', value: string, memberId: string): Promise<boolean> {
    return (await this.claims.submit({ tenant, kind, value, memberId, key: null })) === memberId;
  }

  private async unclaim(tenant: string, memberId: string, kind: 'email' | 'phone' | 'ref', value?: string | null): Promise<void> {
    if (value === undefined) {
      await this.pool.query('delete from ledger.identities where tenant = $1 and member_id = $2 and kind = $3', [tenant, memberId, kind]);
    } else if (value !== null) {
      await this.pool.query('delete from ledger.identities where tenant = $1 and member_id = $2 and kind = $3 and value = $4', [tenant, memberId, kind, value]);
    }
  }

  /**
   * POST /v1/members: email anchors identity. 201 when this call enrolled the member (new or a
   * prospect), 200 when already enrolled (possibly enriched with a phone or external_ref).
   */
  async enrol(tenant: string, input: ProfileInput & { email: string }, at: string, opts: { signupBonus?: boolean; also?: AlsoOnCreation } = {}): Promise<EnrolOutcome> {
    // a migration import enrols members who joined the old programme: no signup bonus for them
    const signupBonus = opts.signupBonus ?? true;
    const ids = await this.validatedIdentity(input);
    return LOCKS.run(identityKeys(tenant, ids), () => this.enrolLocked(tenant, ids as typeof ids & { email: string }, input, at, signupBonus, opts.also));
  }

  private async enrolLocked(tenant: string, ids: { email: string; phone?: string; external_ref?: string }, input: ProfileInput, at: string, signupBonus: boolean, also?: AlsoOnCreation): Promise<EnrolOutcome> {
    const email = ids.email;
    for (let attempt = 0; attempt < 50; attempt++) {
      /** a member id minted by this call: its stream cannot exist yet, so nothing needs reading */
      let minted = false;
      let memberId: string | null;
      if (!ids.phone && !ids.external_ref) {
        // nothing to adopt: claim the email for a new id at once; a taken email answers its owner
        const candidate = newId('M');
        const made = this.creations ? await this.enrolNew(tenant, email, candidate, input, at, signupBonus, also) : undefined;
        if (made && 'state' in made) return { created: true, member: await this.view(tenant, candidate, made.state), alsoApplied: !!also };
        // the claim and creation in one statement, or (another event store) the claim alone
        memberId = made ? made.owner : await this.claimForNew(tenant, 'email', email, candidate);
        if (!memberId) continue; // lost to a concurrent enrolment: look again
        minted = memberId === candidate;
      } else {
        memberId = await this.owner(tenant, 'email', email);
      }
      if (!memberId) {
        // No member has this email; a prospect known only by phone or ref is adopted.
        const byPhone = await this.owner(tenant, 'phone', ids.phone);
        const byRef = await this.owner(tenant, 'ref', ids.external_ref);
        for (const other of [byPhone, byRef]) {
          if (!other) continue;
          const s = await this.load(tenant, other);
          const pii = await this.vault.open(tenant, other, s.pii);
          if (pii.email && pii.email !== email) {
            if (other === byPhone) throw problem('phone-conflict', 'This phone number belongs to a different member');
            throw validation([{ path: '/external_ref', message: 'external_ref belongs to a different member' }]);
          }
        }
        if (byPhone && byRef && byPhone !== byRef) throw problem('phone-conflict', 'The phone and external_ref belong to different members');
        const adopt = byPhone ?? byRef;
        const candidate = adopt ?? newId('M');
        if (!(await this.claim(tenant, 'email', email, candidate))) continue; // a concurrent enrolment won; go again
        memberId = candidate;
        minted = !adopt;
      }
      if (minted) this.handler.primeNew(memberStream(tenant, memberId), memberEvolver);
      const s = minted ? memberEvolver.initialState() : await this.load(tenant, memberId);
      if (!s.exists) {
        let created: 'created' | 'exists' | 'retry';
        let state: MemberAggregate | undefined;
        try {
          ({ created, state } = await this.createIfAbsent(tenant, memberId, 'registered', { email, phone: ids.phone ?? null, external_ref: ids.external_ref ?? null }, input, at, attempt, signupBonus, also));
        } catch (e) {
          await this.releaseClaimsOfUncreated(tenant, memberId);
          throw e;
        }
        if (created === 'retry') continue;
        if (created === 'created') return { created: true, member: await this.view(tenant, memberId, state), alsoApplied: !!also };
        // someone else created it: fall through to enrich as "already enrolled"
      }
      const result = await this.enrichAndEnrol(tenant, memberId, { email, phone: ids.phone, external_ref: ids.external_ref }, input, at, true, signupBonus);
      return { created: result.enrolled, member: await this.view(tenant, memberId), alsoApplied: false };
    }
    throw problem('unavailable', 'Could not enrol the member; retry with the same idempotency key');
  }

  /**
   * A new member by email alone: the email claimed for `memberId` and the member created (with its
   * signup bonus and the caller's `also` events) in one statement (creations). Answers the member's
   * state when this call created it, else the email's owner (null: lost to a claim still running,
   * look again). The member's PII key is made here and stored with the claim.
   */
  private async enrolNew(tenant: string, email: string, memberId: string, input: ProfileInput, at: string, signupBonus: boolean, also?: AlsoOnCreation): Promise<{ state: MemberAggregate } | { owner: string | null }> {
    const key = randomBytesPooled(32);
    this.vault.adopt(tenant, memberId, key);
    let outcome: NewMemberOutcome;
    let events: MemberEvent[];
    try {
      const sealed = await this.vault.seal(tenant, memberId, { email, phone: null, external_ref: null });
      const bonus = signupBonus ? await this.signupBonus(tenant, memberId, at) : null;
      const initial = memberEvolver.initialState();
      events = [...decideCreate(initial, this.creation(memberId, 'registered', sealed, input, at)), ...(bonus ? bonus(initial) : [])];
      if (also) events.push(...also(memberId, events.reduce((t, e) => memberEvolver.evolve(t, e), memberEvolver.initialState())));
      const toAppend = events.map((e) => ({ id: (e as { id?: string }).id ?? randomUUID(), type: e.type, data: e.data }));
      outcome = await this.creations!.submit({ tenant, email, memberId, key, events: toAppend });
    } catch (e) {
      // nothing of the statement was written (one transaction)
      this.vault.forget(tenant, memberId);
      throw e;
    }
    if (outcome.owner !== memberId || !outcome.created) {
      this.vault.forget(tenant, memberId);
      return { owner: outcome.owner === memberId ? null : outcome.owner };
    }
    const state = events.reduce((t, e) => memberEvolver.evolve(t, e), memberEvolver.initialState());
    this.handler.recordCreated(memberStream(tenant, memberId), memberEvolver, state, outcome.created.nextRevision);
    return { state };
  }

  /** A member's creation as the deciders take it. */
  private creation(memberId: string, state: 'prospect' | 'registered', pii: CreateMemberCommand['pii'], input: ProfileInput, at: string): CreateMemberCommand {
    return {
      member_id: memberId, state, referral_code: newReferralCode(), pii,
      marketing_consent: input.marketing_consent ?? false, accepted_terms_version: input.accepted_terms_version ?? null, at,
    };
  }

  /** A creation that failed leaves no identity claims behind (they would hold an email or phone for nobody). */
  private async releaseClaimsOfUncreated(tenant: string, memberId: string): Promise<void> {
    if ((await this.exists(tenant, memberId))) return;
    await this.pool.query('delete from ledger.identities where tenant = $1 and member_id = $2', [tenant, memberId]);
  }

  /** Creates the member stream. The identity claim happened first; a claim whose creator vanished is completed by whoever finds it. */
  private async createIfAbsent(tenant: string, memberId: string, state: 'prospect' | 'registered', pii: Pii, input: ProfileInput, at: string, attempt: number, signupBonus = true, also?: AlsoOnCreation): Promise<{ created: 'created' | 'exists' | 'retry'; state?: MemberAggregate }> {
    // give the claimant a moment to append before completing its work
    if (attempt > 0) {
      for (let i = 0; i < 20; i++) {
        if ((await this.exists(tenant, memberId))) return { created: 'exists' };
        await sleep(25);
      }
    }
    if (pii.phone && !(await this.claim(tenant, 'phone', pii.phone, memberId))) {
      throw problem('phone-conflict', 'This phone number belongs to a different member');
    }
    if (pii.external_ref && !(await this.claim(tenant, 'ref', pii.external_ref, memberId))) {
      throw validation([{ path: '/external_ref', message: 'external_ref belongs to a different member' }]);
    }
    const sealed = await this.vault.seal(tenant, memberId, pii);
    const bonus = state === 'registered' && signupBonus ? await this.signupBonus(tenant, memberId, at) : null;
    try {
      const creation = this.creation(memberId, state, sealed, input, at);
      const out = await this.handler.handle(memberStream(tenant, memberId), memberEvolver, (s) => {
        const created = decideCreate(s, creation);
        if (!created.length) return { events: [], result: false };
        const events: MemberEvent[] = [...created, ...(bonus ? bonus(s) : [])];
        // a stream without its creation is empty: the state after it is folded from a fresh start (never the cached state)
        if (also) events.push(...also(memberId, events.reduce((t, e) => memberEvolver.evolve(t, e), memberEvolver.initialState())));
        return { events, result: true };
      });
      return out.result ? { created: 'created', state: out.state } : { created: 'exists' };
    } catch (e) {
      if (e instanceof WrongExpectedRevisionError) return { created: 'retry' };
      throw e;
    }
  }

  private async enrichAndEnrol(tenant: string, memberId: string, ids: { email?: string; phone?: string; external_ref?: string }, input: ProfileInput, at: string, enrol = true, signupBonus = true): Promise<{ enrolled: boolean }> {
    const current = await this.load(tenant, memberId);
    const pii = await this.vault.open(tenant, memberId, current.pii);
    const next: Pii = { ...pii };
    if (ids.phone && ids.phone !== pii.phone) {
      const other = await this.owner(tenant, 'phone', ids.phone);
      if (other && other !== memberId) throw problem('phone-conflict', 'This phone number belongs to a different member');
      if (!(await this.claim(tenant, 'phone', ids.phone, memberId))) throw problem('phone-conflict', 'This phone number belongs to a different member');
      if (pii.phone) await this.unclaim(tenant, memberId, 'phone', pii.phone);
      next.phone = ids.phone;
    }
    if (ids.external_ref && ids.external_ref !== pii.external_ref) {
      const other = await this.owner(tenant, 'ref', ids.external_ref);
      if (other && other !== memberId) throw validation([{ path: '/external_ref', message: 'external_ref belongs to a different member' }]);
      await this.claim(tenant, 'ref', ids.external_ref, memberId);
      if (pii.external_ref) await this.unclaim(tenant, memberId, 'ref', pii.external_ref);
      next.external_ref = ids.external_ref;
    }
    // a prospect known by phone or ref gains its email: claim it, or later look-ups by email miss it
    if (ids.email && !pii.email && (await this.claim(tenant, 'email', ids.email, memberId))) next.email = ids.email;
    const piiChanged = JSON.stringify(next) !== JSON.stringify(pii);
    const sealed = piiChanged ? await this.vault.seal(tenant, memberId, next) : undefined;
    const bonus = current.state === 'prospect' && signupBonus ? await this.signupBonus(tenant, memberId, at) : null;
    const change: ProfileCommand = { pii: sealed, marketing_consent: input.marketing_consent, accepted_terms_version: input.accepted_terms_version, enrol, at };
    const { result } = await this.decide(tenant, memberId, (s) => {
      const { events, enrolled } = decideProfile(s, change);
      if (enrolled && bonus) events.push(...bonus(s));
      return { events, result: enrolled };
    });
    return { enrolled: result };
  }

  /** The signup bonus of a member enrolling now (decisions §5): `earn` entries, once per member ever (cause `signup:<id>`). */
  private async signupBonus(tenant: string, memberId: string, at: string): Promise<(s: MemberAggregate) => MemberEvent[]> {
    const program = await this.programs.readOnlyForTenant(tenant);
    const rules = rulesOf(program);
    return (s) => decideSignupBonus(s, {
      member_id: memberId, rules, expiry: program.settings.expiry, at,
      entryId: (cause, ruleId) => entryIdFor(tenant, `${cause}:${ruleId}`, at),
    });
  }

  /** POST /v1/members/resolve: finds the member, or creates a silent prospect. */
  async resolve(tenant: string, input: { email?: string; phone?: string; external_ref?: string }, at: string): Promise<{ created: boolean; member: MemberView }> {
    if (input.email === undefined && input.phone === undefined && input.external_ref === undefined) {
      throw validation([{ path: '', message: 'at least one of email, phone or external_ref is required' }]);
    }
    const ids = await this.validatedIdentity(input);
    return LOCKS.run(identityKeys(tenant, ids), () => this.resolveLocked(tenant, ids, at));
  }

  private async resolveLocked(tenant: string, ids: { email?: string; phone?: string; external_ref?: string }, at: string): Promise<{ created: boolean; member: MemberView }> {
    const owners = new Set<string>();
    for (const [kind, value] of [['email', ids.email], ['phone', ids.phone], ['ref', ids.external_ref]] as const) {
      const o = await this.owner(tenant, kind, value);
      if (o) owners.add(o);
    }
    if (owners.size > 1) throw problem('phone-conflict', 'The identifiers belong to different members');
    if (owners.size === 1) {
      const memberId = [...owners][0];
      const s = await this.load(tenant, memberId);
      if (s.exists) {
        await this.enrichAndEnrol(tenant, memberId, ids, {}, at, false);
        return { created: false, member: await this.view(tenant, memberId) };
      }
    }
    const { memberId, created } = await this.findOrCreateProspectLocked(tenant, ids, at);
    return { created, member: await this.view(tenant, memberId) };
  }

  /** Used by resolve and by order events naming an unknown customer. */
  async findOrCreateProspect(tenant: string, ids: { email?: string; phone?: string; external_ref?: string }, at: string): Promise<{ memberId: string; created: boolean }> {
    return LOCKS.run(identityKeys(tenant, ids), () => this.findOrCreateProspectLocked(tenant, ids, at));
  }

  private async findOrCreateProspectLocked(tenant: string, ids: { email?: string; phone?: string; external_ref?: string }, at: string): Promise<{ memberId: string; created: boolean }> {
    for (let attempt = 0; attempt < 50; attempt++) {
      for (const [kind, value] of [['email', ids.email], ['ref', ids.external_ref], ['phone', ids.phone]] as const) {
        const o = await this.owner(tenant, kind, value);
        if (o && (await this.exists(tenant, o))) return { memberId: o, created: false };
      }
      const candidate = newId('M');
      const [kind, value] = ids.email ? ['email', ids.email] as const : ids.external_ref ? ['ref', ids.external_ref] as const : ['phone', ids.phone!] as const;
      if ((await this.claimForNew(tenant, kind, value, candidate)) !== candidate) {
        const winner = (await this.owner(tenant, kind, value))!;
        await this.createIfAbsent(tenant, winner, 'prospect', { email: ids.email ?? null, phone: ids.phone ?? null, external_ref: ids.external_ref ?? null }, {}, at, 1).catch(() => undefined);
        continue;
      }
      const pii: Pii = { email: ids.email ?? null, phone: kind === 'phone' ? ids.phone! : null, external_ref: kind === 'ref' ? ids.external_ref! : null };
      // secondary identifiers are claimed when free; a clash keeps the prospect without them
      if (ids.phone && kind !== 'phone' && (await this.claim(tenant, 'phone', ids.phone, candidate))) pii.phone = ids.phone;
      if (ids.external_ref && kind !== 'ref' && (await this.claim(tenant, 'ref', ids.external_ref, candidate))) pii.external_ref = ids.external_ref;
      let r: 'created' | 'exists' | 'retry';
      this.handler.primeNew(memberStream(tenant, candidate), memberEvolver);
      try {
        r = (await this.createIfAbsent(tenant, candidate, 'prospect', pii, {}, at, 0)).created;
      } catch (e) {
        await this.releaseClaimsOfUncreated(tenant, candidate);
        throw e;
      }
      if (r === 'retry') continue;
      return { memberId: candidate, created: r === 'created' };
    }
    throw problem('unavailable', 'Could not create the prospect; retry');
  }

  /** PATCH /v1/members/{id}: phone, external_ref, marketing_consent, accepted_terms_version (which enrols a prospect). */
  async patch(tenant: string, raw: string, input: ProfileInput, at: string): Promise<MemberView> {
    if (input.email !== undefined) throw validation([{ path: '/email', message: 'email cannot be changed through the API' }]);
    const memberId = await this.resolveId(tenant, raw);
    const s = await this.load(tenant, memberId);
    if (s.state === 'deleted' || s.state === 'anonymised') throw notFound('member');
    const ids = await this.validatedIdentity(input);
    await LOCKS.run(identityKeys(tenant, { phone: ids.phone, external_ref: ids.external_ref }), () => this.enrichAndEnrol(tenant, memberId, ids, input, at, false));
    return this.view(tenant, memberId);
  }

}

export { ProblemError };
