import { parse } from 'csv-parse/sync';
import { UsageError } from './admin-request.builder';

/**
 * Reads a balance-migration file (decisions §10): JSON (an array of entries or
 * `{ "entries": [...] }`) or CSV with a header row naming the columns below.
 * Pure: takes the file's text, returns the entries the admin plane expects.
 */
export const MIGRATION_COLUMNS = ['email', 'phone', 'external_ref', 'amount_cents', 'expires_at'] as const;

export type MigrationEntry = Record<string, unknown>;

export const parseMigrationFile = (text: string, fileName: string): MigrationEntry[] =>
  /\.csv$/i.test(fileName) ? parseMigrationCsv(text, fileName) : parseMigrationJson(text, fileName);

export const parseMigrationJson = (text: string, fileName = 'migration file'): MigrationEntry[] => {
  let content: unknown;
  try {
    content = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${fileName}: not valid JSON (${(e as Error).message})`);
  }
  const entries = Array.isArray(content)
    ? content
    : typeof content === 'object' && content !== null && Array.isArray((content as { entries?: unknown }).entries)
      ? (content as { entries: unknown[] }).entries
      : undefined;
  if (!entries) throw new UsageError(`${fileName}: expected a JSON array of entries or an object with "entries"`);
  entries.forEach((e, i) => {
    if (typeof e !== 'object' || e === null || Array.isArray(e)) throw new UsageError(`${fileName}: entry ${i} is not an object`);
  });
  return entries as MigrationEntry[];
};

export const parseMigrationCsv = (text: string, fileName = 'migration file'): MigrationEntry[] => {
  const rows = parseCsv(text).filter((r) => r.some((cell) => cell.trim() !== ''));
  if (rows.length === 0) throw new UsageError(`${fileName}: empty CSV (expected a header row: ${MIGRATION_COLUMNS.join(',')})`);
  const header = rows[0].map((h) => h.trim().toLowerCase());
  for (const h of header) {
    if (!(MIGRATION_COLUMNS as readonly string[]).includes(h)) {
      throw new UsageError(`${fileName}: unknown column "${h}" (columns: ${MIGRATION_COLUMNS.join(', ')})`);
    }
  }
  for (const required of ['email', 'amount_cents']) {
    if (!header.includes(required)) throw new UsageError(`${fileName}: the header has no "${required}" column`);
  }
  return rows.slice(1).map((row, i) => {
    const line = i + 2;
    if (row.length > header.length) throw new UsageError(`${fileName}: line ${line} has ${row.length} cells for ${header.length} columns`);
    const entry: MigrationEntry = {};
    header.forEach((column, c) => {
      const cell = (row[c] ?? '').trim();
      if (cell === '') return;
      if (column === 'amount_cents') {
        const n = Number(cell);
        if (!/^-?\d+$/.test(cell) || !Number.isSafeInteger(n)) {
          throw new UsageError(`${fileName}: line ${line}: amount_cents must be a whole number of minor units, got "${cell}"`);
        }
        entry.amount_cents = n;
      } else {
        entry[column] = cell;
      }
    });
    return entry;
  });
};

/**
 * RFC 4180 CSV (csv-parse): comma-separated, fields optionally in double quotes with `""` for a
 * quote, CRLF or LF, a leading byte-order mark (spreadsheet exports) dropped. Rows keep their own
 * length: the caller reports a row with more cells than the header.
 */
export const parseCsv = (text: string): string[][] => {
  try {
    return parse(text, { bom: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: false }) as string[][];
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'CSV_QUOTE_NOT_CLOSED') throw new UsageError('CSV: a quoted field is not closed');
    throw new UsageError(`CSV: ${(e as Error).message}`);
  }
};
