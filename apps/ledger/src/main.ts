import './tracing';
import 'reflect-metadata';
import { LEDGER_MIGRATIONS, LedgerModule } from '@loyalty/ledger';
import { rootLogger, startProcess } from '@loyalty/runtime';

startProcess({ name: 'ledger', modules: [LedgerModule], migrations: LEDGER_MIGRATIONS, consumes: true, requests: [] })
  .catch((e) => { rootLogger().fatal({ err: e }, 'ledger failed to start'); process.exit(1); });
