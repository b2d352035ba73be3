export * from './program.store';
export * from './program.entity';
