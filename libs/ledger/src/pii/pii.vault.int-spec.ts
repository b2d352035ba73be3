import { TestDatabase, createTestDatabase } from '@loyalty/testing';
import { LEDGER_MIGRATIONS } from '../ledger.migrations';
import { PiiVault } from './pii.vault';

/**
 * The vault's plaintext cache (a member's newest sealed value, found by its nonce) answers exactly
 * what decrypting would: for the value as sealed and for a copy read back from storage; a newer
 * value of the member is decrypted, not confused with the cached one; and erasure (the key
 * destroyed) leaves nothing to read, in this process or in a fresh one.
 */
describe('PiiVault (PostgreSQL)', () => {
  let db: TestDatabase;
  const tenant = 'P-VAULT_live';

  beforeAll(async () => {
    db = await createTestDatabase('pii_vault', { migrations: LEDGER_MIGRATIONS });
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('opens what it sealed, from the sealed value and from a stored copy, in this process and another', async () => {
    const vault = new PiiVault(db.pool);
    const sealed = await vault.seal(tenant, 'M-1', { email: 'a@example.com', phone: null, external_ref: 'r-1' });
    expect(JSON.stringify(sealed)).not.toContain('a@example.com');
    const stored = JSON.parse(JSON.stringify(sealed));
    expect(await vault.open(tenant, 'M-1', sealed)).toEqual({ email: 'a@example.com', phone: null, external_ref: 'r-1' });
    expect(await vault.open(tenant, 'M-1', stored)).toEqual({ email: 'a@example.com', phone: null, external_ref: 'r-1' });
    expect(await new PiiVault(db.pool).open(tenant, 'M-1', stored)).toEqual({ email: 'a@example.com', phone: null, external_ref: 'r-1' });
  });

  it('a newer sealed value of the member is read for itself; the older one still opens', async () => {
    const vault = new PiiVault(db.pool);
    const first = await vault.seal(tenant, 'M-2', { email: 'old@example.com', phone: null, external_ref: null });
    const second = await vault.seal(tenant, 'M-2', { email: 'new@example.com', phone: '+447700900123', external_ref: null });
    expect(second.iv).not.toBe(first.iv);
    expect((await vault.open(tenant, 'M-2', JSON.parse(JSON.stringify(second)))).email).toBe('new@example.com');
    expect((await vault.open(tenant, 'M-2', JSON.parse(JSON.stringify(first)))).email).toBe('old@example.com');
    // a value whose nonce matches the cached one but sealed for another member is not taken for it
    expect(await vault.open(tenant, 'M-3', JSON.parse(JSON.stringify(second)))).toEqual({ email: null, phone: null, external_ref: null });
  });

  it('after erasure nothing is read, though the value was opened before', async () => {
    const vault = new PiiVault(db.pool);
    const sealed = await vault.seal(tenant, 'M-4', { email: 'gone@example.com', phone: null, external_ref: null });
    expect((await vault.open(tenant, 'M-4', JSON.parse(JSON.stringify(sealed)))).email).toBe('gone@example.com');
    await vault.destroy(tenant, 'M-4');
    expect(await vault.open(tenant, 'M-4', JSON.parse(JSON.stringify(sealed)))).toEqual({ email: null, phone: null, external_ref: null });
    expect(await vault.open(tenant, 'M-4', sealed)).toEqual({ email: null, phone: null, external_ref: null });
  });
});
