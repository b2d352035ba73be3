import { DynamicModule, Module } from '@nestjs/common';
import { Pool } from 'pg';
import { EventStore } from '@loyalty/event-store';
import { GatewayModule } from '@loyalty/gateway';
import { LedgerModule } from '@loyalty/ledger';
import { CommandBus } from '@loyalty/messaging';
import { AppConfig } from '@loyalty/platform';
import { RuntimeModule } from '@loyalty/runtime';
import { SERVICE_MODULES } from './service-modules';

/** Standalone: the gateway and every service in one process, on the in-process bus. */
@Module({})
export class StandaloneModule {
  static create(config: AppConfig, pool: Pool, store: EventStore, bus: CommandBus): DynamicModule {
    return {
      module: StandaloneModule,
      imports: [RuntimeModule.forRoot(config, pool, store, bus), GatewayModule, LedgerModule, ...SERVICE_MODULES],
    };
  }
}
