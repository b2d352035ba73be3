import { identityKeys } from './identity-locks';

describe('identityKeys', () => {
  it('keys identifiers per tenant and kind', () => {
    expect(identityKeys('P1', { email: 'a@b.c', phone: '+1', external_ref: 'r' })).toHaveLength(3);
    expect(identityKeys('P1', { email: 'x' })).not.toEqual(identityKeys('P1_test', { email: 'x' }));
    expect(identityKeys('P1', { email: 'x' })).not.toEqual(identityKeys('P1', { external_ref: 'x' }));
    expect(identityKeys('P1', {})).toEqual([]);
  });
});
