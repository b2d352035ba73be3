import './tracing';
import 'reflect-metadata';
import { GATEWAY_MIGRATIONS, GatewayModule, configureGateway } from '@loyalty/gateway';
import { rootLogger, startProcess } from '@loyalty/runtime';

// The HTTP edge alone: every command and query goes to the services over Kafka.
startProcess({ name: 'gateway', modules: [GatewayModule], migrations: GATEWAY_MIGRATIONS, consumes: false, withOps: false, configure: configureGateway })
  .catch((e) => { rootLogger().fatal({ err: e }, 'gateway failed to start'); process.exit(1); });
