import { randomUUID } from "node:crypto";
import {
  AppendExpiredError,
  AppendOutcomeUnknownError,
  type AppendResult,
  InvalidAppendError,
  LogClosedError,
  type PreparedWrite,
} from "@chronolog/log";
import { type Kafka, Partitioners, type Producer } from "kafkajs";
import { sleep } from "./client.js";
import { RECORD_OVERHEAD } from "./options.js";
import {
  type DecodedAppend,
  type EncodedAppend,
  encodeAppend,
  encodeExpected,
  encodeRecord,
  RECORD_LAYOUT_VERSION,
  RECORD_LAYOUT_WITH_CHECKS,
  type WireAppend,
} from "./record.js";
import type { Decision } from "./record-decider.js";

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

export interface AppendWriterOptions {
  readonly topic: string;
  readonly maxAppendBytes: number;
  /** How long one produce request, and then the wait for its record to be read back, may take. */
  readonly timeoutMs: number;
  /** How long an append keeps being retried through failures. */
  readonly appendTimeoutMs: number;
  /** The error the log failed with, if it did: nothing more is sent then. */
  readonly failure: () => Error | null;
  /** The time an append records as its events' `recordedAt`. Default: the real time. */
  readonly clock?: () => Date;
  /** The newest layout written: 2 leaves an append's checks out (see KafkaLogOptions). */
  readonly recordLayout: 2 | 3;
}

/**
 * Sends appends to the topic and holds each until its outcome is known. An append's outcome
 * is not the broker's acknowledgement but the log's decision, which this client's follower
 * makes when it reads the record back: the follower hands each decision to `settle`. Sends
 * are pipelined (the next request goes while earlier records wait to be read back), and a
 * send that fails is retried with backoff until `appendTimeoutMs`; a copy that lands twice is
 * recognised by the append's id.
 */
export class AppendWriter {
  private producer: Producer | null = null;
  private readonly disconnecting = new Set<Promise<void>>();
  private readonly queue: PendingAppend[] = [];
  /** Appends handed to the producer whose outcome this client's reader has not decided yet. */
  private readonly pending = new Map<string, PendingAppend>();
  private writing = false;
  private loop: Promise<void> = Promise.resolve();
  /** Produce requests this client made, and the appends they carried. */
  private readonly counts = { sends: 0, records: 0 };

  constructor(
    private readonly kafka: Kafka,
    private readonly options: AppendWriterOptions,
  ) {}

  get sends(): number {
    return this.counts.sends;
  }

  get records(): number {
    return this.counts.records;
  }

