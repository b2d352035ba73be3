import 'reflect-metadata';
import { REFERRAL_MIGRATIONS, ReferralModule } from '@loyalty/referral';
import { PATTERNS } from '@loyalty/contracts';
import { startProcess } from '@loyalty/runtime';

startProcess({ name: 'referral', modules: [ReferralModule], migrations: REFERRAL_MIGRATIONS, consumes: true, requests: [PATTERNS.ledger.get, PATTERNS.ledger.referral] })
  .catch((e) => { process.stderr.write(`referral failed to start: ${(e as Error).stack}\n`); process.exit(1); });
