import { randomUUID } from "node:crypto";
import { LogClosedError, LogUnavailableError } from "@chronolog/log";
import type { Consumer, Kafka, KafkaMessage } from "kafkajs";
import type { TopicAdmin } from "./client.js";
import type { KafkaLogOptions } from "./options.js";
import { type DecodedAppend, decodeRecord } from "./record.js";
import type { Decision, RecordDecider } from "./record-decider.js";

/** Where the follower hands this client's own appends back: the writer that holds them. */
export interface OwnAppends {
  /** The appends of a record this client sent, if every id is one it still holds. */
  ownAppends(ids: readonly string[]): DecodedAppend[] | null;
  /** The log's decision on an append, which settles it if it is this client's. */
  settle(decision: Decision): void;
  /** The log failed: every append still waiting fails with it. */
  failPending(error: unknown): void;
}

/** Records this close to the partition's end have their events kept whole as they are decided. */
const KEEP_WITHIN_RECORDS = 1000n;

interface Waiter {
  readonly ready: () => boolean;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
  /** Armed again each time the reader moves on: it fires once the reader stood still that long. */
  timer: NodeJS.Timeout;
  readonly expire: () => void;
}

export interface FollowerOptions {
  readonly topic: string;
  readonly fetch: KafkaLogOptions["fetch"];
  /** How long a wait for the log to catch up may take. */
  readonly timeoutMs: number;
  /** True once the log is closing: the consumer's end is then no failure. */
  readonly closing: () => boolean;
}

/**
 * Reads the topic from its beginning and feeds every record, in offset order, to the decider;
 * hands each decision to the writer, wakes what waits for the log to reach an offset, and
 * tells watchers when events arrive. A record the log cannot read (another program's, a
 * damaged one) or a consumer that dies for good fails the log: from then on everything is
 * refused with that error.
 */
export class Follower {
  private readonly consumer: Consumer;
  private readonly waiters = new Set<Waiter>();
  private readonly listeners = new Set<() => void>();
  private failed: Error | null = null;
  private rereadCount = 0;
  /** How far the reader had read when waiters last heard of it. */
  private seen = 0n;

  constructor(
    kafka: Kafka,
    private readonly decider: RecordDecider,
    private readonly own: OwnAppends,
    private readonly admin: TopicAdmin,
    private readonly options: FollowerOptions,
  ) {
    this.consumer = kafka.consumer({
      groupId: `chronolog.${options.topic}.follower.${randomUUID()}`,
      minBytes: options.fetch?.minBytes ?? 1,
      maxWaitTimeInMs: options.fetch?.maxWaitMs ?? 500,
      maxBytesPerPartition: 16 * 1024 * 1024,
      maxBytes: 32 * 1024 * 1024,
      allowAutoTopicCreation: false,
      retry: { initialRetryTime: 50, maxRetryTime: 2000, retries: 10 },
    });
  }

  /** Records handed to the follower that were decided already (read again after a seek). */
  get reread(): number {
    return this.rereadCount;
  }

  /** The error the log failed with, or null while it can be trusted. */
  get failure(): Error | null {
    return this.failed;
  }

