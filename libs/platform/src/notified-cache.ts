import { randomBytes } from 'node:crypto';
import { Client, Pool } from 'pg';

/**
 * An in-process cache of rows that change rarely (programmes, API keys), kept right by PostgreSQL
 * notifications: a trigger on the table NOTIFYs `channel` with the changed group's key, whoever
 * writes, and every process drops that group. Values are only served while the LISTEN connection is
 * up (it is opened on first use); without it every read goes to the database. A read that started
 * before a change of its group is not cached, so a late answer never outlives the notification.
 *
 * A notification reaches the other processes a moment after the commit, which is too late for a
 * change that must hold everywhere at once (a revoked API key). `propagate` closes that gap: the
 * writer announces the change once more with a token on `<channel>_sync`, and every listening
 * process acknowledges it on `<channel>_ack` after dropping the group; the writer returns when
 * every listener PostgreSQL knows of has answered (or after a bounded wait).
 */
export class NotifiedCache<V> {
  private readonly groups = new Map<string, Map<string, V>>();
  /** Bumped by every change of a group. */
  private readonly generations = new Map<string, number>();
  /** Its own connection, not the pool's: the pool can end whatever order shutdown hooks run in. */
  private listener: Client | null = null;
  private listening: Promise<void> | null = null;
  private closed = false;
  /** Propagations waiting for acknowledgements, by token: the listeners' backend pids still to answer. */
  private readonly waiting = new Map<string, { pending: Set<number>; done: () => void }>();
  private readonly syncChannel: string;
  private readonly ackChannel: string;
  /** The listening connection's only statement, by which pg_stat_activity shows the listeners. */
  private readonly listenSql: string;

  constructor(private readonly pool: Pool, private readonly channel: string, private readonly maxGroups = 10_000) {
    this.syncChannel = `${channel}_sync`;
    this.ackChannel = `${channel}_ack`;
    this.listenSql = `listen ${channel}; listen ${this.syncChannel}; listen ${this.ackChannel}`;
  }

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

  /**
   * Drops the group here and waits until every process listening on this channel has dropped it
   * too (at most `timeoutMs`; a listener that does not answer in time, say a process being
   * killed, is not waited for longer). Call it after the change has committed.
   */
  async propagate(group: string, timeoutMs = 2_000): Promise<void> {
    this.drop(group);
    if (this.closed) return;
    if (!this.listener) {
      this.live();
      await this.listening?.catch(() => undefined);
    }
    if (!this.listener) return; // acknowledgements cannot reach us; the trigger's notification still goes out
    const token = randomBytes(8).toString('hex');
    const { rows } = await this.pool.query<{ pid: number }>(
      `select pid from pg_stat_activity where datname = current_database() and query = $1`, [this.listenSql]);
    const pending = new Set(rows.map((r) => r.pid));
    if (!pending.size) return;
    let timer: NodeJS.Timeout | undefined;
    const acknowledged = new Promise<void>((resolve) => {
      this.waiting.set(token, { pending, done: resolve });
      timer = setTimeout(resolve, timeoutMs);
    });
    try {
      await this.pool.query('select pg_notify($1, $2)', [this.syncChannel, `${token} ${group}`]);
      await acknowledged;
    } finally {
      clearTimeout(timer);
      this.waiting.delete(token);
    }
  }

  private onNotification(c: Client, channel: string, payload: string | undefined): void {
    if (!payload) return;
    if (channel === this.channel) {
      this.drop(payload);
    } else if (channel === this.syncChannel) {
      const space = payload.indexOf(' ');
      if (space < 0) return;
      this.drop(payload.slice(space + 1));
      const ack = `${payload.slice(0, space)} ${(c as unknown as { processID: number }).processID}`;
      // through the pool: the listening connection's last statement must stay its LISTEN
      void this.pool.query('select pg_notify($1, $2)', [this.ackChannel, ack]).catch(() => undefined);
    } else if (channel === this.ackChannel) {
      const [token, pid] = payload.split(' ');
      const w = this.waiting.get(token);
      if (!w) return;
      w.pending.delete(Number(pid));
      if (!w.pending.size) w.done();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.values()) w.done();
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
      c.on('notification', (n) => this.onNotification(c, n.channel, n.payload));
      c.on('error', () => {
        if (this.listener !== c) return;
        this.listener = null;
        this.listening = null;
        this.clear();
        void c.end().catch(() => undefined);
      });
      await c.query(this.listenSql);
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
