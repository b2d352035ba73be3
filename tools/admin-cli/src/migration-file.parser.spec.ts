import { UsageError } from './admin-request.builder';
import { parseCsv, parseMigrationFile } from './migration-file.parser';

describe('migration file parser', () => {
  it('reads a JSON array or {entries}', () => {
    const entries = [{ email: 'a@example.com', amount_cents: 1200 }];
    expect(parseMigrationFile(JSON.stringify(entries), 'm.json')).toEqual(entries);
    expect(parseMigrationFile(JSON.stringify({ entries }), 'm.json')).toEqual(entries);
    expect(() => parseMigrationFile('{"email":"a@example.com"}', 'm.json')).toThrow(/expected a JSON array/);
    expect(() => parseMigrationFile('[1]', 'm.json')).toThrow(/entry 0 is not an object/);
    expect(() => parseMigrationFile('[', 'm.json')).toThrow(/not valid JSON/);
  });

  it('reads CSV with a header, integer amounts and omitted empty cells', () => {
    const csv = '\uFEFFemail,phone,external_ref,amount_cents,expires_at\r\n'
      + 'a@example.com,+14155550100,c-1,1200,2030-01-01T00:00:00.000Z\r\n'
      + '"b,quoted@example.com",,,-300,\r\n'
      + '\r\n';
    expect(parseMigrationFile(csv, 'balances.CSV')).toEqual([
      { email: 'a@example.com', phone: '+14155550100', external_ref: 'c-1', amount_cents: 1200, expires_at: '2030-01-01T00:00:00.000Z' },
      { email: 'b,quoted@example.com', amount_cents: -300 },
    ]);
  });

  it('refuses CSV amounts that are not whole minor units, unknown columns and missing required columns', () => {
    expect(() => parseMigrationFile('email,amount_cents\na@example.com,12.50\n', 'm.csv')).toThrow(/line 2: amount_cents must be a whole number/);
    expect(() => parseMigrationFile('email,amount,amount_cents\n', 'm.csv')).toThrow(/unknown column "amount"/);
    expect(() => parseMigrationFile('email,phone\n', 'm.csv')).toThrow(/no "amount_cents" column/);
    expect(() => parseMigrationFile('email,amount_cents\na@example.com,1,2\n', 'm.csv')).toThrow(/3 cells for 2 columns/);
    expect(() => parseMigrationFile('', 'm.csv')).toThrow(UsageError);
  });

  it('parses RFC 4180 quoting', () => {
    expect(parseCsv('a,"b ""c""",d\n"x\ny",z')).toEqual([['a', 'b "c"', 'd'], ['x\ny', 'z']]);
    expect(() => parseCsv('"open')).toThrow(/not closed/);
    // as spreadsheets write them: a stray quote inside a field is kept, short rows stay short
    expect(parseCsv('a"b,c\r\nd\r\n')).toEqual([['a"b', 'c'], ['d']]);
    expect(parseMigrationFile('email,amount_cents,phone\na@example.com,5\n', 'm.csv')).toEqual([{ email: 'a@example.com', amount_cents: 5 }]);
  });
});
