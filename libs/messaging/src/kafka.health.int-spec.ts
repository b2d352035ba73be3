import { createServer } from 'node:net';
import { kafkaBrokers, requireKafka } from '@loyalty/testing';
import { KafkaHealth } from './kafka.health';

/** The broker readiness check is real (issue 8: it was `() => true`). */
describe('KafkaHealth against a real broker', () => {
  it('is ready when the broker answers, and not when nothing listens', async () => {
    await requireKafka();
    const up = new KafkaHealth(kafkaBrokers());
    const down = new KafkaHealth(['127.0.0.1:1'], 1_000);
    try {
      expect(await up.check()).toBe(true);
      expect(await down.check()).toBe(false);
      expect(down.lastError).toBeTruthy();
    } finally {
      await up.close();
      await down.close();
    }
  });

  it('is not ready when a peer accepts connections but never answers (bounded by its deadline)', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const port = (silent.address() as { port: number }).port;
    const h = new KafkaHealth([`127.0.0.1:${port}`], 800);
    const started = Date.now();
    try {
      expect(await h.check()).toBe(false);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await h.close();
      silent.close();
    }
  });
});
