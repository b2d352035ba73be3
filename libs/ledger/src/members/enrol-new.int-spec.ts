import { randomUUID } from 'node:crypto';
import { INestMicroservice } from '@nestjs/common';
import { CommandHandler, EVENT_STORE_MIGRATIONS, PROJECTION_MIGRATIONS, PostgresEventStore, appendFewArguments } from '@loyalty/event-store';
import { memberStreamId } from '@loyalty/contracts';
import { PROGRAM_MIGRATIONS, ProgramStore } from '@loyalty/programs';
import { pgArray } from '@loyalty/platform';
import { createTestDatabase, TestDatabase } from '@loyalty/testing';
import { LEDGER_MIGRATIONS } from '../ledger.migrations';
import { LedgerReadModels } from '../ledger.read-models';
import { startLedgerTestApp } from '../ledger.test-app';
import { PiiVault } from '../pii/pii.vault';
import { MembersService } from './members.service';

/**
 * A new member's email claim and creation in one statement (ledger.enrol_new, issue 7): against
 * real PostgreSQL, through MembersService.enrol and through the function itself.
 */
describe('enrolment: claim and creation in one statement (PostgreSQL)', () => {
  let db: TestDatabase;
  let app: INestMicroservice;
  let members: MembersService;
  let programs: ProgramStore;
  let store: PostgresEventStore;

  beforeAll(async () => {
    db = await createTestDatabase('enrol_new', { migrations: [...EVENT_STORE_MIGRATIONS, ...PROJECTION_MIGRATIONS, ...PROGRAM_MIGRATIONS, ...LEDGER_MIGRATIONS], poolMax: 20 });
    const started = await startLedgerTestApp(db);
    ({ app, members, programs } = started);
    store = started.store;
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const programme = async () => {
    const p = await programs.create({ program_name: 'P', currency_name: 'pts' });
    const tenant = `${p.id}_test`;
    return { tenant, at: (await programs.now(tenant)).toISOString() };
  };
  const identities = async (tenant: string) =>
    (await db.pool.query<{ value: string; member_id: string }>("select value, member_id from ledger.identities where tenant = $1 and kind = 'email' order by value", [tenant])).rows;
  const keys = async (tenant: string) =>
    (await db.pool.query<{ member_id: string }>('select member_id from ledger.member_keys where tenant = $1 order by member_id', [tenant])).rows.map((r) => r.member_id);
  const streams = async (tenant: string) =>
    (await db.pool.query<{ stream_id: string }>('select stream_id from es.streams where stream_id like $1 order by stream_id', [`${memberStreamId(tenant, '')}%`])).rows.map((r) => r.stream_id);

  it('writes the identity, the PII key and the member stream together, and a second process reads the member', async () => {
    const { tenant, at } = await programme();
    const { created, member } = await members.enrol(tenant, { email: 'Ann@Example.com' }, at);
    expect(created).toBe(true);
    expect(await identities(tenant)).toEqual([{ value: 'ann@example.com', member_id: member.id }]);
    expect(await keys(tenant)).toEqual([member.id]);
    expect(await streams(tenant)).toEqual([memberStreamId(tenant, member.id)]);
    // one transaction: the identity row, the key row and the stream's first event share their writer
    const { rows: [tx] } = await db.pool.query<{ identity: string; key: string; event: string }>(
      `select (select xmin::text from ledger.identities where tenant = $1) as identity, (select xmin::text from ledger.member_keys where tenant = $1) as key,
              (select (transaction_id::text::numeric % 4294967296)::text from es.events where stream_id = $2 and stream_revision = 0) as event`,
      [tenant, memberStreamId(tenant, member.id)]);
    expect(tx.identity).toBe(tx.event);
    expect(tx.key).toBe(tx.event);
    // another process (its own caches) reads the member, opens its PII with the stored key, and
    // finds it by email (as an order naming the customer does) without creating anyone
    const other = new MembersService(db.pool, new CommandHandler(store), programs, new PiiVault(db.pool), new LedgerReadModels(store, 2_000), store);
    expect(await other.get(tenant, member.id)).toMatchObject({ id: member.id, email: 'ann@example.com', state: 'registered' });
    expect(await other.findOrCreateProspect(tenant, { email: 'ann@example.com' }, at)).toEqual({ memberId: member.id, created: false });
  });

  it('many enrolments of one email at once create one member; the others answer it as already enrolled', async () => {
    const { tenant, at } = await programme();
    const outcomes = await Promise.all(Array.from({ length: 12 }, () => members.enrol(tenant, { email: 'same@example.com' }, at)));
    const ids = new Set(outcomes.map((o) => o.member.id));
    expect(ids.size).toBe(1);
    expect(outcomes.filter((o) => o.created)).toHaveLength(1);
    expect(await streams(tenant)).toEqual([memberStreamId(tenant, [...ids][0])]);
    expect(await keys(tenant)).toEqual([...ids]);
  });

  it('two processes enrolling the same emails at once create each member once', async () => {
    const { tenant, at } = await programme();
    const other = new MembersService(db.pool, new CommandHandler(store), programs, new PiiVault(db.pool), new LedgerReadModels(store, 2_000), store);
    const emails = Array.from({ length: 10 }, (_, i) => `m${i}@example.com`);
    const outcomes = await Promise.all(emails.flatMap((email) => [members.enrol(tenant, { email }, at), other.enrol(tenant, { email }, at)]));
    for (let i = 0; i < emails.length; i++) {
      const [a, b] = [outcomes[2 * i], outcomes[2 * i + 1]];
      expect(a.member.id).toBe(b.member.id);
      expect(Number(a.created) + Number(b.created)).toBe(1);
    }
    expect(await streams(tenant)).toHaveLength(emails.length);
    expect(await keys(tenant)).toHaveLength(emails.length);
    expect((await identities(tenant)).map((r) => r.value)).toEqual(emails);
  });

  it('a creation the event store does not write gives its claim and key back in the same statement', async () => {
    const { tenant } = await programme();
    const existing = `M-${randomUUID()}`;
    const fresh = `M-${randomUUID()}`;
    // the first item's stream exists already (expected no_stream: a conflict); the second is new
    await store.append(memberStreamId(tenant, existing), [{ id: randomUUID(), type: 'Marker', data: {} }], 'no_stream');
    // a third item claims the first one's email after it in the group: its owner was the first, which is given back
    const third = `M-${randomUUID()}`;
    const appends = [existing, fresh, third].map((m) => ({ streamId: memberStreamId(tenant, m), events: [{ id: randomUUID(), type: 'Marker', data: { m } }], expected: 'no_stream' as const }));
    const { rows } = await db.pool.query<{ n: number; owner: string | null; outcome: string | null }>(
      'select n, owner, outcome from ledger.enrol_new($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::text[], $7::int[], $8::uuid[], $9::text[], $10::json, $11::json) order by n',
      [pgArray([tenant, tenant, tenant]), pgArray(['x@example.com', 'y@example.com', 'x@example.com']), pgArray([existing, fresh, third]),
        [Buffer.alloc(32, 1), Buffer.alloc(32, 2), Buffer.alloc(32, 3)], ...appendFewArguments(appends)]);
    expect(rows).toEqual([{ n: 1, owner: null, outcome: 'conflict' }, { n: 2, owner: fresh, outcome: 'ok' }, { n: 3, owner: null, outcome: null }]);
    expect(await streams(tenant)).toEqual([memberStreamId(tenant, existing), memberStreamId(tenant, fresh)].sort());
    expect(await identities(tenant)).toEqual([{ value: 'y@example.com', member_id: fresh }]);
    expect(await keys(tenant)).toEqual([fresh]);
    expect((await store.readStream(memberStreamId(tenant, existing))).map((e) => e.type)).toEqual(['Marker']);
  });

  it('a group beyond twenty members goes through the set-based group append, with an email twice in it going to its first item', async () => {
    const { tenant } = await programme();
    const ids = Array.from({ length: 30 }, () => `M-${randomUUID()}`);
    const emails = ids.map((_, i) => (i === 29 ? 'e3@example.com' : `e${i}@example.com`));
    const appends = ids.map((m) => ({ streamId: memberStreamId(tenant, m), events: [1, 2].map((k) => ({ id: randomUUID(), type: 'Marker', data: { m, k } })), expected: 'no_stream' as const }));
    const { rows } = await db.pool.query<{ n: number; owner: string | null; outcome: string | null }>(
      'select n, owner, outcome from ledger.enrol_new($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::text[], $7::int[], $8::uuid[], $9::text[], $10::json, $11::json) order by n',
      [pgArray(ids.map(() => tenant)), pgArray(emails), pgArray(ids), ids.map((_, i) => Buffer.alloc(32, i)), ...appendFewArguments(appends)]);
    expect(rows).toEqual(ids.map((m, i) => (i === 29 ? { n: 30, owner: ids[3], outcome: null } : { n: i + 1, owner: m, outcome: 'ok' })));
    expect(await streams(tenant)).toEqual(ids.slice(0, 29).map((m) => memberStreamId(tenant, m)).sort());
    // each stream holds its own two events, in order
    for (const m of [ids[0], ids[17], ids[28]]) {
      expect((await store.readStream(memberStreamId(tenant, m))).map((e) => e.data)).toEqual([{ m, k: 1 }, { m, k: 2 }]);
    }
    expect(await keys(tenant)).toEqual(ids.slice(0, 29).sort());
  });

  it('an email taken before answers its owner and writes nothing for the new id', async () => {
    const { tenant, at } = await programme();
    const first = await members.enrol(tenant, { email: 'taken@example.com' }, at);
    const second = await members.enrol(tenant, { email: 'taken@example.com' }, at);
    expect(second).toMatchObject({ created: false, member: { id: first.member.id } });
    expect(await streams(tenant)).toEqual([memberStreamId(tenant, first.member.id)]);
    expect(await keys(tenant)).toEqual([first.member.id]);
  });
});
