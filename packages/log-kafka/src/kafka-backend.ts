import {
  type AppendResult,
  type ExpectedRevision,
  type LogBackend,
  LogClosedError,
  type PreparedEvent,
  type PreparedWrite,
  type StoredEvent,
  type StreamRevision,
} from "@chronolog/log";
import { BodyCache, DEFAULT_CACHE_EVENTS } from "./body-cache.js";
import { IndexCheckpoints, stderrNotice } from "./checkpoints.js";
import { brokerList, createKafka, TopicAdmin } from "./client.js";
import { EventReader } from "./event-reader.js";
import { Follower } from "./follower.js";
import { type KafkaLogOptions, RECORD_OVERHEAD } from "./options.js";
import { RECORD_LAYOUT_VERSION, RECORD_LAYOUT_WITH_CHECKS } from "./record.js";
import { DEDUPE_WINDOW, RecordDecider } from "./record-decider.js";
import { RecordFetcher } from "./record-fetcher.js";
import { checkTls, clearKafkaError, connectionSettings } from "./security.js";
import { AppendWriter } from "./writer.js";

export { brokerList } from "./client.js";
export type { KafkaLogOptions } from "./options.js";

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
 * - A client keeps an index of the log, not the log: where each stream's events are, which
 *   record holds which positions, the hash chain's head, and the newest events whole. An older
 *   event is read back from the brokers by its record's offset and made again exactly as it
 *   was decided. A checkpoint of the index (`indexPath`) lets a new client read only the topic
 *   past it.
 *
 * This class puts the parts together: the admin client (TopicAdmin), the writer
 * (AppendWriter), the follower that reads the topic (Follower), the decider that keeps the
 * index and decides each record (RecordDecider), the reader of older events (EventReader over
 * a RecordFetcher) and the checkpoints (IndexCheckpoints).
 */
export class KafkaBackend implements LogBackend {
  readonly name = "kafka";
  readonly topic: string;
  private readonly admin: TopicAdmin;
  private readonly decider: RecordDecider;
  private readonly writer: AppendWriter;
  private readonly follower: Follower;
  private readonly fetcher: RecordFetcher;
  private readonly reader: EventReader;
  private readonly checkpoints: IndexCheckpoints | null;
  private closing = false;
  private closed = false;

  private constructor(readonly options: KafkaLogOptions) {
    this.topic = options.topic;
    const timeoutMs = options.requestTimeoutMs ?? 30_000;
    const closing = () => this.closing;
    const kafka = createKafka(options, timeoutMs);
    this.admin = new TopicAdmin(kafka, this.topic, timeoutMs, closing);
    this.decider = new RecordDecider(
      DEDUPE_WINDOW,
      new BodyCache(options.cacheEvents ?? DEFAULT_CACHE_EVENTS),
    );
    this.fetcher = new RecordFetcher(kafka, this.topic, timeoutMs, closing);
    this.reader = new EventReader(() => this.decider.index, this.decider.cache, this.fetcher);
    this.checkpoints = options.indexPath
      ? new IndexCheckpoints({
          path: options.indexPath,
          topic: this.topic,
          decider: this.decider,
          offsets: () => this.admin.offsets(),
          source: this.fetcher,
          notice: options.notice ?? stderrNotice,
          saveMs: options.indexSaveMs ?? 300_000,
        })
      : null;
    this.writer = new AppendWriter(kafka, {
      topic: this.topic,
      maxAppendBytes: options.maxAppendBytes ?? 1_000_000 - RECORD_OVERHEAD,
      timeoutMs,
      appendTimeoutMs: options.appendTimeoutMs ?? 45_000,
      failure: () => this.follower.failure,
      ...(options.clock ? { clock: options.clock } : {}),
      recordLayout: recordLayoutOf(options.recordLayout),
    });
    this.follower = new Follower(kafka, this.decider, this.writer, this.admin, {
      topic: this.topic,
      fetch: options.fetch,
      timeoutMs,
      closing,
    });
  }