  /** How many appends wait for the log's decision. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /**
   * Queues an append of `writes`, made when this client had read the log up to `base`; it
   * resolves with the log's decision.
   */
  enqueue(writes: readonly PreparedWrite[], base: bigint): Promise<AppendResult[]> {
    // Writes of no events are checks (see PreparedWrite), after the writes of events.
    const firstCheck = writes.findIndex((w) => w.events.length === 0);
    if (firstCheck === 0 || writes.length === 0)
      return Promise.reject(new InvalidAppendError("an append needs at least one event"));
    if (firstCheck > 0 && writes.slice(firstCheck).some((w) => w.events.length > 0))
      return Promise.reject(new InvalidAppendError("an append's checks come after its writes of events"));
    // Pinned to layout 2 (a rolling upgrade), the checks are left out: see KafkaLogOptions.
    const checked = firstCheck > 0 && this.options.recordLayout === RECORD_LAYOUT_WITH_CHECKS;
    const written = firstCheck > 0 && !checked ? writes.slice(0, firstCheck) : writes;
    const id = randomUUID();
    const recordedAt = (this.options.clock?.() ?? new Date()).toISOString();
    const wire: WireAppend = {
      v: checked ? RECORD_LAYOUT_WITH_CHECKS : RECORD_LAYOUT_VERSION,
      id,
      base: base.toString(),
      recordedAt,
      writes: written.map((w) => ({
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
    const max = this.options.maxAppendBytes;
    if (bytes > max) {
      return Promise.reject(
        new InvalidAppendError(
          `an append of ${bytes} bytes exceeds the Kafka log's limit of ${max} bytes per append`,
        ),
      );
    }
    return new Promise<AppendResult[]>((resolve, reject) => {
      // What the record holds, which this client decides as every other reads it.
      this.queue.push({ id, writes: written, base, recordedAt, encoded, bytes, resolve, reject });
      if (!this.writing) {
        this.writing = true;
        this.loop = this.writeLoop();
      }
    });
  }

  /** Returns once the write loop has sent (or given up on) everything queued. */
  async drain(): Promise<void> {
    while (this.writing) await this.loop;
  }

  /**
   * The appends of a record this client sent, as still in memory (parsed data and all), if
   * every id is one of its pending appends: the record then need not be decoded.
   */
  ownAppends(ids: readonly string[]): DecodedAppend[] | null {
    if (ids.length === 0) return null;
    const own: DecodedAppend[] = [];
    for (const id of ids) {
      const p = this.pending.get(id);
      if (!p) return null;
      own.push({
        id: p.id,
        base: p.base,
        recordedAt: p.recordedAt,
        writes: p.writes.map((w) => ({ stream: w.streamId, expected: w.expected, events: w.events })),
      });
    }
    return own;
  }

  /** Settles this client's append that `decision` is about, if it is one. */
  settle(decision: Decision): void {
    const p = this.pending.get(decision.id);
    if (!p) return;
    switch (decision.kind) {
      case "accepted":
        this.finish(p, { results: decision.results });
        return;
      case "refused":
        this.finish(p, { error: decision.error });
        return;
      case "too_old":
        this.finish(p, {
          error: new AppendExpiredError(
            `kafka log ${this.options.topic}: the append was made at offset ${decision.base}, too long before it reached the log (offset ${decision.offset}) to rule out a copy of it`,
          ),
        });
        return;
      case "duplicate":
        return;
    }
  }

  /** Fails every append that waits for its outcome with `error`. */
  failPending(error: unknown): void {
    for (const p of [...this.pending.values()]) this.finish(p, { error });
  }

  /** The log is closed: every append still waiting fails with LogClosedError. */
  closePending(): void {
    for (const p of [...this.pending.values()]) this.finish(p, { error: new LogClosedError() });
  }

  /** Disconnects the producer, and waits for producers dropped earlier to finish disconnecting. */
  async close(): Promise<void> {
    const producer = this.producer;
    this.producer = null;
    await Promise.allSettled([producer?.disconnect(), ...this.disconnecting]);
  }

  private finish(p: PendingAppend, outcome: { results: AppendResult[] } | { error: unknown }): void {
    if (this.pending.get(p.id) !== p) return;
    this.pending.delete(p.id);
    if (p.timer) clearTimeout(p.timer);
    if ("results" in outcome) p.resolve(outcome.results);
    else p.reject(outcome.error);
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
    const { topic, timeoutMs } = this.options;
    for (const p of batch) this.pending.set(p.id, p);
    let lastError: unknown = null;
    const deadline = performance.now() + this.options.appendTimeoutMs;
    for (let attempt = 1; ; attempt++) {
      const left = batch.filter((p) => this.pending.get(p.id) === p);
      if (left.length === 0) return;
      const failure = this.options.failure();
      if (failure || (attempt > 1 && (performance.now() > deadline || isFatal(lastError)))) {
        const error =
          failure ??
          new AppendOutcomeUnknownError(
            `kafka log ${topic}: the append could not be written (it may yet appear in the log): ${
              (lastError as Error)?.message ?? lastError
            }`,
            { cause: lastError },
          );
        for (const p of left) this.finish(p, { error });
        return;
      }
      try {
        const producer = await this.getProducer();
        await producer.send({
          topic,
          acks: -1,
          timeout: timeoutMs,
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
            this.finish(p, {
              error: new AppendOutcomeUnknownError(
                `kafka log ${topic}: timed out waiting for an append to be read back (it may yet appear in the log)`,
              ),
            });
          }, timeoutMs);
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
}
