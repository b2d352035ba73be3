export * from './event-store.port';
export * from './postgres.event-store';
export * from './eventstoredb.event-store';
export * from './command-handler';
export * from './projection-runner';
export * from './snapshots';
export * from './group-commit';
export * from './state-cache';
