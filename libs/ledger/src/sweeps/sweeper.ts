import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig, APP_CONFIG } from '@loyalty/platform';
import { SweepService } from './sweep.service';

/**
 * The periodic sweeper: every `sweepIntervalMs` (LOYALTY_SWEEP_INTERVAL_MS, default 5 s; 0 turns
 * it off) it sweeps every tenant with something due. Replicas each run one; the per-tenant
 * advisory lock makes them take turns, and the sweep itself is idempotent.
 */
@Injectable()
export class Sweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('Sweeper');
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly sweeps: SweepService, @Inject(APP_CONFIG) private readonly config: AppConfig) {}

  onApplicationBootstrap(): void {
    if (this.config.sweepIntervalMs > 0) this.schedule();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick().finally(() => { this.running = null; this.schedule(); });
    }, this.config.sweepIntervalMs);
    this.timer.unref?.();
  }

  /** One pass over the due tenants; errors are logged and retried at the next pass. */
  async tick(): Promise<void> {
    try {
      for (const tenant of await this.sweeps.dueTenants()) {
        if (this.stopped) return;
        await this.sweeps.sweepTenant(tenant, false).catch((e: unknown) => {
          if (!this.stopped) this.log.warn(`sweep of ${tenant} failed: ${(e as Error).message}`);
        });
      }
    } catch (e) {
      if (!this.stopped) this.log.warn(`sweep failed: ${(e as Error).message}`);
    }
  }
}
