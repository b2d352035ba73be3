import { Admin, Kafka, logLevel } from 'kafkajs';

/**
 * The broker half of `/readyz` (issue 8: it was `() => true`): a metadata round trip to the
 * cluster with a short deadline, answered from a cache for a second so a probe storm costs one
 * request. A broker that does not answer, or answers with no brokers, is not ready.
 */
export class KafkaHealth {
  private readonly admin: Admin;
  private connected = false;
  private last: { at: number; ok: boolean; error: string | null } | null = null;
  private inFlight: Promise<boolean> | null = null;

  constructor(brokers: string[], private readonly timeoutMs = 2_000, private readonly cacheMs = 1_000) {
    this.admin = new Kafka({
      clientId: 'loyalty-readiness', brokers, logLevel: logLevel.NOTHING, connectionTimeout: timeoutMs, requestTimeout: timeoutMs,
      retry: { retries: 0 },
    }).admin();
  }

  /** The reason of the last failed check, for the readiness body. */
  get lastError(): string | null { return this.last?.error ?? null; }

  check(): Promise<boolean> {
    if (this.last && Date.now() - this.last.at < this.cacheMs) return Promise.resolve(this.last.ok);
    this.inFlight ??= this.probe().finally(() => { this.inFlight = null; });
    return this.inFlight;
  }

  /**
   * A consumer group's lag by topic (issue 11, read when /metrics is scraped): per partition, the
   * log end minus the group's committed offset (the log start where it has committed nothing: the
   * group starts from the earliest retained request).
   */
  async consumerLag(groupId: string): Promise<{ topic: string; lag: number }[]> {
    if (!this.connected) { await this.admin.connect(); this.connected = true; }
    try {
      const committed = await this.admin.fetchOffsets({ groupId });
      return await Promise.all(committed.map(async ({ topic, partitions }) => {
        const ends = new Map((await this.admin.fetchTopicOffsets(topic)).map((p) => [p.partition, p]));
        let lag = 0;
        for (const p of partitions) {
          const end = ends.get(p.partition);
          if (!end) continue;
          const from = Number(p.offset) >= 0 ? Number(p.offset) : Number(end.low);
          lag += Math.max(0, Number(end.high) - from);
        }
        return { topic, lag };
      }));
    } catch (e) {
      this.connected = false;
      await this.admin.disconnect().catch(() => undefined);
      throw e;
    }
  }

  async close(): Promise<void> {
    await this.admin.disconnect().catch(() => undefined);
  }

  private async probe(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const deadline = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs); });
      const ask = (async () => {
        if (!this.connected) { await this.admin.connect(); this.connected = true; }
        return this.admin.describeCluster();
      })();
      const cluster = await Promise.race([ask, deadline]);
      const ok = cluster.brokers.length > 0;
      this.last = { at: Date.now(), ok, error: ok ? null : 'the cluster reports no brokers' };
    } catch (e) {
      // a dropped connection is re-opened by the next probe
      this.connected = false;
      await this.admin.disconnect().catch(() => undefined);
      this.last = { at: Date.now(), ok: false, error: e instanceof Error ? e.message : String(e) };
    } finally {
      clearTimeout(timer);
    }
    return this.last.ok;
  }
}
