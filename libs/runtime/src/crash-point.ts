import { rootLogger } from './ops/logging';

/**
 * Test-only crash hook for the resilience tests (apps/standalone/src/resilience.e2e-spec.ts).
 *
 * `LOYALTY_CRASH_POINT=<name>[@<n>][,<name>[@<n>]…]` makes the process kill itself with SIGKILL
 * (what `kill -9` does: no shutdown hooks, no Kafka offset commit, no group leave, no reply) the
 * n-th time (default: the first) execution passes `crashPoint(<name>)`. Unset, it does nothing.
 *
 * Named points: `ledger.event.process:after-member-append`, `ledger.event.process:after-order-append`,
 * `redemption.create:after-append`.
 */
const hits = new Map<string, number>();

export const crashPoint = (name: string): void => {
  const spec = process.env.LOYALTY_CRASH_POINT;
  if (!spec) return;
  const entry = spec.split(',').map((s) => s.trim()).find((s) => s === name || s.startsWith(`${name}@`));
  if (!entry) return;
  const nth = entry === name ? 1 : Number(entry.slice(name.length + 1));
  const hit = (hits.get(name) ?? 0) + 1;
  hits.set(name, hit);
  if (hit !== nth) return;
  rootLogger().warn({ context: 'crash-point' }, `crash point ${name} reached (hit ${hit}): SIGKILL`);
  process.kill(process.pid, 'SIGKILL');
};
