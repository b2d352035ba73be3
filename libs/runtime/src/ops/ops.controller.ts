import { Controller, Get, Inject, Optional, Res, SetMetadata } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Pool } from 'pg';
import { APP_CONFIG, AppConfig, PG_POOL, PUBLIC_ROUTE, metricsRegistry, redactText, renderMetrics } from '@loyalty/platform';
import { READINESS_CHECKS, ReadinessCheck } from './readiness';
import { projectionLags } from './projection-lag';
import { lifecycle } from '../lifecycle';
import { isFreshForExpress, sendNotModified } from '../http/http-adapter';

/**
 * prom-client's Content-Type as Express wrote it (its `send` re-formatted the type with the charset
 * first), kept byte for byte.
 */
const METRICS_CONTENT_TYPE = metricsRegistry.contentType === 'text/plain; version=0.0.4; charset=utf-8'
  ? 'text/plain; charset=utf-8; version=0.0.4' : metricsRegistry.contentType;

/** Liveness, readiness and Prometheus metrics; no key needed. */
@ApiExcludeController()
@SetMetadata(PUBLIC_ROUTE, true)
@Controller()
export class OpsController {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Optional() @Inject(READINESS_CHECKS) private readonly extra: ReadinessCheck[] = [],
  ) {}

  @Get('healthz')
  healthz() {
    return { status: 'ok' };
  }

  @Get('readyz')
  async readyz(@Res({ passthrough: true }) res: FastifyReply) {
    const checks: Record<string, string> = {};
    if (lifecycle.stopping) {
      // SIGTERM: out of rotation at once, before anything else is probed
      res.status(503);
      return { status: 'stopping', checks: { process: 'down: shutting down' } };
    }
    try {
      await this.pool.query('select 1');
      checks.database = 'up';
    } catch (e) {
      checks.database = `down: ${(e as Error).message}`;
    }
    // the read models this process serves are not too far behind the log (issue 11)
    const maxLag = this.config.readyMaxProjectionLagSeconds;
    if (maxLag > 0) {
      try {
        const lags = await projectionLags();
        const behind = lags.filter((l) => l.seconds > maxLag);
        // a process that runs no projection (the gateway) has nothing to report
        if (lags.length) checks.projections = behind.length === 0 ? 'up'
          : `down: ${behind.map((l) => `${l.projection} ${l.events} events, ${Math.round(l.seconds)} s behind`).join('; ')} (limit ${maxLag} s)`;
      } catch (e) {
        checks.projections = `down: ${redactText((e as Error).message)}`;
      }
    }
    for (const check of this.extra ?? []) {
      try {
        checks[check.name] = (await check.check()) ? 'up' : 'down';
      } catch (e) {
        checks[check.name] = `down: ${(e as Error).message}`;
      }
    }
    const ok = Object.values(checks).every((v) => v === 'up');
    res.status(ok ? 200 : 503);
    return { status: ok ? 'ready' : 'not_ready', checks };
  }

  @Get('metrics')
  async metrics(@Res() res: FastifyReply) {
    const text = await renderMetrics();
    if (isFreshForExpress(res)) sendNotModified(res); // as Express's send did
    else res.type(METRICS_CONTENT_TYPE).send(text);
  }
}
