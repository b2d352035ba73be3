export * from './rebuild';
