export * from './test-database';
export * from './eventually';
export * from './kafka';
