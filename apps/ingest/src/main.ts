import 'reflect-metadata';
import { INGEST_MIGRATIONS, IngestModule } from '@loyalty/ingest';
import { PATTERNS } from '@loyalty/contracts';
import { startProcess } from '@loyalty/runtime';

startProcess({ name: 'ingest', modules: [IngestModule], migrations: INGEST_MIGRATIONS, consumes: true, requests: [PATTERNS.ledger.processEvent] })
  .catch((e) => { process.stderr.write(`ingest failed to start: ${(e as Error).stack}\n`); process.exit(1); });
