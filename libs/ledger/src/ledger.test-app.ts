import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Pool } from 'pg';
import { CommandHandler, PostgresEventStore } from '@loyalty/event-store';
import { InProcessBus, InProcessServer } from '@loyalty/messaging';
import { COMMAND_HANDLER, loadConfig } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { RuntimeModule } from '@loyalty/runtime';
import { AdjustPointsService } from './adjust/adjust-points.service';
import { EraseMemberService } from './erase/erase-member.service';
import { FinanceService } from './finance/finance.service';
import { LedgerModule } from './ledger.module';
import { LedgerReadModels } from './ledger.read-models';
import { LiabilityService } from './liability/liability.service';
import { ChangeMemberStateService } from './member-state/change-member-state.service';
import { MembersService } from './members/members.service';
import { MigrationsService } from './migrations-import/migrations.service';
import { EntryReviewService } from './orders/entry-review.service';
import { OrdersService } from './orders/orders.service';
import { ReadMembersService } from './read-members/read-members.service';
import { SweepService } from './sweeps/sweep.service';

/**
 * For the ledger's integration tests: the ledger as one listening microservice over a test
 * database (PostgreSQL event store, in-process bus, no periodic sweeps: the tests call them).
 */
export const startLedgerTestApp = async (db: { pool: Pool; url: string }) => {
  const store = new PostgresEventStore(db.pool, 50);
  const server = new InProcessServer();
  const bus = new InProcessBus(server);
  const config = { ...loadConfig({}), databaseUrl: db.url, sweepIntervalMs: 0 };
  const app = await NestFactory.createMicroservice(
    { module: class LedgerTestModule {}, imports: [RuntimeModule.forRoot(config, db.pool, store, bus), LedgerModule] },
    { strategy: server, logger: false },
  );
  await app.listen();
  return { app, store, bus, ...ledgerServices(app) };
};

/** The ledger's use cases and ports in a started app, by the names the tests give them. */
const ledgerServices = (app: INestApplicationContext) => ({
  orders: app.get(OrdersService),
  members: app.get(MembersService),
  adjusting: app.get(AdjustPointsService),
  erasing: app.get(EraseMemberService),
  reading: app.get(ReadMembersService),
  states: app.get(ChangeMemberStateService),
  programs: app.get(ProgramStore),
  readModels: app.get(LedgerReadModels),
  handler: app.get<CommandHandler>(COMMAND_HANDLER),
  liability: app.get(LiabilityService),
  finance: app.get(FinanceService),
  reviews: app.get(EntryReviewService),
  sweeps: app.get(SweepService),
  migrations: app.get(MigrationsService),
});
