import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freshDatabaseUrl } from './harness';

const run = promisify(execFile);
const root = join(__dirname, '..', '..', '..', '..');

/**
 * Starts the distributed topology (gateway and services as separate processes over the real Kafka
 * broker) with tools/distributed/run.sh, on a fresh database. Needs `npm run build` first and a
 * broker at KAFKA_BROKERS (npm test provides both).
 */
export const startDistributed = async (): Promise<{ url: string; adminToken: string; databaseUrl: string; close: () => Promise<void> }> => {
  const db = await freshDatabaseUrl('dist');
  const state = mkdtempSync(join(tmpdir(), 'loyalty-dist-'));
  const port = String(20000 + Math.floor(Math.random() * 20000));
  const adminToken = `adm_dist_${port}`;
  const env = {
    ...process.env, DATABASE_URL: db.url, PORT: port, LOYALTY_ADMIN_TOKEN: adminToken, DIST_STATE_DIR: state, SKIP_BUILD: '1',
    KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092', LOYALTY_BASE_URL: 'https://loyalty.test',
  };
  try {
    await run('bash', [join(root, 'tools/distributed/run.sh'), 'start'], { env, cwd: root, timeout: 240_000 });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    await run('bash', [join(root, 'tools/distributed/run.sh'), 'stop'], { env, cwd: root }).catch(() => undefined);
    throw new Error(`distributed topology did not start:\n${err.stdout}\n${err.stderr}`);
  }
  return {
    url: `http://127.0.0.1:${port}`, adminToken, databaseUrl: db.url,
    close: async () => {
      await run('bash', [join(root, 'tools/distributed/run.sh'), 'stop'], { env, cwd: root, timeout: 60_000 }).catch(() => undefined);
      await db.drop();
    },
  };
};
