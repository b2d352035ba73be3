export * from './test-database';
export * from './eventually';
export * from './kafka';
export * from './fake-eventstoredb.client';
export * from './private-infra';
export * from './ports';
export * from './table-scans';
