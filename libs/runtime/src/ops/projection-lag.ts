import { ProjectionRunner } from '@loyalty/event-store';
import { METRICS, onScrape } from '@loyalty/platform';

export interface ProjectionLag { projection: string; events: number; seconds: number }

let cached: { at: number; value: Promise<ProjectionLag[]> } | null = null;

/**
 * The lag of every projection this process runs (issue 11): events not applied yet and the age of
 * the oldest. Shared by /metrics and /readyz, computed at most once a second.
 */
export const projectionLags = (maxAgeMs = 1_000): Promise<ProjectionLag[]> => {
  if (cached && Date.now() - cached.at < maxAgeMs) return cached.value;
  const value = Promise.all([...ProjectionRunner.running].map(async (r) => {
    const lag = await r.lag();
    return r.names.map((projection) => ({ projection, ...lag }));
  })).then((xs) => xs.flat());
  cached = { at: Date.now(), value };
  value.catch(() => { if (cached?.value === value) cached = null; });
  return value;
};

onScrape(async () => {
  const lags = await projectionLags();
  METRICS.projectionLagEvents.reset();
  METRICS.projectionLagSeconds.reset();
  for (const l of lags) {
    METRICS.projectionLagEvents.set({ projection: l.projection }, l.events);
    METRICS.projectionLagSeconds.set({ projection: l.projection }, l.seconds);
  }
});
