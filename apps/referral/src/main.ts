import './tracing';
import 'reflect-metadata';
import { REFERRAL_MIGRATIONS, ReferralModule } from '@loyalty/referral';
import { PATTERNS } from '@loyalty/contracts';
import { rootLogger, startProcess } from '@loyalty/runtime';

startProcess({ name: 'referral', modules: [ReferralModule], migrations: REFERRAL_MIGRATIONS, consumes: true, requests: [PATTERNS.ledger.get, PATTERNS.ledger.referral] })
  .catch((e) => { rootLogger().fatal({ err: e }, 'referral failed to start'); process.exit(1); });
