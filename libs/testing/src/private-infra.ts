import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePortBlock } from './ports';

/**
 * Private infrastructure for fault tests: a PostgreSQL cluster and a Kafka broker of the test's
 * own, on free ports of 127.0.0.1, that it may kill and restart without touching the shared
 * servers other suites use.
 */

const run = promisify(execFile);
const root = join(__dirname, '..', '..', '..');

const pgBin = (): string => {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a)) : [];
  if (!versions.length) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (initdb, pg_ctl)');
  return join(base, versions[0], 'bin');
};

export interface PrivatePostgres {
  port: number;
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  /** pg_ctl restart: every connection is dropped, the server comes back on the same port. */
  restart(mode?: 'fast' | 'immediate'): Promise<void>;
  stop(): Promise<void>;
}

/**
 * initdb + pg_ctl into a temp dir, trust auth, fsync off. PostgreSQL refuses to run as root, so as
 * root the cluster belongs to the `postgres` system user (runuser); otherwise to the current user.
 */
export const startPrivatePostgres = async (): Promise<PrivatePostgres> => {
  const bin = pgBin();
  const dir = mkdtempSync(join(tmpdir(), 'loyalty-pg-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const as = (cmd: string, args: string[]) => (asRoot ? run('runuser', ['-u', 'postgres', '--', cmd, ...args]) : run(cmd, args));
  const port = await freePortBlock(1);
  const data = join(dir, 'data');
  await as(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const ctl = (args: string[]) => as(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'server.log'), ...args]);
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300`;
  await ctl(['-o', opts, '-w', '-t', '60', 'start']);
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: async (mode = 'fast') => { await ctl(['-o', opts, '-m', mode, '-w', '-t', '60', 'restart']); },
    stop: async () => {
      await ctl(['-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
};

export interface PrivateKafka {
  brokers: string;
  /** kill -9 the broker process. */
  kill(): Promise<void>;
  /** tools/kafka/start.sh again (same data): resolves when the broker answers as ready (recovery after a kill takes a while on a loaded machine). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A single-node KRaft broker from tools/kafka (jars fetched once into its own KAFKA_HOME) on free ports. */
export const startPrivateKafka = async (): Promise<PrivateKafka> => {
  const home = mkdtempSync(join(tmpdir(), 'loyalty-kafka-'));
  // client port and controller port side by side, below the ephemeral range (see ./ports)
  let port = await freePortBlock(2);
  const env = (): NodeJS.ProcessEnv => ({ ...process.env, KAFKA_HOME: home, KAFKA_PORT: String(port), KAFKA_CONTROLLER_PORT: String(port + 1), KAFKA_PARTITIONS: '4', KAFKA_READY_TIMEOUT: '300' });
  const sh = (script: string, timeout = 330_000) => run('bash', [join(root, 'tools/kafka', script)], { env: env(), cwd: root, timeout });
  const pid = (): number | null => {
    try { return Number(readFileSync(join(home, 'kafka.pid'), 'utf8').trim()) || null; } catch { return null; }
  };
  const alive = (p: number) => { try { process.kill(p, 0); return true; } catch { return false; } };
  // the first start may still find a port taken by another suite's server since it was found free:
  // a new block then (never on a restart, whose clients know the port)
  for (let attempt = 1; ; attempt++) {
    try {
      await sh('start.sh');
      break;
    } catch (e) {
      const taken = /already in use|is in use/.test(String((e as { stderr?: string }).stderr ?? e));
      if (!taken || attempt === 3) throw e;
      port = await freePortBlock(2);
    }
  }
  return {
    brokers: `127.0.0.1:${port}`,
    kill: async () => {
      const p = pid();
      if (p === null) throw new Error('the private broker has no pid');
      process.kill(p, 'SIGKILL');
      for (let i = 0; i < 100 && alive(p); i++) await new Promise((r) => setTimeout(r, 100));
    },
    start: async () => { await sh('start.sh'); },
    stop: async () => {
      // only the private broker: its own pid, never tools/kafka/stop.sh on the shared home
      const p = pid();
      if (p !== null && alive(p)) process.kill(p, 'SIGKILL');
      for (let i = 0; p !== null && i < 100 && alive(p); i++) await new Promise((r) => setTimeout(r, 100));
      rmSync(home, { recursive: true, force: true });
    },
  };
};
