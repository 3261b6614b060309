import { randomUUID } from "node:crypto";
import net from "node:net";
import {
  type AppendResult,
  type ExpectedRevision,
  GENESIS_HASH,
  hashPrepared,
  InvalidAppendError,
  type LogBackend,
  LogClosedError,
  type PreparedEvent,
  type PreparedWrite,
  revisionMatches,
  type StoredEvent,
  type StreamRevision,
  WrongExpectedRevisionError,
} from "@chronolog/log";
import {
  type Admin,
  type Consumer,
  Kafka,
  type KafkaMessage,
  type LogEntry,
  logLevel,
  type Message,
  Partitioners,
  type Producer,
  type Transaction,
} from "kafkajs";
import { decodeEvent, encodeEvent, ForeignRecordError } from "./record.js";

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
  /** Most events one Kafka transaction carries (appends queued together share one). Default 5,000. */
  readonly maxBatchEvents?: number;
  /** Largest record one event may make, in bytes (the topic's max.message.bytes must allow it). */
  readonly maxEventBytes?: number;
  /** How long one request, or a wait for the log to catch up, may take. Default 30 s. */
  readonly requestTimeoutMs?: number;
  /**
   * How long an append keeps being retried when ownership is lost or the cluster fails (a
   * broker's death is noticed after its session timeout, 9 s by default). Default 45 s.
   */
  readonly appendTimeoutMs?: number;
  /** The Kafka client's own log lines, on stderr. Default: none. */
  readonly logLevel?: "error" | "warn" | "info" | "debug";
}

/** One append (one stream) or one atomic multi-stream append, waiting for the writer. */
interface PendingAppend {
  readonly writes: readonly PreparedWrite[];
  readonly events: number;
  readonly resolve: (r: AppendResult[]) => void;
  readonly reject: (e: unknown) => void;
  /**
   * Where an attempt whose outcome is unknown put this append's first event. Once this
   * client owns the partition again and has read it to the end, that position tells.
   */
  tried?: bigint;
}

interface Plan {
  /** Appends this transaction writes, with the results each gets once it commits. */
  readonly accepted: Array<{ readonly p: PendingAppend; readonly results: AppendResult[] }>;
  /** Appends an earlier attempt already committed. */
  readonly done: Array<{ readonly p: PendingAppend; readonly results: AppendResult[] }>;
  readonly refused: Array<{ readonly p: PendingAppend; readonly error: Error }>;
  /** The records, in sends that each stay under the broker's batch size limit. */
  readonly sends: Message[][];
  readonly lastPosition: bigint;
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

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Every connection with TCP_NODELAY: a request is one small write, and Nagle only delays it. */
function socketFactory({ host, port, onConnect }: { host: string; port: number; onConnect: () => void }) {
  const socket = net.connect({ host, port, noDelay: true }, onConnect);
  socket.setKeepAlive(true, 60_000);
  return socket;
}

/**
 * The log in one single-partition Kafka topic.
 *
 * - Ownership: every client that appends uses the same transactional id, derived from the
 *   topic and partition. Initialising it fences every earlier producer of that id, so at most
 *   one client can commit to the partition at a time; a client that was fenced finds out when
 *   its transaction fails, takes ownership back (fencing the other) and reads to the end
 *   before it decides again.
 * - Knowledge: a follower (a read_committed consumer) applies every committed record to an
 *   in-memory index: events by position, events by stream. An owner decides a compare-and-set
 *   on that index; the commit succeeding proves no other client wrote since this client took
 *   ownership and caught up, so the decision was made on the whole log.
 * - Positions are dense (0, 1, 2, ...) and assigned by the owner, carried in each record and
 *   covered by the hash chain; Kafka offsets (which control records and aborted transactions
 *   also use) stay internal.
 * - Reads ask the partition's last stable offset and wait until the follower has read that
 *   far, so a read sees every append that completed before it began, in any process.
 */
export class KafkaBackend implements LogBackend {
  readonly name = "kafka";
  readonly topic: string;
  readonly transactionalId: string;
  private readonly kafka: Kafka;
  private readonly admin: Admin;
  private readonly consumer: Consumer;
  private producer: Producer | null = null;
  private readonly disconnecting = new Set<Promise<void>>();

  /** Every committed event, index = position. */
  private readonly events: StoredEvent[] = [];
  /** Each stream's events, index = revision. */
  private readonly streams = new Map<string, StoredEvent[]>();
  private lastHash = GENESIS_HASH;
  /** The next Kafka offset the follower reads: everything below it is applied. */
  private nextOffset = 0n;

