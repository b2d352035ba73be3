import { Controller, Get, Inject, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { Pool } from 'pg';
import { PG_POOL } from '@loyalty/platform';
import { Public } from '../auth/auth.decorators';
import { metricsRegistry } from './metrics';

/** Liveness, readiness and Prometheus metrics; no key needed. */
@ApiExcludeController()
@Public()
@Controller()
export class OpsController {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  @Get('healthz')
  healthz() {
    return { status: 'ok' };
  }

  @Get('readyz')
  async readyz(@Res({ passthrough: true }) res: Response) {
    const checks: Record<string, string> = {};
    try {
      await this.pool.query('select 1');
      checks.database = 'up';
    } catch (e) {
      checks.database = `down: ${(e as Error).message}`;
    }
    const ok = Object.values(checks).every((v) => v === 'up');
    res.status(ok ? 200 : 503);
    return { status: ok ? 'ready' : 'not_ready', checks };
  }

  @Get('metrics')
  async metrics(@Res() res: Response) {
    res.type(metricsRegistry.contentType).send(await metricsRegistry.metrics());
  }
}
