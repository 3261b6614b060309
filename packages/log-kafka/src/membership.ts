import { LogUnavailableError, UnsupportedLogLayoutError } from "@chronolog/log";
import { type Consumer, Kafka, logLevel } from "kafkajs";
import { brokerList, socketFactory } from "./client.js";
import { checkTls, clearKafkaError, connectionSettings, type KafkaSecurityOptions } from "./security.js";
import { monotonicOf, SessionFence } from "./session-fence.js";

export interface KafkaMembershipOptions extends KafkaSecurityOptions {
  /** Bootstrap brokers, as for the log. */
  readonly brokers: string | readonly string[];
  /** The log's topic: the shards are the partitions of `<topic>.schedulers`. */
  readonly topic: string;
  /** This scheduler's id, unique among live schedulers; its workers' ids start with it. */
  readonly id: string;
  /** Shards for a shard topic this member creates (default 12). An existing topic's count wins. */
  readonly shards?: number;
  /**
   * How long the group waits for a silent member before its shards move (default 6 s, the
   * brokers' smallest allowed session by default). Takeover after a crash takes about this
   * plus one heartbeat.
   */
  readonly sessionTimeoutMs?: number;
  /** How often a member tells the group it is alive (default 1 s, or a third of a shorter session). */
  readonly heartbeatIntervalMs?: number;
  /**
   * How long before the group could drop a silent member it fences itself (see `fenced`).
   * Default two heartbeats (2 s of the default 6 s session: fenced after 4 s of silence, three
   * heartbeats missed), but in a session too short for that, half of what two heartbeats leave
   * of it, so that two heartbeats in a row may still go unanswered without a fence (250 ms of
   * a 1.5 s session with its 500 ms heartbeat: fenced after 1.25 s).
   */
  readonly fenceMarginMs?: number;
  /** How long joining may take before it fails (default 30 s). */
  readonly joinTimeoutMs?: number;
  /** Called if the group consumer stops for good (it holds nothing from then on). */
  readonly onFailure?: (error: Error) => void;
}

/**
 * Scheduler membership on Kafka: every scheduler joins one consumer group on a data-less topic
 * whose partitions are the shards; the group's assignment says which shards each scheduler
 * holds. A member that stops heartbeating (killed, hung, cut off) is removed after the session
 * timeout, and the group hands its shards to the members left. During a rebalance a member
 * holds nothing, so two members overlap as little as the protocol allows; the log's
 * compare-and-set makes an overlap harmless anyway.
 *
 * A member cut off from the coordinator does not hear that it was dropped: it fences itself
 * instead (see SessionFence). Once it has gone the session less `fenceMarginMs` without an
 * answered heartbeat or sync, it holds no shard and says so to its listeners, before the
 * coordinator can have handed its shards to another member; an answered heartbeat or a new
 * assignment lifts the fence.
 */
export class KafkaMembership {
  readonly id: string;
  readonly groupId: string;
  readonly shardTopic: string;
  private shardCount = 0;
  private readonly kafka: Kafka;
  private readonly consumer: Consumer;
  private readonly held = new Set<number>();
  private readonly alive = new Set<string>();
  private readonly listeners = new Set<() => void>();
  private refresher: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly fence: SessionFence;
  /** Request name -> when the last answered one was sent (monotonic ms), until it is counted. */
  private readonly answered = new Map<string, number>();
  /** Times the assignment changed here, and when it last did (ms since the epoch). */
  readonly history: Array<{ at: number; shards: number[] }> = [];

  private constructor(private readonly o: KafkaMembershipOptions) {
    this.id = o.id;
    this.shardTopic = `${o.topic}.schedulers`;
    this.groupId = `chronolog.${o.topic}.schedulers`;
    this.kafka = new Kafka({
      clientId: o.id,
      brokers: brokerList(o.brokers),
      socketFactory,
      ...connectionSettings(o),
      connectionTimeout: 3000,
      logLevel: logLevel.NOTHING,
      retry: { initialRetryTime: 50, maxRetryTime: 1000, retries: 20 },
    });
    const session = this.sessionTimeoutMs;
    const heartbeat = o.heartbeatIntervalMs ?? Math.min(1000, Math.floor(session / 3));
    this.fence = new SessionFence({
      sessionTimeoutMs: session,
      marginMs:
        o.fenceMarginMs ?? Math.max(0, Math.min(2 * heartbeat, Math.floor((session - 2 * heartbeat) / 2))),
      onFence: () => {
        if (!this.closed) this.changed();
      },
    });
    this.consumer = this.kafka.consumer({
      groupId: this.groupId,
      sessionTimeout: session,
      heartbeatInterval: heartbeat,
      rebalanceTimeout: Math.max(10_000, 2 * session),
      maxWaitTimeInMs: 200,
      allowAutoTopicCreation: false,
    });
  }

  /** Joins the group; resolves once this member has its first assignment. */
  static async join(o: KafkaMembershipOptions): Promise<KafkaMembership> {
    const m = new KafkaMembership(o);
    try {
      const { ssl } = connectionSettings(o);
      if (ssl) await checkTls(brokerList(o.brokers), ssl, 10_000);
      await m.start();
    } catch (error) {
      await m.close().catch(() => {});
      throw await clearKafkaError(error, o, brokerList(o.brokers));
    }
    return m;
  }

