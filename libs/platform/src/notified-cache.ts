import { Client, Pool } from 'pg';

/**
 * An in-process cache of rows that change rarely (programmes, API keys), kept right by PostgreSQL
 * notifications: a trigger on the table NOTIFYs `channel` with the changed group's key, whoever
 * writes, and every process drops that group. Values are only served while the LISTEN connection is
 * up (it is opened on first use); without it every read goes to the database. A read that started
 * before a change of its group is not cached, so a late answer never outlives the notification.
 */
export class NotifiedCache<V> {
  private readonly groups = new Map<string, Map<string, V>>();
  /** Bumped by every change of a group. */
  private readonly generations = new Map<string, number>();
  /** Its own connection, not the pool's: the pool can end whatever order shutdown hooks run in. */
  private listener: Client | null = null;
  private listening: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly pool: Pool, private readonly channel: string, private readonly maxGroups = 10_000) {}

  /** The cached value of (group, key), or `read()`'s (cached when the feed is up and nothing changed meanwhile). */
  async get(group: string, key: string, read: () => Promise<V>): Promise<V> {
    const live = this.live();
    const hit = live ? this.groups.get(group) : undefined;
    if (hit?.has(key)) {
      // re-insert: the Map's order is least recently used first
      this.groups.delete(group);
      this.groups.set(group, hit);
      return hit.get(key) as V;
    }
    const generation = this.generations.get(group) ?? 0;
    const value = await read();
    if (live && this.listener && (this.generations.get(group) ?? 0) === generation) {
      const entries = this.groups.get(group) ?? new Map<string, V>();
      entries.set(key, value);
      this.groups.delete(group);
      this.groups.set(group, entries);
      if (this.groups.size > this.maxGroups) this.drop(this.groups.keys().next().value!);
    }
    return value;
  }

  /** Forgets a group (the notification does the same in every process). */
  drop(group: string): void {
    this.generations.set(group, (this.generations.get(group) ?? 0) + 1);
    this.groups.delete(group);
    if (this.generations.size > this.maxGroups * 4) this.generations.clear();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.listening?.catch(() => undefined);
    const c = this.listener;
    this.listener = null;
    this.clear();
    await c?.end().catch(() => undefined);
  }

  private clear(): void {
    for (const g of [...this.groups.keys()]) this.drop(g);
  }

  private live(): boolean {
    if (this.listener) return true;
    if (!this.closed) this.listening ??= this.listen();
    return false;
  }

  private async listen(): Promise<void> {
    const c = new Client((this.pool as unknown as { options: ConstructorParameters<typeof Client>[0] }).options);
    try {
      await c.connect();
      c.on('notification', (n) => { if (n.channel === this.channel && n.payload) this.drop(n.payload); });
      c.on('error', () => {
        if (this.listener !== c) return;
        this.listener = null;
        this.listening = null;
        this.clear();
        void c.end().catch(() => undefined);
      });
      await c.query(`listen ${this.channel}`);
      if (this.closed) {
        await c.end();
        return;
      }
      this.listener = c;
    } catch {
      await c.end().catch(() => undefined);
      this.listening = null;
    }
  }
}
