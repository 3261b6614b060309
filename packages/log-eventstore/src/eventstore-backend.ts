import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import {
  AppendOutcomeUnknownError,
  type AppendResult,
  type ExpectedRevision,
  type LogBackend,
  LogClosedError,
  LogMovedError,
  LogUnavailableError,
  type PreparedEvent,
  type PreparedWrite,
  type StoredEvent,
  type StreamRevision,
  type WrongExpectedRevisionError,
} from "@chronolog/log";
import {
  CancelledError,
  DeadlineExceededError,
  EventStoreDBClient,
  jsonEvent,
  NO_STREAM,
  type ResolvedEvent,
  START,
  StreamNotFoundError,
  type StreamSubscription,
  UnavailableError,
  WrongExpectedVersionError,
} from "@eventstore/db-client";
import { type AppendRecord, decodeRecord, LogState, recordType } from "./record.js";

export interface EventStoreLogOptions {
  /** The client's connection string: `esdb://HOST:PORT?tls=false`, with any of its options. */
  readonly connectionString: string;
  /** The EventStoreDB stream that holds the log. Default `chronolog`. */
  readonly stream?: string;
  /**
   * How long a read or an append keeps being retried while the server is unavailable (a
   * restart, a leader election). Default 30 s.
   */
  readonly retryForMs?: number;
  /** Largest total data one EventStoreDB append may carry. Default 512 KiB (the server takes 1 MiB). */
  readonly maxBatchBytes?: number;
  /** The time each append records as its events' `recordedAt`. Default: the real time. */
  readonly clock?: () => Date;
}

interface Pending {
  /** The EventStoreDB event id: the same on every attempt, so a copy is recognised. */
  readonly id: string;
  readonly writes: readonly PreparedWrite[];
  /** Made only if the log's last event is at this position when it lands. */
  readonly expectedHead: bigint | undefined;
  readonly bytes: number;
  readonly recordedAt: string;
  readonly resolve: (results: AppendResult[]) => void;
  readonly reject: (error: unknown) => void;
  done: boolean;
}

/** How many records one read asks for while catching up. */
const READ_PAGE = 1000;
/** How many appends one EventStoreDB append carries at most. */
const MAX_BATCH = 500;

/**
 * Both EventStoreDB clients register the same protobuf namespace, and the second to load
 * breaks the first: refuse to start beside the KurrentDB client rather than fail oddly later.
 */