  /** Silence after which the group hands a member's shards to the others. */
  get sessionTimeoutMs(): number {
    return this.o.sessionTimeoutMs ?? 6000;
  }

  get shards(): number {
    return this.shardCount;
  }

  /**
   * Whether this member is fenced: it has not renewed its session for the session timeout less
   * the fence margin, so the group may be about to drop it (or, if the clocks disagree, may
   * have). A fenced member holds no shard, whatever its last assignment said; its listeners
   * hear of the change when the fence comes down, and its scheduler stops what its workers run.
   */
  fenced(): boolean {
    return this.fence.fenced;
  }

  /** Silence after which this member fences itself: the session less the fence margin. */
  get fenceAfterMs(): number {
    return this.fence.fenceAfterMs;
  }

  /** How long ago this member sent the last request that renewed its session. */
  get sinceRenewalMs(): number {
    return this.fence.sinceRenewalMs;
  }

  private async start(): Promise<void> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: [{ topic: this.shardTopic, numPartitions: this.o.shards ?? 12, replicationFactor: -1 }],
      });
      const meta = await admin.fetchTopicMetadata({ topics: [this.shardTopic] });
      this.shardCount = meta.topics[0]?.partitions.length ?? 0;
      if (this.shardCount === 0)
        throw new UnsupportedLogLayoutError(`shard topic ${this.shardTopic}`, "it has no partitions");
    } finally {
      await admin.disconnect();
    }
    const c = this.consumer;
    let joined: () => void = () => {};
    const first = new Promise<void>((resolve) => {
      joined = resolve;
    });
    // The session is renewed by an answered heartbeat, and by the sync that ends a join. The
    // client says when each request was sent as its answer comes in, before the heartbeat or
    // join it belongs to is reported done: the two are matched by name.
    c.on(c.events.REQUEST, (e) => {
      const { apiName, sentAt } = e.payload;
      if ((apiName === "Heartbeat" || apiName === "SyncGroup") && typeof sentAt === "number")
        this.answered.set(apiName, monotonicOf(sentAt));
    });
    c.on(c.events.HEARTBEAT, () => {
      if (this.renewed("Heartbeat")) this.changed();
    });
    c.on(c.events.REBALANCING, () => {
      if (this.held.size === 0) return;
      this.held.clear();
      this.changed();
    });
    c.on(c.events.GROUP_JOIN, (e) => {
      // The assignment applies at once, in the order the joins happen; the member list that
      // isAlive answers from follows (the first join waits for it).
      const assigned = (e.payload.memberAssignment[this.shardTopic] ?? []) as number[];
      this.renewed("SyncGroup");
      this.held.clear();
      for (const s of assigned) this.held.add(s);
      this.changed();
      void this.refreshMembers().finally(joined);
    });
    c.on(c.events.CRASH, (e) => {
      // kafkajs restarts the consumer after a retriable crash; until it rejoins, hold nothing.
      if (this.held.size > 0) {
        this.held.clear();
        this.changed();
      }
      if (!e.payload.restart && !this.closed) this.o.onFailure?.(e.payload.error);
    });
    await c.connect();
    await c.subscribe({ topics: [this.shardTopic], fromBeginning: false });
    await c.run({ autoCommit: false, eachMessage: async () => {} });
    const timeout = this.o.joinTimeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      first,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new LogUnavailableError(`could not join scheduler group ${this.groupId} within ${timeout} ms`),
            ),
          timeout,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    this.refresher = setInterval(() => void this.refreshMembers(), 2000);
  }

  /** The live members, as the group coordinator lists them. Kept as it was on failure. */
  private async refreshMembers(): Promise<void> {
    if (this.closed) return;
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      const { groups } = await admin.describeGroups([this.groupId]);
      const members = groups[0]?.members ?? [];
      this.alive.clear();
      for (const m of members) this.alive.add(m.clientId);
    } catch {
      // keep the last list: a member is declared gone only on the coordinator's word
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  /** Counts the answered request of this name as a renewal; true if that lifted the fence. */
  private renewed(apiName: string): boolean {
    const sentAt = this.answered.get(apiName);
    if (sentAt === undefined) return false;
    this.answered.delete(apiName);
    return this.fence.renewed(sentAt);
  }

  private changed(): void {
    this.history.push({ at: Date.now(), shards: this.heldShards() });
    for (const l of this.listeners) {
      try {
        l();
      } catch {
        // a listener's failure is its own
      }
    }
  }

  holds(shard: number): boolean {
    return this.held.has(shard) && !this.fence.fenced;
  }

  /** Shards held now, in order (none while fenced). */
  heldShards(): number[] {
    return this.fence.fenced ? [] : [...this.held].sort((a, b) => a - b);
  }

  isAlive(schedulerId: string): boolean {
    return schedulerId === this.id || this.alive.has(schedulerId);
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Leaves the group (its shards move at once, without waiting for the session timeout). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.refresher) clearInterval(this.refresher);
    this.fence.stop();
    this.held.clear();
    this.listeners.clear();
    await this.consumer.disconnect().catch(() => {});
  }
}
