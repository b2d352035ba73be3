/** Nest injection tokens for the shared infrastructure (provided by RuntimeModule). */
export const APP_CONFIG = Symbol.for('loyalty.APP_CONFIG');
export const PG_POOL = Symbol.for('loyalty.PG_POOL');
export const EVENT_STORE = Symbol.for('loyalty.EVENT_STORE');
export const COMMAND_HANDLER = Symbol.for('loyalty.COMMAND_HANDLER');
export const COMMAND_BUS = Symbol.for('loyalty.COMMAND_BUS');

/** Route metadata: no API key needed (health, docs). Read by the gateway's AuthGuard. */
export const PUBLIC_ROUTE = 'loyalty:public';
