export * from './program.store';
