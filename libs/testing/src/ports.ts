import { createServer } from 'node:net';

/**
 * Free ports for servers a test starts (and may kill and restart on the same port), taken below
 * Linux's ephemeral range (32768…): a port in that range can be taken at any moment by an outgoing
 * connection of any process (a jar download, a PostgreSQL client), between the moment it was found
 * free and the moment the server binds it, or while the server is down for a restart (EADDRINUSE;
 * a CI run failed once on a private Kafka's controller port 45231).
 */

const LOW = 20_000;
const HIGH = 32_000; // exclusive; the ephemeral range starts at 32768 by default

const isFree = (port: number): Promise<boolean> => new Promise((resolve) => {
  const server = createServer();
  server.once('error', () => resolve(false));
  server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
});

/**
 * The first of `count` consecutive free ports (a random block of [20000, 32000), tried up to 50
 * times): blocks are aligned to 10, so two suites running at once rarely look at the same block.
 */
export const freePortBlock = async (count = 1): Promise<number> => {
  if (count < 1 || count > 10) throw new Error(`freePortBlock: count ${count} is not within 1..10`);
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = LOW + Math.floor(Math.random() * ((HIGH - LOW) / 10)) * 10;
    let ok = true;
    for (let p = base; p < base + count && ok; p++) ok = await isFree(p);
    if (ok) return base;
  }
  throw new Error(`no block of ${count} free ports found between ${LOW} and ${HIGH}`);
};

/** One free port below the ephemeral range. */
export const freePort = (): Promise<number> => freePortBlock(1);
