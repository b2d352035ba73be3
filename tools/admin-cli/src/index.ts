/** @loyalty/admin-cli: the admin CLI as a function, for in-process use (tests, scripts). */
export { run, DEFAULT_URL, EXIT } from './admin-cli.program';
export type { CliDeps } from './admin-cli.program';
export { UsageError } from './admin-request.builder';
export type { AdminRequest } from './admin-request.builder';
export { problemMessage } from './admin.client';
export { parseMigrationFile } from './migration-file.parser';
