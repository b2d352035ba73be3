/**
 * The TCP ports of this deployment on this host: the ports its processes listen on (registered
 * once listening, so port 0 resolves to the real one), the loopback ports of the infrastructure it
 * was configured with (PostgreSQL, Kafka, Redis, EventStoreDB) and any in LOYALTY_RESERVED_PORTS
 * (the distributed topology lists every process's port there). A sandbox webhook may target
 * loopback (decisions §8), but never these: `/test` must not become a scanner of the service's
 * own ports.
 */
const registered = new Set<number>();

export const registerOwnPort = (port: number): void => {
  if (Number.isSafeInteger(port) && port > 0) registered.add(port);
};

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\]|::1|0\.0\.0\.0)$/i;

const loopbackPort = (url: string | undefined, defaultPort: number): number | null => {
  if (!url) return null;
  try {
    const u = new URL(url.includes('://') ? url : `tcp://${url}`);
    return LOOPBACK.test(u.hostname) ? Number(u.port || defaultPort) : null;
  } catch {
    return null;
  }
};

export const ownPorts = (env: NodeJS.ProcessEnv = process.env): Set<number> => {
  const ports = new Set(registered);
  const add = (p: number | null) => { if (p && Number.isSafeInteger(p)) ports.add(p); };
  add(loopbackPort(env.DATABASE_URL ?? 'postgres://127.0.0.1:5432', 5432));
  for (const b of (env.KAFKA_BROKERS ?? '').split(',').filter(Boolean)) add(loopbackPort(b.trim(), 9092));
  add(loopbackPort(env.REDIS_URL, 6379));
  add(loopbackPort(env.EVENTSTORE_URL?.replace(/^esdb(\+discover)?:/, 'tcp:'), 2113));
  for (const p of (env.LOYALTY_RESERVED_PORTS ?? '').split(',')) add(Number(p.trim()) || null);
  if (env.PORT) add(Number(env.PORT) || null);
  return ports;
};
