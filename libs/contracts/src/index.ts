export * from './program';
export * from './patterns';
export * from './member';
export * from './streams';
export * from './ingest';
export * from './webhook';
export * from './referral';
export * from './refusal';