function checkNoKurrentClient(): void {
  const cache = createRequire(import.meta.url).cache;
  if (Object.keys(cache).some((k) => k.includes("@kurrent/kurrentdb-client")))
    throw new Error(
      "@kurrent/kurrentdb-client is loaded in this process: it and @eventstore/db-client register the same protobuf namespace and break each other; load only one",
    );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An error the server's restart, a lost connection or a leader change gives: worth a retry. */
function retryable(error: unknown): boolean {
  if (
    error instanceof UnavailableError ||
    error instanceof CancelledError ||
    error instanceof DeadlineExceededError
  )
    return true;
  const code = (error as { code?: unknown })?.code;
  return code === 14 || code === 1 || code === 4 || code === "ECONNREFUSED" || code === "ECONNRESET";
}

/** The stream name a connection string carries (`esdb://h:p/STREAM?...`), and the string without it. */
export function parseEventStoreUrl(url: string): { connectionString: string; stream?: string } | null {
  const m = /^(esdb(?:\+discover)?:\/\/)([^/?]+)(?:\/([^?]*))?(\?.*)?$/.exec(url);
  if (!m) return null;
  const stream = m[3] ? decodeURIComponent(m[3]) : undefined;
  return { connectionString: `${m[1]}${m[2]}${m[4] ?? ""}`, ...(stream ? { stream } : {}) };
}

/**
 * The log in one EventStoreDB stream: each event of that stream is one Chronolog append,
 * however many Chronolog streams it writes.
 *
 * - A writer decides each append against the log as this client has read it, and sends it
 *   expecting the EventStoreDB stream to be at the revision it has read up to: the server's
 *   compare-and-set makes sure nothing came in between. If something did
 *   (WrongExpectedVersion), the writer catches up and decides again: the append goes through
 *   if its own expectations still hold, else it is refused with WrongExpectedRevisionError.
 *   So multi-stream appends are atomic, and positions (dense, from 0) and the hash chain are
 *   the same for every client, which applies the stream's events in their order.
 * - Appends waiting while one is in flight go together in the next EventStoreDB append (one
 *   event each): under load a round trip carries many.
 * - An append whose answer was lost is sent again with the same event id and expectation; the
 *   server answers an identical append idempotently, and a catch-up that finds the id settles
 *   it either way: nothing is applied twice.
 * - The client follows the stream with the server's catch-up subscription, and reads (which
 *   must see every append completed before they began) first read the stream to its end.
 *   Reads, appends and the subscription retry through UNAVAILABLE and a server restart.
 */
export class EventStoreBackend implements LogBackend {
  readonly name = "eventstore";
  /** appendMany takes `expectedHead`: the one stream's compare-and-set covers the whole log. */
  readonly appendsAtHead = true;
  readonly stream: string;
  private readonly client: EventStoreDBClient;
  private readonly state = new LogState();
  private readonly retryForMs: number;
  private readonly maxBatchBytes: number;
  private readonly listeners = new Set<() => void>();
  private readonly queue: Pending[] = [];
  private readonly pendingById = new Map<string, Pending>();
  private writing: Promise<void> | null = null;
  private syncing: Promise<void> | null = null;
  private nextSync: Promise<void> | null = null;
  private subscription: StreamSubscription | null = null;
  private resubscribe: NodeJS.Timeout | null = null;
  private notifyQueued = false;
  private closing = false;
  private closed = false;
  private failure: Error | null = null;
  private readonly counts = { sends: 0, records: 0, conflicts: 0, retries: 0, subscriptions: 0 };

  private constructor(private readonly options: EventStoreLogOptions) {
    this.stream = options.stream ?? "chronolog";
    this.retryForMs = options.retryForMs ?? 30_000;
    this.maxBatchBytes = options.maxBatchBytes ?? 512 * 1024;
    this.client = EventStoreDBClient.connectionString(options.connectionString);
  }

  /** Connects and reads the log to its end, then follows it. */
  static async open(options: EventStoreLogOptions): Promise<EventStoreBackend> {
    checkNoKurrentClient();
    const backend = new EventStoreBackend(options);
    try {
      await backend.sync();
      backend.follow();
    } catch (error) {
      await backend.close().catch(() => {});
      throw error;
    }
    return backend;
  }

  // ---- reading ---------------------------------------------------------------------------

  /** Reads the stream to its end: afterwards every append completed before the call is applied. */
  private sync(): Promise<void> {
    if (!this.syncing) {
      this.syncing = this.retrying("read the log", () => this.readToEnd()).finally(() => {
        this.syncing = null;
      });
      return this.syncing;
    }
    // One under way may have begun before what the caller must see: read once more after it.
    this.nextSync ??= this.syncing
      .catch(() => {})
      .then(() => {
        this.nextSync = null;
        return this.sync();
      });
    return this.nextSync;
  }

  private async readToEnd(): Promise<void> {
    for (;;) {
      let n = 0;
      try {
        const from = this.state.nextRecord;
        for await (const resolved of this.client.readStream(this.stream, {
          fromRevision: from,
          maxCount: READ_PAGE,
        })) {
          n += 1;
          this.applyResolved(resolved);
        }
      } catch (error) {
        if (error instanceof StreamNotFoundError) return;
        throw error;
      }
      if (n < READ_PAGE) return;
    }
  }

  /** Applies one event of the stream (from a read or the subscription), once. */
  private applyResolved(resolved: ResolvedEvent): void {
    const e = resolved.event;
    if (!e) return;
    if (e.revision < this.state.nextRecord) return;
    if (e.revision > this.state.nextRecord) {
      void this.sync().catch(() => {}); // a gap: the read fills it
      return;
    }
    const record = decodeRecord(e.revision, e.data);
    const pending = this.pendingById.get(e.id);
    this.applyRecord(e.revision, record, pending);
  }

  private applyRecord(revision: bigint, record: AppendRecord, pending: Pending | undefined): void {
    const results = this.state.apply(revision, record, pending?.writes);
    if (!results) return;
    this.counts.records += 1;
    if (pending && !pending.done) this.settle(pending, results);
    this.notify();
  }

  private settle(p: Pending, results: AppendResult[] | null, error?: unknown): void {
    if (p.done) return;
    p.done = true;
    this.pendingById.delete(p.id);
    if (results) p.resolve(results);
    else p.reject(error);
  }

  /** Follows the stream with the server's subscription; resubscribes after a failure. */
  private follow(): void {
    if (this.closing) return;
    const next = this.state.nextRecord;
    // A subscription from a revision delivers what comes after it.
    const sub = this.client.subscribeToStream(this.stream, { fromRevision: next === 0n ? START : next - 1n });
    this.subscription = sub;
    this.counts.subscriptions += 1;
    let failed = false;
    const again = () => {
      if (failed || this.closing) return;
      failed = true;
      if (this.subscription === sub) this.subscription = null;
      void sub.unsubscribe().catch(() => {});
      this.resubscribe = setTimeout(() => {
        this.resubscribe = null;
        // Catch up by reading first: the new subscription starts where the read ended.
        this.sync().then(
          () => this.follow(),
          () => this.follow(),
        );
      }, 100);
    };
    sub.on("data", (resolved: ResolvedEvent) => {
      try {
        this.applyResolved(resolved);
      } catch (error) {
        this.fail(error as Error);
      }
    });
    sub.on("error", again);
    sub.on("end", again);
    sub.on("close", again);
  }

  private fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    for (const p of [...this.queue, ...this.pendingById.values()]) this.settle(p, null, error);
    this.queue.length = 0;
    this.notify();
  }

  private notify(): void {
    if (this.notifyQueued) return;
    this.notifyQueued = true;
    queueMicrotask(() => {
      this.notifyQueued = false;
      for (const l of this.listeners) l();
    });
  }

  /** Runs `fn`, again while the server is unavailable, for up to retryForMs. */
  private async retrying<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.retryForMs;
    let delay = 25;
    for (;;) {
      if (this.closed) throw new LogClosedError();
      try {
        return await fn();
      } catch (error) {
        if (!retryable(error)) throw error;
        if (Date.now() + delay > deadline)
          throw new LogUnavailableError(
            `EventStoreDB did not answer for ${this.retryForMs} ms (${what}): ${(error as Error).message}`,
          );
        this.counts.retries += 1;
        await sleep(delay);
        delay = Math.min(delay * 2, 1000);
      }
    }
  }

  // ---- writing ---------------------------------------------------------------------------

  async append(
    streamId: string,
    events: readonly PreparedEvent[],
    expected: ExpectedRevision,
  ): Promise<AppendResult> {
    const [result] = await this.enqueue([{ streamId, events, expected }]);
    return result as AppendResult;
  }

  /**
   * Appends to several streams in one EventStoreDB event: all of them, or on one conflict none;
   * with `expectedHead`, only if the log's last event is at that position (else LogMovedError).
   */
  appendMany(
    writes: readonly PreparedWrite[],
    options: { readonly expectedHead?: bigint } = {},
  ): Promise<AppendResult[]> {
    return this.enqueue(writes, options.expectedHead);
  }

  private enqueue(writes: readonly PreparedWrite[], expectedHead?: bigint): Promise<AppendResult[]> {
    if (this.closing) return Promise.reject(new LogClosedError());
    if (this.failure) return Promise.reject(this.failure);
    const recordedAt = (this.options.clock?.() ?? new Date()).toISOString();
    let bytes = 200;
    for (const w of writes) {
      bytes += w.streamId.length + 40; // (a check, of no events, is this alone)
      for (const e of w.events) bytes += e.dataJson.length + e.type.length + 200;
    }
    return new Promise<AppendResult[]>((resolve, reject) => {
      const p: Pending = {
        id: randomUUID(),
        writes,
        expectedHead,
        bytes,
        recordedAt,
        resolve,
        reject,
        done: false,
      };
      this.queue.push(p);
      this.pendingById.set(p.id, p);
      this.writing ??= this.pump().finally(() => {
        this.writing = null;
      });
    });
  }

  private async pump(): Promise<void> {
    while (this.queue.length > 0 && !this.failure) {
      let bytes = 0;
      let n = 0;
      while (n < this.queue.length && n < MAX_BATCH) {
        const b = (this.queue[n] as Pending).bytes;
        if (n > 0 && bytes + b > this.maxBatchBytes) break;
        bytes += b;
        n += 1;
      }
      const batch = this.queue.splice(0, n);
      try {
        await this.writeBatch(batch);
      } catch (error) {
        const outcome =
          error instanceof LogUnavailableError
            ? new AppendOutcomeUnknownError(error.message, { cause: error })
            : error;
        for (const p of batch) this.settle(p, null, outcome);
      }
    }
  }

  /** Decides the batch, sends what holds, and on a conflict catches up and decides again. */
  private async writeBatch(batch: Pending[]): Promise<void> {
    let fresh = false;
    for (;;) {
      const open = batch.filter((p) => !p.done);
      if (open.length === 0) return;
      const overlay = new Map<string, StreamRevision>();
      const accepted: Array<{ p: Pending; record: AppendRecord }> = [];
      const refused: Array<{ p: Pending; error: WrongExpectedRevisionError | LogMovedError }> = [];
      // The log's last position once the appends accepted so far in this batch are in.
      let head = this.state.headPosition();
      for (const p of open) {
        if (p.expectedHead !== undefined && p.expectedHead !== head) {
          refused.push({ p, error: new LogMovedError(p.expectedHead, head) });
          continue;
        }
        const before = new Map(overlay);
        const error = this.state.decide(p.writes, overlay);
        if (error) refused.push({ p, error });
        else {
          accepted.push({ p, record: this.state.encode(p.writes, before, p.recordedAt) });
          for (const w of p.writes) head += BigInt(w.events.length);
        }
      }
      // A refusal stands only against the log as it is now: catch up first, then decide again.
      if (refused.length > 0 && !fresh) {
        await this.sync();
        fresh = true;
        continue;
      }
      for (const { p, error } of refused) this.settle(p, null, error);
      if (accepted.length === 0) return;
      const base = this.state.nextRecord;
      const events = accepted.map(({ p, record }) =>
        jsonEvent({
          id: p.id,
          type: recordType(p.writes),
          data: record as unknown as Record<string, unknown>,
          metadata: { streams: [...new Set(p.writes.map((w) => w.streamId))] },
        }),
      );
      try {
        this.counts.sends += 1;
        await this.retrying("append", () =>
          this.client.appendToStream(this.stream, events, {
            expectedRevision: base === 0n ? NO_STREAM : base - 1n,
          }),
        );
      } catch (error) {
        if (!(error instanceof WrongExpectedVersionError)) throw error;
        // Another client wrote first (or this append went in and its answer was lost: the
        // catch-up finds its id and settles it). Decide again against the log as it is now.
        this.counts.conflicts += 1;
        await this.sync();
        fresh = true;
        continue;
      }
      for (const [i, { p, record }] of accepted.entries()) {
        // The subscription may have applied it first: then it is settled already.
        if (this.state.nextRecord === base + BigInt(i)) this.applyRecord(base + BigInt(i), record, p);
      }
      if (accepted.some(({ p }) => !p.done)) await this.sync();
      return;
    }
  }

  // ---- the rest of LogBackend ------------------------------------------------------------

  private usable(): void {
    if (this.closed) throw new LogClosedError();
    if (this.failure) throw this.failure;
  }

  async readStream(streamId: string, fromRevision: bigint, maxCount: number): Promise<StoredEvent[]> {
    this.usable();
    await this.sync();
    return this.state.readStream(streamId, fromRevision, maxCount);
  }

  async readAll(fromPosition: bigint, maxCount: number): Promise<StoredEvent[]> {
    this.usable();
    await this.sync();
    return this.state.readAll(fromPosition, maxCount);
  }

  /** What this client has read so far: a subscription is woken (`watch`) as it reads more. */
  async readAllSeen(fromPosition: bigint, maxCount: number): Promise<StoredEvent[]> {
    this.usable();
    return this.state.readAll(fromPosition, maxCount);
  }

  async streamRevision(streamId: string): Promise<StreamRevision> {
    this.usable();
    await this.sync();
    return this.state.revision(streamId);
  }

  async headPosition(): Promise<bigint> {
    this.usable();
    await this.sync();
    return this.state.headPosition();
  }

  watch(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Counts, for benchmarks and tests. */
  stats(): {
    events: number;
    streams: number;
    records: number;
    sends: number;
    conflicts: number;
    retries: number;
    subscriptions: number;
  } {
    return { events: this.state.eventCount, streams: this.state.streamCount, ...this.counts };
  }

  /** Finishes the appends already queued, then disconnects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closing = true;
    await this.writing?.catch(() => {});
    this.closed = true;
    if (this.resubscribe) clearTimeout(this.resubscribe);
    for (const p of this.pendingById.values()) this.settle(p, null, new LogClosedError());
    const sub = this.subscription;
    this.subscription = null;
    await sub?.unsubscribe().catch(() => {});
    await this.client.dispose().catch(() => {});
    this.listeners.clear();
  }
}
