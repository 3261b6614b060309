import net from "node:net";
import tls from "node:tls";
import { LogUnavailableError, UnsupportedLogLayoutError } from "@chronolog/log";
import { type Admin, Kafka, type LogEntry, logLevel } from "kafkajs";
import type { KafkaLogOptions } from "./options.js";
import { connectionSettings } from "./security.js";

const LEVELS = { error: logLevel.ERROR, warn: logLevel.WARN, info: logLevel.INFO, debug: logLevel.DEBUG };
const LEVEL_NAMES: Record<number, string> = { 1: "ERROR", 2: "WARN", 4: "INFO", 5: "DEBUG" };

/** `"host:port,host:port"` or a list, as the Kafka client takes it. */
export function brokerList(brokers: string | readonly string[]): string[] {
  return typeof brokers === "string"
    ? brokers
        .split(",")
        .map((b) => b.trim())
        .filter(Boolean)
    : [...brokers];
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Every connection with TCP_NODELAY: a request is one small write, and Nagle only delays it.
 * With `ssl`, a TLS connection that verifies the broker's certificate (and names the host for
 * SNI unless it is an address).
 */
export function socketFactory({
  host,
  port,
  ssl,
  onConnect,
}: {
  host: string;
  port: number;
  ssl?: tls.ConnectionOptions | boolean;
  onConnect: () => void;
}) {
  const socket = ssl
    ? tls.connect(
        {
          host,
          port,
          ...(net.isIP(host) ? {} : { servername: host }),
          ...(typeof ssl === "object" ? ssl : {}),
          rejectUnauthorized: true,
        },
        onConnect,
      )
    : net.connect({ host, port }, onConnect);
  socket.setNoDelay(true);
  socket.setKeepAlive(true, 60_000);
  return socket;
}

/**
 * The Kafka client every part of one log shares (the admin, the writer's producer, the
 * follower's consumer): the brokers, TLS and SASL if asked for, short connection and retry
 * times, and the client's own log lines on stderr at the level asked for.
 */
export function createKafka(options: KafkaLogOptions, requestTimeoutMs: number): Kafka {
  return new Kafka({
    clientId: options.clientId ?? "chronolog",
    brokers: brokerList(options.brokers),
    socketFactory,
    ...connectionSettings(options),
    connectionTimeout: 3000,
    requestTimeout: requestTimeoutMs,
    retry: { initialRetryTime: 20, maxRetryTime: 1000, retries: 10 },
    logLevel: options.logLevel ? LEVELS[options.logLevel] : logLevel.NOTHING,
    logCreator:
      () =>
      ({ namespace, level, log }: LogEntry) => {
        const { message, ...extra } = log;
        process.stderr.write(
          `kafkajs ${LEVEL_NAMES[level] ?? level} [${namespace}] ${message} ${JSON.stringify(extra)}\n`,
        );
      },
  });
}

/**
 * The log's admin client: makes sure the topic exists with one partition, and asks for the
 * partition's end offset, which is how far a reader must have read to see every append that
 * completed before a read began. After a failure it starts a new admin client, since the old
 * one may keep asking a broker that died.
 */
export class TopicAdmin {
  private admin: Admin;
  private lsoInFlight: Promise<bigint> | null = null;
  private lsoNext: Promise<bigint> | null = null;

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: string,
    private readonly timeoutMs: number,
    /** True once the log is closing: a failed request is then not retried. */
    private readonly closing: () => boolean,
  ) {
    this.admin = kafka.admin();
  }

  async connect(): Promise<void> {
    await this.admin.connect();
  }

  /** Creates the topic if it is missing: one partition, kept whole (no retention, no compaction). */
  async createTopic(replicationFactor: number | undefined): Promise<void> {
    await this.admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic: this.topic,
          numPartitions: 1,
          replicationFactor: replicationFactor ?? -1,
          configEntries: [
            // An event log is kept whole: no deletion by age or size, no compaction.
            { name: "cleanup.policy", value: "delete" },
            { name: "retention.ms", value: "-1" },
            { name: "retention.bytes", value: "-1" },
          ],
        },
      ],
    });
  }

  /** Refuses a topic of more than one partition: the log keeps one total order. */
  async checkOnePartition(): Promise<void> {
    const metadata = await this.admin.fetchTopicMetadata({ topics: [this.topic] });
    const partitions = metadata.topics[0]?.partitions.length ?? 0;
    if (partitions !== 1) {
      throw new UnsupportedLogLayoutError(
        `topic ${this.topic}`,
        `${partitions} partitions: this log keeps one total order in one partition`,
      );
    }
  }

  /**
   * The partition's end offset. A call made while a request is out waits for the next one
   * (which starts after the call did), so concurrent readers share requests without ever
   * getting an answer older than their call.
   */
  lastStableOffset(): Promise<bigint> {
    if (!this.lsoInFlight) {
      this.lsoInFlight = this.fetchLastStableOffset().finally(() => {
        this.lsoInFlight = null;
      });
      return this.lsoInFlight;
    }
    if (!this.lsoNext) {
      this.lsoNext = this.lsoInFlight
        .catch(() => {})
        .then(() => {
          this.lsoNext = null;
          return this.lastStableOffset();
        });
    }
    return this.lsoNext;
  }

  /** The partition's first offset still held and its end offset. */
  async offsets(): Promise<{ low: bigint; high: bigint }> {
    const offsets = await this.admin.fetchTopicOffsets(this.topic);
    const p = offsets.find((o) => o.partition === 0);
    if (!p) throw new LogUnavailableError(`kafka log ${this.topic}: partition 0 not found`);
    return { low: BigInt(p.low), high: BigInt(p.high) };
  }

  private async fetchLastStableOffset(): Promise<bigint> {
    const deadline = performance.now() + this.timeoutMs;
    for (let attempt = 1; ; attempt++) {
      try {
        const offsets = await this.admin.fetchTopicOffsets(this.topic);
        const p = offsets.find((o) => o.partition === 0);
        if (!p) throw new LogUnavailableError(`kafka log ${this.topic}: partition 0 not found`);
        return BigInt(p.offset);
      } catch (error) {
        if (this.closing() || performance.now() > deadline) throw error;
        // A broker died or leadership moved: the admin client may keep asking the dead one,
        // so after a failure a new client starts again from the bootstrap brokers.
        if (attempt > 1) await this.renew();
        await sleep(Math.min(500, 10 * 2 ** attempt));
      }
    }
  }

  private async renew(): Promise<void> {
    const old = this.admin;
    this.admin = this.kafka.admin();
    void old.disconnect().catch(() => {});
    await this.admin.connect().catch(() => {});
  }

  disconnect(): Promise<void> {
    return this.admin.disconnect();
  }
}
