import './tracing';
import 'reflect-metadata';
import { installGracefulShutdown, keepRunningOnUnhandledRejection, rootLogger, setLogService } from '@loyalty/runtime';
import { startStandalone } from './start';

setLogService('standalone');
void (async () => {
  keepRunningOnUnhandledRejection('standalone');
  const { app, config, url } = await startStandalone({}, undefined, { waitForDatabase: true });
  installGracefulShutdown(app, { name: 'standalone' });
  const log = rootLogger().child({ context: 'lifecycle' });
  log.info({ url, docs: `${url}/docs`, openapi: `${url}/openapi.json`, database: config.databaseUrl.replace(/\/\/[^@]*@/, '//***@') },
    `Loyalty service (standalone) listening on ${url}; API docs at ${url}/docs`);
  if (config.adminTokenGenerated) {
    // The admin token is printed once, deliberately, so a newcomer can use it; API keys never are.
    log.info({ admin_token: config.adminToken }, 'Admin token generated for this run (set LOYALTY_ADMIN_TOKEN to choose one): export LOYALTY_ADMIN_TOKEN=<admin_token>');
  }
})().catch((e) => {
  rootLogger().fatal({ err: e }, 'failed to start');
  process.exit(1);
});
