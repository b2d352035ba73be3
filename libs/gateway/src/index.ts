export * from './gateway.module';
export * from './gateway.migrations';
export * from './bootstrap';
export * from './http/bus';
export * from './http/request-context';
export * from './auth/auth.decorators';
export * from './auth/api-keys.service';
export * from './idempotency/idempotency.interceptor';