  /** Connects, creates the topic if needed and reads the log to its end. */
  static async open(options: KafkaLogOptions): Promise<KafkaBackend> {
    const backend = new KafkaBackend(options);
    try {
      const { ssl } = connectionSettings(options);
      if (ssl) await checkTls(brokerList(options.brokers), ssl, options.requestTimeoutMs ?? 30_000);
      await backend.start();
    } catch (error) {
      await backend.close().catch(() => {});
      throw await clearKafkaError(error, options, brokerList(options.brokers));
    }
    return backend;
  }

  private async start(): Promise<void> {
    await this.admin.connect();
    if (this.options.createTopic ?? true) await this.admin.createTopic(this.options.replicationFactor);
    await this.admin.checkOnePartition();
    await this.checkpoints?.resume();
    await this.follower.start();
    await this.follower.sync();
    this.checkpoints?.start();
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
    const failure = this.follower.failure;
    if (failure) return Promise.reject(failure);
    return this.writer.enqueue(writes, this.decider.nextOffset);
  }

  async readStream(streamId: string, fromRevision: bigint, maxCount: number): Promise<StoredEvent[]> {
    await this.follower.ready();
    return this.reader.readStream(streamId, fromRevision, maxCount);
  }

  async readAll(fromPosition: bigint, maxCount: number): Promise<StoredEvent[]> {
    await this.follower.ready();
    return this.readAllSeen(fromPosition, maxCount);
  }

  /** What this client has read so far: a subscription is woken (`watch`) as it reads more. */
  async readAllSeen(fromPosition: bigint, maxCount: number): Promise<StoredEvent[]> {
    this.follower.usable();
    return this.reader.readAll(fromPosition, maxCount);
  }

  async streamRevision(streamId: string): Promise<StreamRevision> {
    await this.follower.ready();
    return this.decider.revision(streamId);
  }

  async headPosition(): Promise<bigint> {
    await this.follower.ready();
    return this.decider.headPosition();
  }

  watch(listener: () => void): () => void {
    return this.follower.watch(listener);
  }

  /** Writes a checkpoint of the index now, to `indexPath` (for tools, benchmarks and tests). */
  async saveIndex(): Promise<void> {
    if (!this.checkpoints) throw new Error(`kafka log ${this.topic}: no indexPath to write a checkpoint to`);
    await this.checkpoints.save();
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
    /** Records the follower was handed that were decided already (read again after a seek). */
    reread: number;
    /** Fetch requests made to read events back from the brokers. */
    readBack: number;
  } {
    return {
      events: this.decider.eventCount,
      streams: this.decider.streamCount,
      sends: this.writer.sends,
      records: this.writer.records,
      refused: this.decider.refused,
      duplicates: this.decider.duplicates,
      offset: this.decider.nextOffset,
      reread: this.follower.reread,
      readBack: this.fetcher.reads,
    };
  }

  /** Finishes the appends already queued (until their outcome is known), then disconnects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closing = true;
    await this.writer.drain();
    if (this.writer.pendingCount > 0 && !this.follower.failure) {
      await this.follower
        .waitFor(() => this.writer.pendingCount === 0, "appends to be read back")
        .catch(() => {});
    }
    this.closed = true;
    this.follower.close();
    this.writer.closePending();
    await Promise.allSettled([
      this.follower.disconnect(),
      this.writer.close(),
      this.admin.disconnect(),
      this.fetcher.disconnect(),
    ]);
    // Written once the follower has stopped: the checkpoint is the log as this client left it.
    if (!this.follower.failure) await this.checkpoints?.close();
  }
}

/** The record layout a client writes, checked (a JavaScript caller may pass anything). */
function recordLayoutOf(layout: unknown): 2 | 3 {
  if (layout === undefined || layout === RECORD_LAYOUT_WITH_CHECKS) return RECORD_LAYOUT_WITH_CHECKS;
  if (layout === RECORD_LAYOUT_VERSION) return RECORD_LAYOUT_VERSION;
  throw new RangeError(`recordLayout ${JSON.stringify(layout) ?? String(layout)}: 2 or 3`);
}