  /** Joins, subscribes from the topic's beginning and starts reading. */
  async start(): Promise<void> {
    const c = this.consumer;
    const topic = this.options.topic;
    c.on(c.events.END_BATCH_PROCESS, (e) => {
      this.advance(BigInt(e.payload.lastOffset) + 1n);
    });
    c.on(c.events.GROUP_JOIN, () => {
      // After a rebalance the consumer would start over from the beginning: skip what is applied.
      const next = this.decider.nextOffset;
      if (next > 0n) c.seek({ topic, partition: 0, offset: next.toString() });
    });
    c.on(c.events.CRASH, (e) => {
      if (!e.payload.restart && !this.options.closing()) this.fail(e.payload.error);
    });
    await c.connect();
    await c.subscribe({ topics: [topic], fromBeginning: true });
    await c.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (this.failed) return;
        try {
          this.apply(batch.messages, BigInt(batch.lastOffset()) + 1n, BigInt(batch.highWatermark));
        } catch (error) {
          this.fail(error as Error);
        }
      },
    });
  }

  /**
   * Decides records in offset order. A record far behind the partition's end (`end`) is
   * decided without keeping its events whole: nothing reads them before they would leave the
   * cache, and keeping each for a while only moves it to the old generation of the heap, to be
   * collected there (reading a long log from its start, that made the collections grow with it).
   */
  private apply(messages: readonly KafkaMessage[], next: bigint, end: bigint): void {
    const before = this.decider.eventCount;
    for (const m of messages) {
      const offset = BigInt(m.offset);
      if (this.decider.has(offset)) {
        this.rereadCount += 1;
        continue;
      }
      // This client's own record: its appends are still in memory, parsed data and all, so
      // the record need not be decoded (the header names them; the value holds the same).
      const header = m.headers?.ids;
      const ids = header ? header.toString().split(",") : [];
      const appends = this.own.ownAppends(ids) ?? decodeRecord(m.value, m.offset);
      const keep = end - offset <= KEEP_WITHIN_RECORDS;
      for (const d of this.decider.decideRecord(offset, appends, keep)) this.own.settle(d);
    }
    this.advance(next);
    if (this.decider.eventCount > before) this.notify();
  }

  private advance(next: bigint): void {
    this.decider.advanceTo(next);
    const moved = this.decider.nextOffset > this.seen;
    this.seen = this.decider.nextOffset;
    for (const w of this.waiters) {
      if (w.ready()) {
        clearTimeout(w.timer);
        this.waiters.delete(w);
        w.resolve();
      } else if (moved) {
        // Still reading (a long log from its start): the wait goes on while the reader moves.
        clearTimeout(w.timer);
        w.timer = setTimeout(w.expire, this.options.timeoutMs);
      }
    }
  }

  /**
   * Resolves once `ready()` holds, checked each time the follower reads more; rejects once the
   * follower has read nothing for the timeout (not after the timeout in all: reading a long log
   * from its start takes longer, and is no failure while it goes on).
   */
  waitFor(ready: () => boolean, what: string): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (ready()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const expire = () => {
        this.waiters.delete(w);
        reject(
          new LogUnavailableError(
            `kafka log ${this.options.topic}: timed out waiting for ${what} (read up to offset ${this.decider.nextOffset})`,
          ),
        );
      };
      const w: Waiter = { ready, resolve, reject, expire, timer: setTimeout(expire, this.options.timeoutMs) };
      this.waiters.add(w);
    });
  }

  /** Returns once this client has decided every record written before the call. */
  async sync(): Promise<void> {
    const target = await this.admin.lastStableOffset();
    await this.waitFor(() => this.decider.nextOffset >= target, `the log to be read up to offset ${target}`);
  }

  /** Throws if the log is closing or failed: what it holds can be read as far as it has read. */
  usable(): void {
    if (this.options.closing()) throw new LogClosedError();
    if (this.failed) throw this.failed;
  }

  /** Returns once the log can be read and holds everything written before the call. */
  async ready(): Promise<void> {
    this.usable();
    await this.sync();
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
    if (this.failed) return;
    // Marked permanent: a subscription does not retry reads of a log in this state.
    this.failed = Object.assign(error, { permanent: true });
    this.rejectWaiters(() => error);
    this.own.failPending(error);
    this.notify();
  }

  /** Rejects everything that waits for the log with `error(each)`. */
  private rejectWaiters(error: () => unknown): void {
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(error());
    }
    this.waiters.clear();
  }

  /** The log is closed: every wait ends with LogClosedError, and watchers hear no more. */
  close(): void {
    this.rejectWaiters(() => new LogClosedError());
    this.listeners.clear();
  }

  disconnect(): Promise<void> {
    return this.consumer.disconnect();
  }
}
