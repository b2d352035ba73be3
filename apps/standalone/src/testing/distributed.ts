import { ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePortBlock } from '@loyalty/testing';
import { freshDatabaseUrl } from './harness';

const run = promisify(execFile);
const root = join(__dirname, '..', '..', '..', '..');
const script = join(root, 'tools/distributed/run.sh');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type DistributedApp = 'gateway' | 'ledger' | 'ingest' | 'redemption' | 'referral' | 'webhook';

/** A running distributed topology: the gateway's URL plus handles on each process (for crash tests). */
export interface Distributed {
  url: string;
  adminToken: string;
  databaseUrl: string;
  /** DIST_STATE_DIR: `<app>.pid`, `<app>.port`, `<app>.log` */
  stateDir: string;
  /** The pid of the app's current process (null when it is not recorded). */
  pid(app: DistributedApp): number | null;
  /** Whether the app's current process is alive. */
  alive(app: DistributedApp): boolean;
  /** The app's HTTP port (a service's health/readiness port; the gateway's API port). */
  port(app: DistributedApp): number;
  /** Everything the app's processes wrote so far (restarts append). */
  log(app: DistributedApp): string;
  /** kill -9 the app's process and wait until it is gone. */
  kill(app: DistributedApp): Promise<void>;
  /** Resolves once the app's process has died on its own (e.g. a crash point); rejects after timeoutMs. */
  waitForExit(app: DistributedApp, timeoutMs?: number): Promise<void>;
  /**
   * Stops the app (SIGTERM; kill -9 if it lingers) if it runs and starts it again with the
   * topology's environment plus `env` (a key set to undefined is removed), on the same port;
   * resolves when its /readyz answers.
   */
  restart(app: DistributedApp, env?: Record<string, string | undefined>): Promise<void>;
  close(): Promise<void>;
}

export interface DistributedOptions {
  /** Extra environment for every process of the topology. */
  env?: Record<string, string>;
}

/**
 * One distributed topology at a time per broker: the apps' consumer groups (`loyalty-<service>`)
 * and request topics (`<service>.commands` …) are not namespaced, so two topologies on one broker
 * would serve each other's requests against the wrong database. The lock is held by a `flock`
 * child whose stdin is our pipe: it is released when we close it, or when this process dies.
 */
const lockTopology = async (timeoutMs = 900_000): Promise<() => void> => {
  const brokers = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').replace(/[^a-z0-9]+/gi, '_');
  const lockFile = join(tmpdir(), `loyalty-distributed-${brokers}.lock`);
  const child: ChildProcess = spawn('flock', ['-x', '-w', String(Math.ceil(timeoutMs / 1000)), lockFile, 'sh', '-c', 'echo locked; exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('locked')) resolve();
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`could not lock ${lockFile} (flock exit ${code}): another distributed topology runs on this broker`)));
  });
  child.unref();
  (child.stdout as unknown as { unref?: () => void }).unref?.();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  return () => child.stdin?.end();
};

/** Running (a zombie waiting for its reaper counts as dead). */
const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc: trust kill(0)
  }
};

/** The pid is one of our app processes (not a recycled pid). */
const isAppProcess = (pid: number): boolean => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('dist/apps/');
  } catch {
    return false;
  }
};

/**
 * Apps of an earlier run whose test process died without closing its topology (killed jest) would
 * keep consuming from the shared groups: stop them. Only state dirs this helper created (they name
 * their owner) whose owner is gone are touched, and only processes that are still our apps.
 */
const stopOrphans = async (): Promise<void> => {
  for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith('loyalty-dist-'))) {
    const dir = join(tmpdir(), name);
    const ownerFile = join(dir, 'owner');
    if (!existsSync(ownerFile)) continue;
    const owner = Number(readFileSync(ownerFile, 'utf8'));
    if (isAlive(owner)) continue;
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.pid'))) {
      const pid = Number(readFileSync(join(dir, f), 'utf8'));
      if (pid > 0 && isAlive(pid) && isAppProcess(pid)) process.kill(pid, 'SIGKILL');
    }
    rmSync(ownerFile, { force: true }); // handled; the logs stay for whoever wants to read them
  }
};

