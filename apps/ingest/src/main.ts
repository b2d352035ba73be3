import './tracing';
import 'reflect-metadata';
import { INGEST_MIGRATIONS, IngestModule } from '@loyalty/ingest';
import { PATTERNS } from '@loyalty/contracts';
import { rootLogger, startProcess } from '@loyalty/runtime';

startProcess({ name: 'ingest', modules: [IngestModule], migrations: INGEST_MIGRATIONS, consumes: true, requests: [PATTERNS.ledger.processEvent, PATTERNS.ledger.processEvents] })
  .catch((e) => { rootLogger().fatal({ err: e }, 'ingest failed to start'); process.exit(1); });
