/**
 * The keys of identity values (tenant + email/phone/ref) for the process's KeyedMutex. Enrolment,
 * resolve and profile changes hold the keys of every identifier they name, so two calls naming
 * one email or one phone run one after the other and never interleave their identity claims.
 * Across processes the claim table (`ledger.identities`, unique per value) still decides; the bus
 * partitions these commands by programme, so one consumer sees them.
 */
export const identityKeys = (tenant: string, ids: { email?: string | null; phone?: string | null; external_ref?: string | null }): string[] => {
  const keys: string[] = [];
  if (ids.email) keys.push(`${tenant}\u0000email\u0000${ids.email}`);
  if (ids.phone) keys.push(`${tenant}\u0000phone\u0000${ids.phone}`);
  if (ids.external_ref) keys.push(`${tenant}\u0000ref\u0000${ids.external_ref}`);
  return keys;
};
