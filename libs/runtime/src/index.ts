export * from './runtime.module';
export * from './ops/ops.controller';
export * from './ops/metrics';
export * from './ops/readiness';
export * from './service-process';
export * from './crash-point';
export * from './ops/redacting-logger';
export * from './lifecycle';
