/** A programme and a mode. Sandbox (test) data is a separate partition of the same programme. */
export type Mode = 'live' | 'test';
export interface Tenant { programId: string; mode: Mode }
export const tenantKey = (t: Tenant): string => (t.mode === 'live' ? t.programId : `${t.programId}_test`);
export const parseTenantKey = (key: string): Tenant =>
  key.endsWith('_test') ? { programId: key.slice(0, -5), mode: 'test' } : { programId: key, mode: 'live' };