/**
 * Starts the distributed topology (gateway and services as separate processes over the real Kafka
 * broker) with tools/distributed/run.sh, on a fresh database. Needs `npm run build` first and a
 * broker at KAFKA_BROKERS (npm test provides both).
 */
export const startDistributed = async (options: DistributedOptions = {}): Promise<Distributed> => {
  const unlock = await lockTopology();
  let db: Awaited<ReturnType<typeof freshDatabaseUrl>> | null = null;
  let env: NodeJS.ProcessEnv = {};
  try {
    await stopOrphans();
    db = await freshDatabaseUrl('dist');
    const state = mkdtempSync(join(tmpdir(), 'loyalty-dist-'));
    writeFileSync(join(state, 'owner'), String(process.pid));
    const port = await freePortBlock(6); // a gateway port followed by five service ports
    const adminToken = `adm_dist_${port}`;
    env = {
      ...process.env, DATABASE_URL: db.url, PORT: String(port), LOYALTY_ADMIN_TOKEN: adminToken, DIST_STATE_DIR: state, SKIP_BUILD: '1',
      // the services' health ports: right after the gateway's
      DIST_PORT_BASE: String(port + 1),
      KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092', LOYALTY_BASE_URL: 'https://loyalty.test',
      ...options.env,
    };
    const sh = async (args: string[], extra: Record<string, string | undefined> = {}, timeout = 240_000) => {
      const e: NodeJS.ProcessEnv = { ...env, ...extra };
      for (const k of Object.keys(extra)) if (extra[k] === undefined) delete e[k];
      try {
        return await run('bash', [script, ...args], { env: e, cwd: root, timeout });
      } catch (err) {
        const x = err as { stdout?: string; stderr?: string; message: string };
        throw new Error(`run.sh ${args.join(' ')} failed: ${x.message}\n${x.stdout ?? ''}\n${x.stderr ?? ''}`);
      }
    };
    try {
      await sh(['start']);
    } catch (e) {
      await sh(['stop'], {}, 60_000).catch(() => undefined);
      throw new Error(`distributed topology did not start:\n${(e as Error).message}`);
    }
    const file = (app: DistributedApp, ext: string) => join(state, `${app}.${ext}`);
    const pid = (app: DistributedApp): number | null => {
      try {
        return Number(readFileSync(file(app, 'pid'), 'utf8').trim()) || null;
      } catch {
        return null;
      }
    };
    const alive = (app: DistributedApp) => {
      const p = pid(app);
      return p !== null && isAlive(p);
    };
    const waitForExit = async (app: DistributedApp, timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs;
      while (alive(app)) {
        if (Date.now() > deadline) throw new Error(`${app} (pid ${pid(app)}) is still alive after ${timeoutMs} ms`);
        await sleep(50);
      }
    };
    let closed = false;
    return {
      url: `http://127.0.0.1:${port}`, adminToken, databaseUrl: db.url, stateDir: state,
      pid, alive, waitForExit,
      port: (app) => Number(readFileSync(file(app, 'port'), 'utf8').trim()),
      log: (app) => (existsSync(file(app, 'log')) ? readFileSync(file(app, 'log'), 'utf8') : ''),
      kill: async (app) => {
        const p = pid(app);
        if (p === null || !isAlive(p)) throw new Error(`${app} is not running`);
        process.kill(p, 'SIGKILL');
        await waitForExit(app, 10_000);
      },
      restart: async (app, extra = {}) => {
        await sh(['restart', app], extra);
      },
      close: async () => {
        if (closed) return;
        closed = true;
        try {
          await sh(['stop'], {}, 60_000).catch(() => undefined);
          await db!.drop();
          rmSync(join(state, 'owner'), { force: true });
        } finally {
          unlock();
        }
      },
    };
  } catch (e) {
    await db?.drop().catch(() => undefined);
    unlock();
    throw e;
  }
};
