import './tracing';
import 'reflect-metadata';
import { REDEMPTION_MIGRATIONS, RedemptionModule } from '@loyalty/redemption';
import { PATTERNS } from '@loyalty/contracts';
import { rootLogger, startProcess } from '@loyalty/runtime';

startProcess({ name: 'redemption', modules: [RedemptionModule], migrations: REDEMPTION_MIGRATIONS, consumes: true, requests: [PATTERNS.ledger.resolveId] })
  .catch((e) => { rootLogger().fatal({ err: e }, 'redemption failed to start'); process.exit(1); });
