import './tracing';
import 'reflect-metadata';
import { WEBHOOK_MIGRATIONS, WebhookModule } from '@loyalty/webhook';
import { rootLogger, startProcess } from '@loyalty/runtime';

startProcess({ name: 'webhook', modules: [WebhookModule], migrations: WEBHOOK_MIGRATIONS, consumes: true, requests: [] })
  .catch((e) => { rootLogger().fatal({ err: e }, 'webhook failed to start'); process.exit(1); });
