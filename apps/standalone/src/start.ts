import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { configureGateway, GATEWAY_MIGRATIONS } from '@loyalty/gateway';
import { LEDGER_MIGRATIONS } from '@loyalty/ledger';
import { InProcessBus, InProcessServer } from '@loyalty/messaging';
import { AppConfig, loadConfig, registerOwnPort } from '@loyalty/platform';
import { RedactingLogger, createHttpAdapter, StartingResponder, closeConnectionsWhenStopping, openRuntime, retryWithBackoff } from '@loyalty/runtime';
import { StandaloneModule } from './app.module';
import { SERVICE_MIGRATIONS } from './service-migrations';

/** Builds and starts the standalone app; used by main.ts and by the end-to-end tests. */
export const startStandalone = async (
  overrides: Partial<AppConfig> = {},
  logger: false | undefined = undefined,
  options: { waitForDatabase?: boolean } = {},
): Promise<{ app: INestApplication; config: AppConfig; url: string }> => {
  const config = { ...loadConfig(), ...overrides };
  const open = () => openRuntime({ config, migrations: [...GATEWAY_MIGRATIONS, ...LEDGER_MIGRATIONS, ...SERVICE_MIGRATIONS] });
  let starting: StartingResponder | null = null;
  let runtime: Awaited<ReturnType<typeof open>>;
  if (options.waitForDatabase) {
    // npm start before PostgreSQL is up: the port answers readyz 503 while we keep trying
    starting = new StartingResponder(config.port, ['database'], config.baseUrl);
    await starting.listen();
    runtime = await retryWithBackoff('standalone', 'PostgreSQL', open, (e) => starting?.note('database', e));
  } else {
    runtime = await open();
  }
  const { pool, store } = runtime;
  const server = new InProcessServer();
  const app = await NestFactory.create(StandaloneModule.create(config, pool, store, new InProcessBus(server)), createHttpAdapter(), {
    bodyParser: false,
    logger: logger === false ? false : new RedactingLogger(config.logLevel),
  });
  closeConnectionsWhenStopping(app);
  configureGateway(app, config);
  app.connectMicroservice({ strategy: server });
  await app.startAllMicroservices();
  await starting?.close();
  await app.listen(config.port, '0.0.0.0');
  const address = app.getHttpServer().address() as { port: number };
  registerOwnPort(address.port);
  return { app, config, url: `http://127.0.0.1:${address.port}` };
};
