import { randomUUID } from "node:crypto";
import net from "node:net";
import {
  AppendOutcomeUnknownError,
  type AppendResult,
  type ExpectedRevision,
  GENESIS_HASH,
  InvalidAppendError,
  type LogBackend,
  LogClosedError,
  type PreparedEvent,
  type PreparedWrite,
  revisionMatches,
  type StoredEvent,
  type StreamRevision,
  storePrepared,
  WrongExpectedRevisionError,
} from "@chronolog/log";
import {
  type Admin,
  type Consumer,
  Kafka,
  type KafkaMessage,
  type LogEntry,
  logLevel,
  Partitioners,
  type Producer,
} from "kafkajs";
import {
  type DecodedAppend,
  decodeRecord,
  type EncodedAppend,
  encodeAppend,
  encodeExpected,
  encodeRecord,
  type WireAppend,
} from "./record.js";

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
}

/** One append (one stream) or one atomic multi-stream append, waiting for its outcome. */
interface PendingAppend {
  readonly id: string;
  readonly writes: readonly PreparedWrite[];
  readonly base: bigint;
  readonly recordedAt: string;
  /** Encoded once, so a copy sent again is the same append. */
  readonly encoded: EncodedAppend;
  readonly bytes: number;
  readonly resolve: (r: AppendResult[]) => void;
  readonly reject: (e: unknown) => void;
  /** Set once the record was acknowledged: the outcome must then arrive within the timeout. */
  timer?: NodeJS.Timeout;
}

interface Waiter {
  readonly ready: () => boolean;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
  readonly timer: NodeJS.Timeout;
}

const LEVELS = { error: logLevel.ERROR, warn: logLevel.WARN, info: logLevel.INFO, debug: logLevel.DEBUG };
const LEVEL_NAMES: Record<number, string> = { 1: "ERROR", 2: "WARN", 4: "INFO", 5: "DEBUG" };
/** Room the record framing and headers take beside key and value, in bytes (generous). */
const RECORD_OVERHEAD = 96;
/** One produce request's records stay under this: the broker's default limit is 1 MiB per batch. */
const SEND_BYTES = 768 * 1024;

/** Kafka errors that no retry can cure: the append fails at once. */
const FATAL = new Set([
  "TOPIC_AUTHORIZATION_FAILED",
  "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
  "CLUSTER_AUTHORIZATION_FAILED",
  "MESSAGE_TOO_LARGE",
  "RECORD_LIST_TOO_LARGE",
  "INVALID_RECORD",
  "UNSUPPORTED_VERSION",
  "UNSUPPORTED_FOR_MESSAGE_FORMAT",
]);

function isFatal(error: unknown): boolean {
  for (let e = error as { type?: string; originalError?: unknown; cause?: unknown } | undefined; e; ) {
    if (e.type && FATAL.has(e.type)) return true;
    e = (e.originalError ?? e.cause) as typeof e;
  }
  return false;
}

