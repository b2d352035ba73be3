import 'reflect-metadata';
import { GATEWAY_MIGRATIONS, GatewayModule, configureGateway } from '@loyalty/gateway';
import { startProcess } from '@loyalty/runtime';

// The HTTP edge alone: every command and query goes to the services over Kafka.
startProcess({ name: 'gateway', modules: [GatewayModule], migrations: GATEWAY_MIGRATIONS, consumes: false, withOps: false, configure: configureGateway })
  .catch((e) => { process.stderr.write(`gateway failed to start: ${(e as Error).stack}\n`); process.exit(1); });
