import 'reflect-metadata';
import type { AppConfig } from '@loyalty/platform';
import { startStandalone } from '../../apps/standalone/src/start';

/**
 * The standalone service in its own process for the benchmarks (bench-kit `target()`): the load
 * generator must not share the service's event loop, as no merchant's client does. The parent
 * passes the configuration as JSON in BENCH_CHILD_CONFIG and receives `{ url }` once it listens;
 * SIGTERM closes the app (Nest shutdown) and exits.
 */
const config = JSON.parse(process.env.BENCH_CHILD_CONFIG ?? '{}') as Partial<AppConfig>;
startStandalone(config, false).then((started) => {
  process.send?.({ url: started.url, port: (started.app.getHttpServer().address() as { port: number }).port });
  let stopping = false;
  process.on('SIGTERM', () => {
    if (stopping) return;
    stopping = true;
    void started.app.close().finally(() => process.exit(0));
  });
}, (e: unknown) => { console.error(e); process.exit(1); });