/** `"host:port,host:port"` or a list, as the Kafka client takes it. */
export function brokerList(brokers: string | readonly string[]): string[] {
  return typeof brokers === "string"
    ? brokers
        .split(",")
        .map((b) => b.trim())
        .filter(Boolean)
    : [...brokers];
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Every connection with TCP_NODELAY: a request is one small write, and Nagle only delays it. */
function socketFactory({ host, port, onConnect }: { host: string; port: number; onConnect: () => void }) {
  const socket = net.connect({ host, port, noDelay: true }, onConnect);
  socket.setKeepAlive(true, 60_000);
  return socket;
}

/**
 * How many decided appends each reader remembers by id, to recognise a copy of a record that
 * was sent twice (a send retried after its acknowledgement was lost).
 */
const DEDUPE_WINDOW = 200_000;

/**
 * The log in one single-partition Kafka topic, written by any number of clients at once.
 *
 * - The partition's order decides. A writer sends each append as one record that carries the
 *   revision it expects for each stream, not the revision it gets. Every reader (a consumer
 *   in every client) applies the records in offset order and decides each compare-and-set
 *   against the streams as the records before it left them: all writes match, and the append
 *   gets its revisions, dense positions and hash chain; one does not, and the whole record is
 *   refused. Every reader sees the same records in the same order, so every reader makes the
 *   same decisions: the log needs no owner, no lock and no transaction.
 * - A writer learns its outcome from its own reader: an append is acknowledged (or refused
 *   with WrongExpectedRevisionError) once this client has read its record back and decided
 *   it. Sends are pipelined: the next batch goes while earlier ones wait for their outcome.
 * - A record sent twice (a retry after a lost acknowledgement) is decided once: readers
 *   remember the ids of the last DEDUPE_WINDOW records, and a record made before that window
 *   began is refused, so a forgotten copy can never be applied.
 * - Reads ask the partition's end offset and wait until the reader has applied that far, so a
 *   read sees every append that completed before it began, in any process.
 */
export class KafkaBackend implements LogBackend {
  readonly name = "kafka";
  readonly topic: string;
  private readonly kafka: Kafka;
  private admin: Admin;
  private readonly consumer: Consumer;
  private producer: Producer | null = null;
  private readonly disconnecting = new Set<Promise<void>>();

  /** Every accepted event, index = position. */
  private readonly events: StoredEvent[] = [];
  /** Each stream's events, index = revision. */
  private readonly streams = new Map<string, StoredEvent[]>();
  private lastHash = GENESIS_HASH;
  /** The next Kafka offset the reader applies: everything below it is decided. */
  private nextOffset = 0n;
  /** append id -> offset of its record, for the last DEDUPE_WINDOW records decided. */
  private readonly decided = new Map<string, bigint>();
  /** A record made (per its `base`) before this offset may have a forgotten copy: refused. */
  private dedupeFloor = 0n;

  private readonly queue: PendingAppend[] = [];
  /** Appends handed to the writer whose outcome this client's reader has not decided yet. */
  private readonly pending = new Map<string, PendingAppend>();
  private writing = false;
  private writer: Promise<void> = Promise.resolve();
  private readonly waiters = new Set<Waiter>();
  private readonly listeners = new Set<() => void>();
  private failure: Error | null = null;
  private lsoInFlight: Promise<bigint> | null = null;
  private lsoNext: Promise<bigint> | null = null;
  private closing = false;
  private closed = false;

  private readonly maxAppendBytes: number;
  private readonly timeoutMs: number;
  private readonly appendTimeoutMs: number;

  /** Produce requests this client made, records they carried, records of any client refused. */
  private readonly counts = { sends: 0, records: 0, refused: 0, duplicates: 0 };

  private constructor(readonly options: KafkaLogOptions) {
    this.topic = options.topic;
    this.maxAppendBytes = options.maxAppendBytes ?? 1_000_000 - RECORD_OVERHEAD;
    this.timeoutMs = options.requestTimeoutMs ?? 30_000;
    this.appendTimeoutMs = options.appendTimeoutMs ?? 45_000;
    this.kafka = new Kafka({
      clientId: options.clientId ?? "chronolog",
      brokers: brokerList(options.brokers),
      socketFactory,
      connectionTimeout: 3000,
      requestTimeout: this.timeoutMs,
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
    this.admin = this.kafka.admin();
    this.consumer = this.kafka.consumer({
      groupId: `chronolog.${options.topic}.follower.${randomUUID()}`,
      minBytes: options.fetch?.minBytes ?? 1,
      maxWaitTimeInMs: options.fetch?.maxWaitMs ?? 500,
      maxBytesPerPartition: 16 * 1024 * 1024,
      maxBytes: 32 * 1024 * 1024,
      allowAutoTopicCreation: false,
      retry: { initialRetryTime: 50, maxRetryTime: 2000, retries: 10 },
    });
  }

  /** Connects, creates the topic if needed and reads the log to its end. */
  static async open(options: KafkaLogOptions): Promise<KafkaBackend> {
    const backend = new KafkaBackend(options);
    try {
      await backend.start();
    } catch (error) {
      await backend.close().catch(() => {});
      throw error;
    }
    return backend;
  }

  private async start(): Promise<void> {
    await this.admin.connect();
    if (this.options.createTopic ?? true) {
      await this.admin.createTopics({
        waitForLeaders: true,
        topics: [
          {
            topic: this.topic,
            numPartitions: 1,
            replicationFactor: this.options.replicationFactor ?? -1,
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
    const metadata = await this.admin.fetchTopicMetadata({ topics: [this.topic] });
    const partitions = metadata.topics[0]?.partitions.length ?? 0;
    if (partitions !== 1) {
      throw new Error(
        `topic ${this.topic} has ${partitions} partitions: this log keeps one total order in one partition`,
      );
    }
    await this.startFollower();
    await this.sync();
  }

  private async startFollower(): Promise<void> {
    const c = this.consumer;
    c.on(c.events.END_BATCH_PROCESS, (e) => {
      this.advance(BigInt(e.payload.lastOffset) + 1n);
    });
    c.on(c.events.GROUP_JOIN, () => {
      // After a rebalance the consumer would start over from the beginning: skip what is applied.
      if (this.nextOffset > 0n)
        c.seek({ topic: this.topic, partition: 0, offset: this.nextOffset.toString() });
    });
    c.on(c.events.CRASH, (e) => {
      if (!e.payload.restart && !this.closing) this.fail(e.payload.error);
    });
    await c.connect();
    await c.subscribe({ topics: [this.topic], fromBeginning: true });
    await c.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (this.failure) return;
        try {
          this.apply(batch.messages, BigInt(batch.lastOffset()) + 1n);
        } catch (error) {
          this.fail(error as Error);
        }
      },
    });
  }

  /** Decides records in offset order. */
  private apply(messages: readonly KafkaMessage[], next: bigint): void {
    const before = this.events.length;
    for (const m of messages) {
      const offset = BigInt(m.offset);
      if (offset < this.nextOffset) continue;
      // This client's own record: its appends are still in memory, parsed data and all, so
      // the record need not be decoded (the header names them; the value holds the same).
      const header = m.headers?.ids;
      const ids = header ? header.toString().split(",") : [];
      const own = ids.map((id) => this.pending.get(id));
      const appends =
        ids.length > 0 && own.every((p) => p !== undefined)
          ? own.map((p) => this.ownAppend(p as PendingAppend))
          : decodeRecord(m.value, m.offset);
      for (const a of appends) this.decide(a, offset);
      this.nextOffset = offset + 1n;
    }
    this.advance(next);
    if (this.events.length > before) this.notify();
  }

  private ownAppend(p: PendingAppend): DecodedAppend {
    return {
      id: p.id,
      base: p.base,
      recordedAt: p.recordedAt,
      writes: p.writes.map((w) => ({ stream: w.streamId, expected: w.expected, events: w.events })),
    };
  }

  /** The compare-and-set every reader makes the same way for the record at `offset`. */
  private decide(a: DecodedAppend, offset: bigint): void {
    if (this.decided.has(a.id)) {
      this.counts.duplicates += 1; // a copy of a record already decided
      return;
    }
    this.decided.set(a.id, offset);
    if (this.decided.size > DEDUPE_WINDOW) {
      const [oldest, at] = this.decided.entries().next().value as [string, bigint];
      this.decided.delete(oldest);
      this.dedupeFloor = at + 1n;
    }
    const p = this.pending.get(a.id);
    if (a.base < this.dedupeFloor) {
      this.counts.refused += 1;
      if (p) {
        this.settle(p, {
          error: new Error(
            `kafka log ${this.topic}: the append was made at offset ${a.base}, too long before it reached the log (offset ${offset}) to rule out a copy of it`,
          ),
        });
      }
      return;
    }
    const local = new Map<string, StreamRevision>();
    for (const w of a.writes) {
      const actual = local.get(w.stream) ?? this.currentRevision(w.stream);
      if (!revisionMatches(w.expected, actual)) {
        this.counts.refused += 1;
        if (p) this.settle(p, { error: new WrongExpectedRevisionError(w.stream, w.expected, actual) });
        return;
      }
      local.set(w.stream, (actual === "no_stream" ? -1n : actual) + BigInt(w.events.length));
    }
    const results: AppendResult[] = [];
    for (const w of a.writes) {
      let stream = this.streams.get(w.stream);
      if (!stream) {
        stream = [];
        this.streams.set(w.stream, stream);
      }
      let last: StoredEvent | undefined;
      for (const e of w.events) {
        const stored = storePrepared(this.lastHash, e, {
          streamId: w.stream,
          revision: BigInt(stream.length),
          position: BigInt(this.events.length),
          recordedAt: a.recordedAt,
        });
        this.events.push(stored);
        stream.push(stored);
        this.lastHash = stored.metadata.hash;
        last = stored;
      }
      if (last) results.push({ nextExpectedRevision: last.revision, position: last.position });
    }
    if (p) this.settle(p, { results });
  }

  private settle(p: PendingAppend, outcome: { results: AppendResult[] } | { error: unknown }): void {
    if (this.pending.get(p.id) !== p) return;
    this.pending.delete(p.id);
    if (p.timer) clearTimeout(p.timer);
    if ("results" in outcome) p.resolve(outcome.results);
    else p.reject(outcome.error);
  }

  private advance(next: bigint): void {
    if (next > this.nextOffset) this.nextOffset = next;
    for (const w of this.waiters) {
      if (w.ready()) {
        clearTimeout(w.timer);
        this.waiters.delete(w);
        w.resolve();
      }
    }
  }

  private waitFor(ready: () => boolean, what: string): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (ready()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = {
        ready,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(w);
          reject(new Error(`kafka log ${this.topic}: timed out waiting for ${what}`));
        }, this.timeoutMs),
      };
      this.waiters.add(w);
    });
  }

  /**
   * The partition's end offset. A call made while a request is out waits for the next one
   * (which starts after the call did), so concurrent readers share requests without ever
   * getting an answer older than their call.
   */
  private lastStableOffset(): Promise<bigint> {
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

  private async fetchLastStableOffset(): Promise<bigint> {
    const deadline = performance.now() + this.timeoutMs;
    for (let attempt = 1; ; attempt++) {
      try {
        const offsets = await this.admin.fetchTopicOffsets(this.topic);
        const p = offsets.find((o) => o.partition === 0);
        if (!p) throw new Error(`kafka log ${this.topic}: partition 0 not found`);
        return BigInt(p.offset);
      } catch (error) {
        if (this.closing || performance.now() > deadline) throw error;
        // A broker died or leadership moved: the admin client may keep asking the dead one,
        // so after a failure a new client starts again from the bootstrap brokers.
        if (attempt > 1) await this.renewAdmin();
        await sleep(Math.min(500, 10 * 2 ** attempt));
      }
    }
  }

  private async renewAdmin(): Promise<void> {
    const old = this.admin;
    this.admin = this.kafka.admin();
    void old.disconnect().catch(() => {});
    await this.admin.connect().catch(() => {});
  }

  /** Returns once this client has decided every record written before the call. */
  private async sync(): Promise<void> {
    const target = await this.lastStableOffset();
    await this.waitFor(() => this.nextOffset >= target, `the log to be read up to offset ${target}`);
  }

  private async ready(): Promise<void> {
    if (this.closing) throw new LogClosedError();
    if (this.failure) throw this.failure;
    await this.sync();
  }

  async append(
    streamId: string,
    events: readonly PreparedEvent[],
    expected: ExpectedRevision,
  ): Promise<AppendResult> {
    const [result] = await this.enqueue([{ streamId, events, expected }]);
    return result as AppendResult;
  }

  /** Appends to several streams in one record: all of them, or on one conflict none. */
  appendMany(writes: readonly PreparedWrite[]): Promise<AppendResult[]> {
    return this.enqueue(writes);
  }

  private enqueue(writes: readonly PreparedWrite[]): Promise<AppendResult[]> {
    if (this.closing) return Promise.reject(new LogClosedError());
    if (this.failure) return Promise.reject(this.failure);
    if (writes.length === 0 || writes.some((w) => w.events.length === 0)) {
      return Promise.reject(new InvalidAppendError("an append needs at least one event"));
    }
    const id = randomUUID();
    const base = this.nextOffset;
    const recordedAt = new Date().toISOString();
    const wire: WireAppend = {
      v: 2,
      id,
      base: base.toString(),
      recordedAt,
      writes: writes.map((w) => ({
        stream: w.streamId,
        expected: encodeExpected(w.expected),
        events: w.events.map((e) => ({
          eventId: e.eventId,
          type: e.type,
          dataJson: e.dataJson,
          schemaVersion: e.schemaVersion,
          actor: e.actor,
          causationId: e.causationId,
          correlationId: e.correlationId,
        })),
      })),
    };
    const encoded = encodeAppend(wire);
    const bytes = Buffer.byteLength(encoded.head) + Buffer.byteLength(encoded.data) + RECORD_OVERHEAD;
    if (bytes > this.maxAppendBytes) {
      return Promise.reject(
        new InvalidAppendError(
          `an append of ${bytes} bytes exceeds the Kafka log's limit of ${this.maxAppendBytes} bytes per append`,
        ),
      );
    }
    return new Promise<AppendResult[]>((resolve, reject) => {
      this.queue.push({ id, writes, base, recordedAt, encoded, bytes, resolve, reject });
      if (!this.writing) {
        this.writing = true;
        this.writer = this.writeLoop();
      }
    });
  }

  /**
   * Sends queued appends, as many as fit one produce request at a time, without waiting for
   * their outcomes (the reader settles them). `writing` is cleared in the same synchronous
   * step that finds the queue empty, so an append queued at any moment is either taken by this
   * loop or starts the next.
   */
  private async writeLoop(): Promise<void> {
    try {
      // Let appends made in the same tick join the first request.
      await new Promise((r) => setImmediate(r));
      while (this.queue.length > 0) {
        let bytes = 0;
        let take = 0;
        while (
          take < this.queue.length &&
          (take === 0 || bytes + (this.queue[take]?.bytes ?? 0) <= SEND_BYTES)
        ) {
          bytes += this.queue[take]?.bytes ?? 0;
          take += 1;
        }
        await this.send(this.queue.splice(0, take));
      }
    } catch (error) {
      // Not expected (send settles what it cannot write): fail what waits rather than hang.
      for (const p of this.queue.splice(0)) p.reject(error);
    } finally {
      this.writing = false;
    }
  }

  /**
   * Sends one batch of records, retrying through failures until `appendTimeoutMs`. A record
   * whose send failed may still have been written: it stays pending, so that if the reader
   * meets it the append is settled by the log's decision; a copy sent again is recognised.
   */
  private async send(batch: PendingAppend[]): Promise<void> {
    for (const p of batch) this.pending.set(p.id, p);
    let lastError: unknown = null;
    const deadline = performance.now() + this.appendTimeoutMs;
    for (let attempt = 1; ; attempt++) {
      const left = batch.filter((p) => this.pending.get(p.id) === p);
      if (left.length === 0) return;
      if (this.failure || (attempt > 1 && (performance.now() > deadline || isFatal(lastError)))) {
        const error =
          this.failure ??
          new AppendOutcomeUnknownError(
            `kafka log ${this.topic}: the append could not be written (it may yet appear in the log): ${
              (lastError as Error)?.message ?? lastError
            }`,
            { cause: lastError },
          );
        for (const p of left) this.settle(p, { error });
        return;
      }
      try {
        const producer = await this.getProducer();
        await producer.send({
          topic: this.topic,
          acks: -1,
          timeout: this.timeoutMs,
          // One record for the whole request: the broker and both clients handle one record
          // instead of hundreds (each append in it is still decided, and deduplicated, alone).
          messages: [
            {
              key: left[0]?.writes[0]?.streamId ?? null,
              value: encodeRecord(left.map((p) => p.encoded)),
              partition: 0,
              headers: { ids: left.map((p) => p.id).join(",") },
            },
          ],
        });
        this.counts.sends += 1;
        this.counts.records += left.length;
        for (const p of left) {
          if (this.pending.get(p.id) !== p) continue;
          p.timer = setTimeout(() => {
            this.settle(p, {
              error: new AppendOutcomeUnknownError(
                `kafka log ${this.topic}: timed out waiting for an append to be read back (it may yet appear in the log)`,
              ),
            });
          }, this.timeoutMs);
        }
        return;
      } catch (error) {
        lastError = error;
        this.dropProducer();
        const backoff = Math.min(500, 8 * 2 ** attempt);
        await sleep(backoff / 2 + Math.random() * backoff);
      }
    }
  }

  private async getProducer(): Promise<Producer> {
    if (this.producer) return this.producer;
    const producer = this.kafka.producer({
      // Idempotent: the broker drops a batch this producer sends again after a lost response,
      // and keeps its batches in order.
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      // Every record names its partition; this only keeps the client from warning.
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { initialRetryTime: 10, maxRetryTime: 500, retries: 10 },
    });
    this.producer = producer;
    await producer.connect();
    return producer;
  }

  private dropProducer(): void {
    const p = this.producer;
    this.producer = null;
    if (!p) return;
    const done = p.disconnect().catch(() => {});
    this.disconnecting.add(done);
    void done.finally(() => this.disconnecting.delete(done));
  }

  private currentRevision(streamId: string): StreamRevision {
    const n = this.streams.get(streamId)?.length ?? 0;
    return n === 0 ? "no_stream" : BigInt(n - 1);
  }

  async readStream(streamId: string, fromRevision: bigint, maxCount: number): Promise<StoredEvent[]> {
    await this.ready();
    const stream = this.streams.get(streamId);
    if (!stream || fromRevision >= BigInt(stream.length)) return [];
    const from = Number(fromRevision < 0n ? 0n : fromRevision);
    return stream.slice(from, from + maxCount);
  }

  async readAll(fromPosition: bigint, maxCount: number): Promise<StoredEvent[]> {
    await this.ready();
    return this.readAllSeen(fromPosition, maxCount);
  }

  /** What this client has read so far: a subscription is woken (`watch`) as it reads more. */
  async readAllSeen(fromPosition: bigint, maxCount: number): Promise<StoredEvent[]> {
    if (this.closing) throw new LogClosedError();
    if (this.failure) throw this.failure;
    if (fromPosition >= BigInt(this.events.length)) return [];
    const from = Number(fromPosition < 0n ? 0n : fromPosition);
    return this.events.slice(from, from + maxCount);
  }

  async streamRevision(streamId: string): Promise<StreamRevision> {
    await this.ready();
    return this.currentRevision(streamId);
  }

  async headPosition(): Promise<bigint> {
    await this.ready();
    return BigInt(this.events.length) - 1n;
  }

  watch(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    for (const l of this.listeners) {
      try {
        l();
      } catch {
        // a listener's failure is its own
      }
    }
  }

  /** The log cannot be trusted any more (a foreign record, a dead consumer): refuse everything. */
  private fail(error: Error): void {
    if (this.failure) return;
    // Marked permanent: a subscription does not retry reads of a log in this state.
    this.failure = Object.assign(error, { permanent: true });
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(error);
    }
    this.waiters.clear();
    for (const p of [...this.pending.values()]) this.settle(p, { error });
    this.notify();
  }

  /** Counts, for benchmarks and tests. */
  stats(): {
    events: number;
    streams: number;
    sends: number;
    records: number;
    refused: number;
    duplicates: number;
    offset: bigint;
  } {
    return {
      events: this.events.length,
      streams: this.streams.size,
      ...this.counts,
      offset: this.nextOffset,
    };
  }

  /** Finishes the appends already queued (until their outcome is known), then disconnects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closing = true;
    while (this.writing) await this.writer;
    if (this.pending.size > 0 && !this.failure) {
      await this.waitFor(() => this.pending.size === 0, "appends to be read back").catch(() => {});
    }
    this.closed = true;
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new LogClosedError());
    }
    this.waiters.clear();
    for (const p of [...this.pending.values()]) this.settle(p, { error: new LogClosedError() });
    this.listeners.clear();
    const producer = this.producer;
    this.producer = null;
    await Promise.allSettled([
      this.consumer.disconnect(),
      producer?.disconnect(),
      this.admin.disconnect(),
      ...this.disconnecting,
    ]);
  }
}
