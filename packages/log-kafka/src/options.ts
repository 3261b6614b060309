export interface KafkaLogOptions {
  /** Bootstrap brokers: `"127.0.0.1:19092,127.0.0.1:19093"` or a list of `host:port`. */
  readonly brokers: string | readonly string[];
  /** The topic that holds the log. Created (one partition, no retention limit) if missing. */
  readonly topic: string;
  /** Client id the brokers see in their logs and quotas. Default `chronolog`. */
  readonly clientId?: string;
  /** Replication factor for a topic this client creates. Default: the cluster's default. */
  readonly replicationFactor?: number;
  /** Create the topic when it is missing. Default true. */
  readonly createTopic?: boolean;
  /** Largest record one append may make, in bytes (the topic's max.message.bytes must allow it). */
  readonly maxAppendBytes?: number;
  /** How long one request, or a wait for the log to catch up, may take. Default 30 s. */
  readonly requestTimeoutMs?: number;
  /**
   * How long an append keeps being retried when the cluster fails (a broker's death is
   * noticed after its session timeout, 9 s by default). Default 45 s.
   */
  readonly appendTimeoutMs?: number;
  /** The Kafka client's own log lines, on stderr. Default: none. */
  readonly logLevel?: "error" | "warn" | "info" | "debug";
  /**
   * How the reader fetches: a broker answers once `minBytes` are there or `maxWaitMs` passed.
   * Defaults (1 byte, 500 ms) give the least delay; an observer that can wait (a dashboard, an
   * auditor) asks the brokers far less often with, say, 1 MiB and 100 ms.
   */
  readonly fetch?: { readonly minBytes?: number; readonly maxWaitMs?: number };
  /** The time each append records as its events' `recordedAt`. Default: the real time. */
  readonly clock?: () => Date;
  /**
   * How many of the newest events the client keeps whole (a following subscription reads
   * them next); older events are read back from the brokers. Default 20,000.
   */
  readonly cacheEvents?: number;
}

/** Room the record framing and headers take beside key and value, in bytes (generous). */
export const RECORD_OVERHEAD = 96;
