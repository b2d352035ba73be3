export * from './ids';
export * from './problem';
export * from './config';
export * from './db';
export * from './tenant';
export * from './cursor';
export * from './tokens';
export * from './notified-cache';
