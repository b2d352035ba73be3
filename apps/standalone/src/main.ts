import 'reflect-metadata';
import { installGracefulShutdown, keepRunningOnUnhandledRejection } from '@loyalty/runtime';
import { startStandalone } from './start';

void (async () => {
  keepRunningOnUnhandledRejection('standalone');
  const { app, config, url } = await startStandalone({}, undefined, { waitForDatabase: true });
  installGracefulShutdown(app, { name: 'standalone' });
  const banner = [
    `Loyalty service (standalone) listening on ${url}`,
    `  API docs:   ${url}/docs   (OpenAPI: ${url}/openapi.json)`,
    `  Database:   ${config.databaseUrl.replace(/\/\/[^@]*@/, '//***@')}`,
  ];
  if (config.adminTokenGenerated) {
    banner.push(
      `  Admin token (generated for this run; set LOYALTY_ADMIN_TOKEN to choose one):`,
      `    export LOYALTY_ADMIN_TOKEN=${config.adminToken}`,
      `    curl -s -X POST ${url}/admin/v1/programs -H "Authorization: Bearer $LOYALTY_ADMIN_TOKEN" -H 'Content-Type: application/json' -d '{"program_name":"Demo","currency_name":"points"}'`,
    );
  }
  // The admin token is printed once, deliberately, so a newcomer can use it; API keys never are.
  process.stdout.write(banner.join('\n') + '\n');
})().catch((e) => {
  process.stderr.write(`failed to start: ${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
