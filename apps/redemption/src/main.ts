import 'reflect-metadata';
import { REDEMPTION_MIGRATIONS, RedemptionModule } from '@loyalty/redemption';
import { PATTERNS } from '@loyalty/contracts';
import { startProcess } from '@loyalty/runtime';

startProcess({ name: 'redemption', modules: [RedemptionModule], migrations: REDEMPTION_MIGRATIONS, consumes: true, requests: [PATTERNS.ledger.resolveId] })
  .catch((e) => { process.stderr.write(`redemption failed to start: ${(e as Error).stack}\n`); process.exit(1); });
