import type { KafkaSecurityOptions } from "./security.js";

/** Options of the log; `tls` and `sasl` (see KafkaSecurityOptions) apply to every connection. */
export interface KafkaLogOptions extends KafkaSecurityOptions {
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
   * The newest record layout this client writes. Default 3: an append that holds checks (see
   * `appendMany`) travels in layout 3, which a client of a version before checks refuses to
   * read. 2, for a rolling upgrade: every record is in layout 2, which such a client reads, and
   * an append's checks are left out of it (written as if it had none, so not decided: a move
   * and a dispatch can then pass each other unseen, as they could before checks). Set while
   * any client of the topic runs an earlier version; then clear it, client by client.
   */
  readonly recordLayout?: 2 | 3;
  /**
   * A file for checkpoints of this client's index of the log. When it holds one that fits the
   * topic, the client starts from it and reads only the topic past it; one that does not fit is
   * refused (the reason goes to `notice`) and the client reads the topic from offset 0. The
   * client writes a checkpoint there every `indexSaveMs` while the log moves on, and when it
   * closes. Default: none (the topic is read from offset 0 each time).
   */
  readonly indexPath?: string;
  /** How often a checkpoint of the index is written while the log moves on. Default 5 min. */
  readonly indexSaveMs?: number;
  /**
   * How many of the newest events the client keeps whole (a following subscription reads
   * them next); older events are read back from the brokers. Default 20,000.
   */
  readonly cacheEvents?: number;
  /** What the client has to say about its checkpoints. Default: a line on stderr. */
  readonly notice?: (level: "info" | "warn", message: string, fields: Record<string, unknown>) => void;
}

/** Room the record framing and headers take beside key and value, in bytes (generous). */
export const RECORD_OVERHEAD = 96;
