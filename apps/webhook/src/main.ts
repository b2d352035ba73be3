import 'reflect-metadata';
import { WEBHOOK_MIGRATIONS, WebhookModule } from '@loyalty/webhook';
import { startProcess } from '@loyalty/runtime';

startProcess({ name: 'webhook', modules: [WebhookModule], migrations: WEBHOOK_MIGRATIONS, consumes: true, requests: [] })
  .catch((e) => { process.stderr.write(`webhook failed to start: ${(e as Error).stack}\n`); process.exit(1); });
