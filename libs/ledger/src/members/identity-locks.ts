/**
 * In-process locks on identity values (tenant + email/phone/ref). Enrolment, resolve and profile
 * changes hold the locks of every identifier they name, so two calls naming one email or one
 * phone run one after the other and never interleave their identity claims. Keys are taken in
 * sorted order, so calls naming several identifiers cannot deadlock. Across processes the claim
 * table (`ledger.identities`, unique per value) still decides; the bus partitions these commands
 * by programme, so one consumer sees them.
 */
export class IdentityLocks {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(keys: string[], fn: () => Promise<T>): Promise<T> {
    const releases: (() => void)[] = [];
    try {
      for (const k of [...new Set(keys)].sort()) releases.push(await this.acquire(k));
      return await fn();
    } finally {
      for (const release of releases.reverse()) release();
    }
  }

  private async acquire(key: string): Promise<() => void> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.tails.set(key, tail);
    await prev;
    return () => {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }
}

export const identityKeys = (tenant: string, ids: { email?: string | null; phone?: string | null; external_ref?: string | null }): string[] => {
  const keys: string[] = [];
  if (ids.email) keys.push(`${tenant}\u0000email\u0000${ids.email}`);
  if (ids.phone) keys.push(`${tenant}\u0000phone\u0000${ids.phone}`);
  if (ids.external_ref) keys.push(`${tenant}\u0000ref\u0000${ids.external_ref}`);
  return keys;
};
