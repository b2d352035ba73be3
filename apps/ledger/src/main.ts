import 'reflect-metadata';
import { LEDGER_MIGRATIONS, LedgerModule } from '@loyalty/ledger';
import { startProcess } from '@loyalty/runtime';

startProcess({ name: 'ledger', modules: [LedgerModule], migrations: LEDGER_MIGRATIONS, consumes: true, requests: [] })
  .catch((e) => { process.stderr.write(`ledger failed to start: ${(e as Error).stack}\n`); process.exit(1); });
