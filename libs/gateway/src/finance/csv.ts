/** RFC 4180: a field is quoted when it holds a comma, a double quote, CR or LF; quotes are doubled; lines end in CRLF. */
export const csvField = (v: unknown): string => {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

export const csvLine = (values: readonly unknown[]): string => `${values.map(csvField).join(',')}\r\n`;

/** decisions §9a: the journal export's columns, in order (nothing personal). */
export const LEDGER_ENTRY_CSV_COLUMNS = ['id', 'member_id', 'type', 'status', 'amount_cents', 'currency', 'reason_code', 'rule', 'parent_entry_id', 'order_ref', 'created_at'] as const;