  private readonly queue: PendingAppend[] = [];
  private writing = false;
  private writer: Promise<void> = Promise.resolve();
  private readonly waiters = new Set<Waiter>();
  private readonly listeners = new Set<() => void>();
  private failure: Error | null = null;
  private lsoInFlight: Promise<bigint> | null = null;
  private lsoNext: Promise<bigint> | null = null;
  private closing = false;
  private closed = false;

  private readonly maxBatchEvents: number;
  private readonly maxEventBytes: number;
  private readonly timeoutMs: number;
  private readonly appendTimeoutMs: number;

  /** Transactions this client committed. */
  transactions = 0;
  /** Times this client took ownership of the partition (each fenced the former owner). */
  ownerships = 0;

  private constructor(readonly options: KafkaLogOptions) {
    this.topic = options.topic;
    this.transactionalId = `chronolog.${options.topic}.0`;
    this.maxBatchEvents = options.maxBatchEvents ?? 5000;
    this.maxEventBytes = options.maxEventBytes ?? 1_000_000 - RECORD_OVERHEAD;
    this.timeoutMs = options.requestTimeoutMs ?? 30_000;
    this.appendTimeoutMs = options.appendTimeoutMs ?? 45_000;
    const brokers =
      typeof options.brokers === "string"
        ? options.brokers
            .split(",")
            .map((b) => b.trim())
            .filter(Boolean)
        : [...options.brokers];
    this.kafka = new Kafka({
      clientId: options.clientId ?? "chronolog",
      brokers,
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
      maxWaitTimeInMs: 500,
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
      // Also reported for fetches that held only control records or aborted transactions.
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

  /** Applies committed records in offset order. */
  private apply(messages: readonly KafkaMessage[], next: bigint): void {
    let added = false;
    for (const m of messages) {
      const offset = BigInt(m.offset);
      if (offset < this.nextOffset) continue;
      const e = decodeEvent(m.value, m.offset);
      const position = BigInt(this.events.length);
      if (e.position !== position) {
        throw new ForeignRecordError(m.offset, `position ${e.position} where ${position} comes next`);
      }
      let stream = this.streams.get(e.streamId);
      if (!stream) {
        stream = [];
        this.streams.set(e.streamId, stream);
      }
      if (e.revision !== BigInt(stream.length)) {
        throw new ForeignRecordError(m.offset, `revision ${e.revision} where ${stream.length} comes next`);
      }
      this.events.push(e);
      stream.push(e);
      this.lastHash = e.metadata.hash;
      this.nextOffset = offset + 1n;
      added = true;
    }
    this.advance(next);
    if (added) this.notify();
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
   * The partition's last stable offset: everything below it is committed or aborted. A call
   * made while a request is out waits for the next one (which starts after the call did), so
   * concurrent readers share requests without ever getting an answer older than their call.
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
    for (let attempt = 1; ; attempt++) {
      try {
        // ListOffsets with isolation read_committed answers the last stable offset.
        const offsets = await this.admin.fetchTopicOffsets(this.topic);
        const p = offsets.find((o) => o.partition === 0);
        if (!p) throw new Error(`kafka log ${this.topic}: partition 0 not found`);
        return BigInt(p.offset);
      } catch (error) {
        // e.g. "topic metadata not loaded" while the client refreshes its metadata
        if ((error as { retriable?: boolean }).retriable !== true || attempt >= 10) throw error;
        await sleep(10 * attempt);
      }
    }
  }

  /** Returns once this client has applied every transaction completed before the call. */
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

  /** Appends to several streams in one transaction: all of them, or on one conflict none. */
  appendMany(writes: readonly PreparedWrite[]): Promise<AppendResult[]> {
    return this.enqueue(writes);
  }

  private enqueue(writes: readonly PreparedWrite[]): Promise<AppendResult[]> {
    if (this.closing) return Promise.reject(new LogClosedError());
    if (this.failure) return Promise.reject(this.failure);
    const events = writes.reduce((n, w) => n + w.events.length, 0);
    if (events === 0) return Promise.reject(new InvalidAppendError("an append needs at least one event"));
    return new Promise<AppendResult[]>((resolve, reject) => {
      this.queue.push({ writes, events, resolve, reject });
      if (!this.writing) {
        this.writing = true;
        this.writer = this.writeLoop();
      }
    });
  }

  /**
   * Writes queued appends, as many as fit one transaction at a time. `writing` is cleared in
   * the same synchronous step that finds the queue empty, so an append queued at any moment
   * is either taken by this loop or starts the next.
   */
  private async writeLoop(): Promise<void> {
    try {
      // Let appends made in the same tick join the first transaction.
      await new Promise((r) => setImmediate(r));
      while (this.queue.length > 0) {
        let count = 0;
        let take = 0;
        while (
          take < this.queue.length &&
          (take === 0 || count + (this.queue[take]?.events ?? 0) <= this.maxBatchEvents)
        ) {
          count += this.queue[take]?.events ?? 0;
          take += 1;
        }
        await this.writeBatch(this.queue.splice(0, take));
      }
    } catch (error) {
      // Not expected (writeBatch settles its appends itself): fail what waits rather than hang.
      for (const p of this.queue.splice(0)) p.reject(error);
    } finally {
      this.writing = false;
    }
  }

  /** Decides and commits one batch of appends; settles every one of them. */
  private async writeBatch(batch: PendingAppend[]): Promise<void> {
    let lastError: unknown = null;
    const deadline = performance.now() + this.appendTimeoutMs;
    for (let attempt = 1; ; attempt++) {
      if (this.failure || (attempt > 1 && (performance.now() > deadline || isFatal(lastError)))) {
        const error = this.failure ?? lastError;
        for (const p of batch) p.reject(error);
        return;
      }
      try {
        const owner = await this.acquire();
        let plan = this.plan(batch);
        if (plan.accepted.length === 0 && plan.refused.length > 0 && !owner.fresh) {
          // A refusal that no commit will confirm must rest on a fresh read.
          await this.sync();
          plan = this.plan(batch);
        }
        if (plan.accepted.length > 0) {
          for (const messages of plan.sends) {
            await owner.tx.send({ topic: this.topic, acks: -1, timeout: this.timeoutMs, messages });
          }
          await owner.tx.commit();
          this.transactions += 1;
          // Visible to this client's follower, hence past the last stable offset for every reader.
          await this.waitFor(
            () => BigInt(this.events.length) > plan.lastPosition,
            `position ${plan.lastPosition} to be read back`,
          );
        } else {
          await owner.tx.abort(); // nothing was added: ends the transaction locally
        }
        for (const { p, results } of plan.done) p.resolve(results);
        for (const { p, results } of plan.accepted) p.resolve(results);
        for (const { p, error } of plan.refused) p.reject(error);
        return;
      } catch (error) {
        // Fenced by another client, or the cluster failed: the transaction may or may not have
        // committed. Drop the producer; the next attempt takes ownership back and reads the
        // partition to its end, which settles it (see `tried`).
        lastError = error;
        this.dropProducer();
        const backoff = Math.min(500, 8 * 2 ** attempt);
        await sleep(backoff / 2 + Math.random() * backoff);
      }
    }
  }

  /**
   * Becomes the partition's writer if not already: a new transactional producer whose
   * initialisation fences every former one (and aborts its open transaction), then reads the
   * partition to its end. Returns a transaction begun.
   */
  private async acquire(): Promise<{ tx: Transaction; fresh: boolean }> {
    if (this.producer) return { tx: await this.producer.transaction(), fresh: false };
    const producer = this.kafka.producer({
      transactionalId: this.transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: Math.max(this.timeoutMs, 10_000),
      allowAutoTopicCreation: false,
      // Every record names its partition; this only keeps the client from warning.
      createPartitioner: Partitioners.DefaultPartitioner,
      // Few retries on purpose: on any failure the producer is dropped and the append retried
      // by a new owner that first reads the partition to its end (see writeBatch).
      retry: { initialRetryTime: 10, maxRetryTime: 500, retries: 10 },
    });
    this.producer = producer;
    await producer.connect();
    const tx = await producer.transaction();
    this.ownerships += 1;
    await this.sync();
    return { tx, fresh: true };
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

  /** The results an append that committed at `position` got, read back from the index. */
  private committedAt(p: PendingAppend, position: bigint): AppendResult[] | null {
    const first = this.events[Number(position)];
    const w0 = p.writes[0] as PreparedWrite;
    if (
      first?.metadata.eventId !== (w0.events[0] as PreparedEvent).eventId ||
      first.streamId !== w0.streamId
    ) {
      return null;
    }
    const results: AppendResult[] = [];
    let at = Number(position);
    for (const w of p.writes) {
      at += w.events.length;
      const last = this.events[at - 1] as StoredEvent;
      results.push({ nextExpectedRevision: last.revision, position: last.position });
    }
    return results;
  }

  /**
   * Checks each append against the index (and the appends before it in this batch) and builds
   * the records of those that pass, with positions, revisions and the hash chain continued.
   */
  private plan(batch: readonly PendingAppend[]): Plan {
    const accepted: Plan["accepted"] = [];
    const done: Plan["done"] = [];
    const refused: Plan["refused"] = [];
    const sends: Message[][] = [];
    let send: Message[] = [];
    let sendBytes = 0;
    let position = BigInt(this.events.length);
    let prevHash = this.lastHash;
    /** Stream revisions as the appends accepted so far in this batch leave them. */
    const revisions = new Map<string, StreamRevision>();
    const revisionOf = (streamId: string, local: Map<string, StreamRevision>) =>
      local.get(streamId) ?? revisions.get(streamId) ?? this.currentRevision(streamId);
    const recordedAt = new Date().toISOString();
    for (const p of batch) {
      const committed = p.tried === undefined ? null : this.committedAt(p, p.tried);
      if (committed) {
        done.push({ p, results: committed });
        continue;
      }
      // Every write's expected revision first: one conflict refuses the whole append.
      const local = new Map<string, StreamRevision>();
      let conflict: Error | null = null;
      for (const w of p.writes) {
        const actual = revisionOf(w.streamId, local);
        if (!revisionMatches(w.expected, actual)) {
          conflict = new WrongExpectedRevisionError(w.streamId, w.expected, actual);
          break;
        }
        local.set(w.streamId, (actual === "no_stream" ? -1n : actual) + BigInt(w.events.length));
      }
      if (conflict) {
        refused.push({ p, error: conflict });
        continue;
      }
      const records: Message[] = [];
      const results: AppendResult[] = [];
      const after = new Map<string, StreamRevision>();
      let at = position;
      let hash = prevHash;
      let tooLarge = 0;
      for (const w of p.writes) {
        const actual = revisionOf(w.streamId, after);
        let revision = actual === "no_stream" ? -1n : actual;
        for (const e of w.events) {
          revision += 1n;
          const next = hashPrepared(hash, e, { streamId: w.streamId, revision, position: at, recordedAt });
          const value = encodeEvent({
            streamId: w.streamId,
            revision,
            position: at,
            type: e.type,
            dataJson: e.dataJson,
            metadata: {
              eventId: e.eventId,
              actor: e.actor,
              causationId: e.causationId,
              correlationId: e.correlationId,
              schemaVersion: e.schemaVersion,
              recordedAt,
              prevHash: hash,
              hash: next,
            },
          });
          const size = Buffer.byteLength(value) + Buffer.byteLength(w.streamId) + RECORD_OVERHEAD;
          if (size > this.maxEventBytes) tooLarge = Math.max(tooLarge, size);
          records.push({ key: w.streamId, value, partition: 0 });
          hash = next;
          at += 1n;
        }
        after.set(w.streamId, revision);
        results.push({ nextExpectedRevision: revision, position: at - 1n });
      }
      if (tooLarge > 0) {
        refused.push({
          p,
          error: new InvalidAppendError(
            `an event of ${tooLarge} bytes exceeds the Kafka log's limit of ${this.maxEventBytes} bytes per event`,
          ),
        });
        continue;
      }
      p.tried = position;
      for (const r of records) {
        const size = Buffer.byteLength(r.value as string) + RECORD_OVERHEAD;
        if (send.length > 0 && sendBytes + size > SEND_BYTES) {
          sends.push(send);
          send = [];
          sendBytes = 0;
        }
        send.push(r);
        sendBytes += size;
      }
      for (const [streamId, revision] of after) revisions.set(streamId, revision);
      position = at;
      prevHash = hash;
      accepted.push({ p, results });
    }
    if (send.length > 0) sends.push(send);
    return { accepted, done, refused, sends, lastPosition: position - 1n };
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
    this.failure = error;
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(error);
    }
    this.waiters.clear();
    this.notify();
  }

  /** Counts, for `chronolog log stats` and benchmarks. */
  stats(): { events: number; streams: number; transactions: number; ownerships: number; offset: bigint } {
    return {
      events: this.events.length,
      streams: this.streams.size,
      transactions: this.transactions,
      ownerships: this.ownerships,
      offset: this.nextOffset,
    };
  }

  /** Finishes the appends already queued, then disconnects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closing = true;
    while (this.writing) await this.writer;
    this.closed = true;
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new LogClosedError());
    }
    this.waiters.clear();
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
