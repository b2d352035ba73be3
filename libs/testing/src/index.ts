export * from './test-database';
export * from './eventually';
