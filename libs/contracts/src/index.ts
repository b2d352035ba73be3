export * from './program';
export * from './patterns';
export * from './member';
