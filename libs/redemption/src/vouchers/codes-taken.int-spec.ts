import { createTestDatabase, tableScans, TestDatabase } from '@loyalty/testing';
import { Pool } from 'pg';
import { REDEMPTION_MIGRATIONS } from '../redemption.migrations';
import { CODES_CHECKED_AT_ONCE, VoucherCodes } from './voucher-codes';

/**
 * redemption.codes_taken (RedemptionCodes003): which of a group's new voucher codes are taken, by
 * the code index, also when the statement was prepared while the table was empty.
 */
describe('voucher codes taken (PostgreSQL)', () => {
  let db: TestDatabase;
  const CHECK = { name: 'codes_taken_test', text: 'select n from redemption.codes_taken($1::text[], $2::text[]) as t(n)' };
  const check = async (codes: [string, string][]): Promise<number[]> =>
    (await db.pool.query<{ n: string }>({ ...CHECK, values: [codes.map((c) => c[0]), codes.map((c) => c[1])] })).rows.map((r) => Number(r.n)).sort((a, b) => a - b);

  beforeAll(async () => {
    // one connection: the prepared statement's cached plan is the one every call below uses
    db = await createTestDatabase('codes_taken', { migrations: REDEMPTION_MIGRATIONS, poolMax: 1 });
  });
  afterAll(async () => { await db?.drop(); });

  it('answers the numbers of the taken codes of the group, per programme', async () => {
    await db.pool.query('analyze redemption.redemptions'); // statistics of an empty table
    for (let i = 0; i < 6; i++) expect(await check([['T1', 'NOPE0000']])).toEqual([]); // the plan is made on the empty table
    await db.pool.query(
      `insert into redemption.redemptions (tenant, id, member_id, code, mode, status, amount_cents, ledger_entry_id, created_at)
       select 'T1', 'RD-' || g, 'M-1', 'C' || lpad(g::text, 7, '0'), 'voucher', 'created', 10, 'LE-' || g, now() from generate_series(1, 20000) g`);
    expect(await check([['T1', 'C0000001'], ['T1', 'FREE0001'], ['T2', 'C0000002'], ['T1', 'C0019999']])).toEqual([1, 4]);
  });

  it('probes the code index, never a sequential scan of the table, though the plan was made while it was empty', async () => {
    const before = await tableScans(db.pool, 'redemption.redemptions');
    for (let i = 0; i < 20; i++) expect(await check([['T1', `C${String(i + 1).padStart(7, '0')}`], ['T1', 'FREE0001']])).toEqual([1]);
    const after = await tableScans(db.pool, 'redemption.redemptions', before.idx + 40);
    expect(after.idx - before.idx).toBeGreaterThanOrEqual(40);
    expect(after.seq - before.seq).toBe(0);
  });

  it('hands out codes checked ahead in groups: never a taken one, never one twice, one query for many codes', async () => {
    // every other code drawn is one the programme already holds (C0000001…, inserted above)
    let n = 0;
    const draw = (): string => (++n % 2 ? `C${String(n).padStart(7, '0')}` : `F${String(n).padStart(7, '0')}`);
    let queries = 0;
    const counting = { query: (...args: Parameters<Pool['query']>) => { queries++; return (db.pool.query as (...a: unknown[]) => unknown)(...args); } } as unknown as Pool;
    const codes = new VoucherCodes(counting, draw);
    const got = await Promise.all(Array.from({ length: 100 }, () => codes.next('T1')));
    expect(got.filter((c) => c.startsWith('C'))).toEqual([]);
    expect(new Set(got).size).toBe(100);
    // half of each group is free: 100 codes from about 100 / 32 groups, not a query each
    expect(queries).toBeGreaterThanOrEqual(Math.ceil(100 / (CODES_CHECKED_AT_ONCE / 2)));
    expect(queries).toBeLessThanOrEqual(Math.ceil(100 / (CODES_CHECKED_AT_ONCE / 2)) + 2);
    // another programme holds none of these codes: its pool is its own
    expect((await codes.next('T2')).length).toBe(8);
  });
});
