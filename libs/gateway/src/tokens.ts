export { APP_CONFIG, PG_POOL } from '@loyalty/platform';
