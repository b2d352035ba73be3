import { Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { AdminController } from './admin/admin.controller';
import { ApiKeysService } from './auth/api-keys.service';
import { AuthGuard } from './auth/auth.guard';
import { Bus } from './http/bus';
import { ProblemFilter } from './http/problem.filter';
import { RejectedCallLog } from './http/rejected-call.log';
import { IdempotencyInterceptor } from './idempotency/idempotency.interceptor';
import { MembersController } from './members/members.controller';
import { OpsController } from '@loyalty/runtime';
import { ProgramController } from './program/program.controller';
import { RateLimiter } from './rate-limit/rate-limiter';
import { FEATURE_CONTROLLERS } from './feature-controllers';

/**
 * The HTTP edge: /v1 and /admin/v1. Authenticates, limits, validates, applies idempotency and
 * forwards to the owning service over the command bus (COMMAND_BUS, provided by the app).
 */
@Module({
  controllers: [OpsController, ProgramController, MembersController, AdminController, ...FEATURE_CONTROLLERS],
  providers: [
    ApiKeysService, RateLimiter, RejectedCallLog, Bus, IdempotencyInterceptor, AuthGuard, ProblemFilter,
    // the same instances run Nest's pipeline and the lean routes' executor (http/lean-routes.ts)
    { provide: APP_GUARD, useExisting: AuthGuard },
    { provide: APP_FILTER, useExisting: ProblemFilter },
  ],
  exports: [ApiKeysService],
})
export class GatewayModule {}
