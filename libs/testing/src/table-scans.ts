import { Pool } from 'pg';

export interface TableScans { seq: number; idx: number }

/**
 * How often a table has been read by sequential scan and by index scan (pg_stat_user_tables).
 * Backends report their counts when they go idle, within about a second: this waits until the
 * index scans reach `atLeastIdx` (or `waitMs` passes) before answering.
 */
export const tableScans = async (pool: Pool, table: string, atLeastIdx = 0, waitMs = 5_000): Promise<TableScans> => {
  const [schema, name] = table.split('.');
  const deadline = Date.now() + waitMs;
  for (;;) {
    await pool.query('select pg_stat_clear_snapshot()');
    const { rows } = await pool.query<{ seq: string; idx: string }>(
      'select seq_scan::text as seq, coalesce(idx_scan, 0)::text as idx from pg_stat_user_tables where schemaname = $1 and relname = $2', [schema, name]);
    const scans = { seq: Number(rows[0]?.seq ?? 0), idx: Number(rows[0]?.idx ?? 0) };
    if (scans.idx >= atLeastIdx || Date.now() > deadline) return scans;
    await new Promise((r) => setTimeout(r, 100));
  }
};
