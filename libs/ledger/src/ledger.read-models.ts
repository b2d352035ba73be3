import { ReadModels } from '@loyalty/event-store';

/**
 * The ledger's read models (members, entries, finance, due items: one runner), under the house's
 * read-your-writes policy; a read that is not given a limit waits at most 2 s for them.
 */
export class LedgerReadModels extends ReadModels {}
