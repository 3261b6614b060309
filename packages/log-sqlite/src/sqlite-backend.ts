import { type FSWatcher, mkdirSync, watch as watchFs } from "node:fs";
import { basename, dirname } from "node:path";
import {
  type AppendResult,
  type ExpectedRevision,
  type LogBackend,
  LogClosedError,
  LogMovedError,
  LogReadOnlyError,
  type PreparedEvent,
  type PreparedWrite,
  type StoredEvent,
  type StreamRevision,
  UnsupportedLogLayoutError,
  WrongExpectedRevisionError,
} from "@chronolog/log";
import type Database from "better-sqlite3";
import { type BatchOutcome, BatchWriter } from "./batch-writer.js";
import { type ConnectionSettings, openConnection } from "./connection.js";
import type { EventRows } from "./rows.js";
import { RowsV1 } from "./rows-v1.js";
import { RowsV2 } from "./rows-v2.js";
import { LATEST_LAYOUT, LAYOUT_VERSIONS, type LayoutVersion, SCHEMAS, SET_FIRST_POSITION } from "./schema.js";

export interface SqliteLogOptions {
  /** The log file. Its directory is created if missing. */
  readonly path: string;
  /** Open for reading only: any number of such readers may run beside one writing process. */
  readonly readonly?: boolean;
  /**
   * `FULL` (default): every acknowledged append is on disk (fsync per commit) and survives
   * power loss. `NORMAL` trades that for speed (survives a process crash, not a power loss).
   */
  readonly synchronous?: "FULL" | "NORMAL" | "EXTRA";
  /** Most events one group commit takes. */
  readonly maxBatchEvents?: number;
  /** How long an append waits for another process's write lock before failing. */
  readonly busyTimeoutMs?: number;
  /** WAL size, in pages, that triggers a checkpoint. */
  readonly walAutocheckpointPages?: number;
  /**
   * The WAL file's size, in bytes, past which the writer checkpoints it and truncates it
   * (default 8 MiB): see `keepWalSmall`.
   */
  readonly walLimitBytes?: number;
  /** Page cache size in MiB (default 64). */
  readonly cacheMiB?: number;
  /**
   * How much of the file is read through a memory map, in MiB (default 256; 0: none, every
   * page read into the page cache). Each mapped page read counts in the process's resident
   * memory for as long as the map lasts.
   */
  readonly mmapMiB?: number;
  /** Events kept in memory after commit for readers in this process (default 4,096). */
  readonly recentEvents?: number;
  /** Watch the file for commits by other processes (for subscriptions). Default true. */
  readonly watchOtherProcesses?: boolean;
  /**
   * The layout a new file is made in (default: the latest, 2). A file that exists keeps the
   * layout it was made in. Layout 1 is what Chronolog wrote before layout 2 existed, for a file
   * that older versions must still read.
   */
  readonly layout?: LayoutVersion;
  /** The time each commit records as its events' `recordedAt`. Default: the real time. */
  readonly clock?: () => Date;
}

/** Default for `walLimitBytes`. */
const WAL_LIMIT_BYTES = 8 * 1024 * 1024;

/** One queued append: one stream, or several written atomically. */
interface PendingAppend {
  readonly writes: readonly PreparedWrite[];
  /** The position the log's last event must be at for the append to be made (see appendMany). */
  readonly expectedHead?: bigint;
  readonly events: number;
  readonly resolve: (r: AppendResult[]) => void;
  readonly reject: (e: unknown) => void;
}

/**
 * The embedded log: one SQLite file in WAL mode. Appends from one process are grouped so
 * that many concurrent appenders share one commit (one fsync), made by a BatchWriter on this
 * connection. Appends from several processes are serialised by SQLite's write lock, and every
 * check (expected revision, chain head) is made inside the write transaction, so they stay
 * correct.
 */
export class SqliteBackend implements LogBackend {
  readonly name = "sqlite";
  private readonly db: Database.Database;
  private readonly queue: PendingAppend[] = [];
  private flushScheduled = false;
  private closed = false;
  private readonly listeners = new Set<() => void>();
  private fsWatcher: FSWatcher | null = null;
  /**
   * The position the file's first event has or will have: 0, or 1 for a file written when the
   * embedded log numbered from 1. Read once, at open.
   */
  readonly firstPosition: bigint;
  /** The file's layout version (see schema.ts). */
  readonly layout: LayoutVersion;
  /**
   * The events this process committed most recently, contiguous in position, so that
   * subscribers in this process (the scheduler following its own writes) read them from memory.
   * A subscriber that follows reads a commit or two behind the head: the window is a few
   * thousand events, and one further behind reads the file, as it did past any window. Every
   * event kept here outlives the young generation: 50,000 of them held about 50 MB, all of it
   * promoted to the old generation and collected there.
   */
  private recent: StoredEvent[] = [];
  private readonly recentLimit: number;
  private trailingNotify: NodeJS.Timeout | null = null;
  private lastFileChange = 0;
  /** `PRAGMA data_version` when last looked at: another connection's commit changes it. */
  private dataVersion: unknown;
  private fileCheckScheduled = false;
  private readonly maxBatchEvents: number;
  private readonly stmts: ReturnType<SqliteBackend["prepareStatements"]>;
  /** How this file's layout stores events and streams. */
  private readonly rows: EventRows;
  /** What makes the commits (none for a reader). */
  private readonly writer: BatchWriter | null;

  constructor(readonly options: SqliteLogOptions) {
    if (!options.readonly) mkdirSync(dirname(options.path), { recursive: true });
    const settings: ConnectionSettings = {
      path: options.path,
      readonly: options.readonly ?? false,
      synchronous: options.synchronous ?? "FULL",
      busyTimeoutMs: options.busyTimeoutMs ?? 10_000,
      walAutocheckpointPages: options.walAutocheckpointPages ?? 16_384,
      walLimitBytes: options.walLimitBytes ?? WAL_LIMIT_BYTES,
      cacheMiB: options.cacheMiB ?? 64,
      mmapMiB: options.mmapMiB ?? 256,
    };
    this.db = openConnection(settings);
    this.maxBatchEvents = options.maxBatchEvents ?? 20_000;
    this.recentLimit = options.recentEvents ?? 4096;
    const layout = this.layoutOf();
    if (layout === null) {
      const value = this.layoutValue();
      this.db.close();
      throw new UnsupportedLogLayoutError(
        options.path,
        `log layout version ${String(value)} is not supported`,
      );
    }
    if (!options.readonly) {
      this.db.exec(SCHEMAS[layout]);
      this.db
        .prepare("INSERT INTO meta(key, value) VALUES ('layout_version', ?) ON CONFLICT(key) DO NOTHING")
        .run(String(layout));
      this.db.exec(SET_FIRST_POSITION);
    }
    try {
      this.firstPosition = this.readFirstPosition();
      this.rows = layout === 1 ? new RowsV1(this.db) : new RowsV2(this.db);
    } catch (error) {
      this.db.close();
      throw error;
    }
    this.layout = layout;
    this.stmts = this.prepareStatements();
    this.writer = options.readonly
      ? null
      : new BatchWriter(this.db, this.rows, this.firstPosition, {
          path: options.path,
          limitBytes: settings.walLimitBytes,
          busyTimeoutMs: settings.busyTimeoutMs,
          synchronous: settings.synchronous,
        });
    if (options.watchOtherProcesses ?? true) this.watchFile();
  }

  /** Group commits made by this log's writer (each one transaction, one fsync). */
  get commits(): number {
    return this.writer?.commits ?? 0;
  }

  /**
   * Checkpoints made by this log's writer that left the WAL ready to start again (`truncated`:
   * those of them made on the writer's thread), and those that found a reader in the way.
   */
  get walCheckpoints(): { readonly done: number; readonly busy: number; readonly truncated: number } {
    return this.writer?.walCheckpoints ?? { done: 0, busy: 0, truncated: 0 };
  }

  /**
   * The layout the file is in: the latest for a new file, layout 1 for one written before the
   * layout was recorded (an `events` table and no `layout_version`), null for a version this
   * code does not know.
   */
  private layoutOf(): LayoutVersion | null {
    const value = this.layoutValue();
    if (value === undefined) return this.hasTable("events") ? 1 : (this.options.layout ?? LATEST_LAYOUT);
    return LAYOUT_VERSIONS.find((v) => String(v) === value) ?? null;
  }

  /** The `layout_version` key of `meta`, if the file has one. */
  private layoutValue(): unknown {
    if (!this.hasTable("meta")) return undefined;
    return this.db.prepare("SELECT value FROM meta WHERE key = 'layout_version'").pluck().get();
  }

  private hasTable(name: string): boolean {
    return (
      this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(name) !==
      undefined
    );
  }

  /**
   * The file's first position, from `meta`. A reader may open a file no writer of this layout has
   * opened yet (no key): one that holds events numbers them from 1, an empty one from 0.
   */
  private readFirstPosition(): bigint {
    const value = this.hasTable("meta")
      ? this.db.prepare("SELECT value FROM meta WHERE key = 'first_position'").pluck().get()
      : undefined;
    if (value === undefined) {
      const any = this.db.prepare("SELECT EXISTS (SELECT 1 FROM events)").pluck().get();
      return BigInt(any as bigint) === 1n ? 1n : 0n;
    }
    if (typeof value !== "string" || !/^(0|[1-9][0-9]{0,17})$/.test(value))
      throw new UnsupportedLogLayoutError(
        this.options.path,
        `the log's first position ${JSON.stringify(value)} is not a position`,
      );
    return BigInt(value);
  }

  private prepareStatements() {
    const db = this.db;
    return {
      revisionOf: db.prepare("SELECT max(revision) FROM events WHERE sid = ?").pluck(),
      headPosition: db.prepare("SELECT max(position) FROM events").pluck(),
      // Changes whenever another connection (in this process or another) commits.
      dataVersion: db.prepare("PRAGMA data_version").pluck(),
    };
  }

  append(
    streamId: string,
    events: readonly PreparedEvent[],
    expected: ExpectedRevision,
  ): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new LogClosedError());
    if (this.options.readonly) return Promise.reject(new LogReadOnlyError(this.options.path));
    return this.enqueue([{ streamId, events, expected }]).then((r) => r[0] as AppendResult);
  }

  readonly appendsAtHead = true;

  /**
   * A transaction of thousands of streams costs one commit (one fsync) where batches of 200
   * cost one each, and stays far below what SQLite or its WAL mind.
   */
  readonly streamsPerAppend = 5000;

  /**
   * Appends to several streams in one transaction: all of them, or (on a conflict) none. With
   * `expectedHead`, only if the log's last event is then at that position (an append ahead of it
   * in the same group commit counts).
   */
  appendMany(
    writes: readonly PreparedWrite[],
    options?: { readonly expectedHead?: bigint },
  ): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new LogClosedError());
    if (this.options.readonly) return Promise.reject(new LogReadOnlyError(this.options.path));
    return this.enqueue(writes, options?.expectedHead);
  }

  private enqueue(writes: readonly PreparedWrite[], expectedHead?: bigint): Promise<AppendResult[]> {
    return new Promise((resolve, reject) => {
      let events = 0;
      for (const w of writes) events += w.events.length;
      this.queue.push(
        expectedHead === undefined
          ? { writes, events, resolve, reject }
          : { writes, events, resolve, reject, expectedHead },
      );
      this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  /** The appends of the next group commit: every one queued so far, up to the batch limit. */
  private takeBatch(): PendingAppend[] {
    let count = 0;
    let take = 0;
    while (
      take < this.queue.length &&
      (take === 0 || count + (this.queue[take]?.events ?? 0) <= this.maxBatchEvents)
    ) {
      count += this.queue[take]?.events ?? 0;
      take += 1;
    }
    return this.queue.splice(0, take);
  }

  /** One group commit of the appends queued so far. */
  private flush(): void {
    const writer = this.writer;
    if (!writer) return;
    const batch = this.takeBatch();
    if (batch.length === 0) return;
    const recordedAt = (this.options.clock?.() ?? new Date()).toISOString();
    let outcome: BatchOutcome;
    try {
      outcome = writer.write(batch, recordedAt);
    } catch (error) {
      for (const p of batch) p.reject(error);
      if (this.queue.length > 0) this.scheduleFlush();
      return;
    }
    this.settle(batch, outcome, recordedAt);
    if (this.queue.length > 0) this.scheduleFlush();
  }

  /** Answers each append of a group commit, keeps what it wrote for readers here, wakes subscribers. */
  private settle(batch: readonly PendingAppend[], outcome: BatchOutcome, recordedAt: string): void {
    // The stored form of each event is kept only while someone in this process watches the log
    // (a subscription): it is what that reads next. Without one, keeping it costs a writer about
    // a fifth of its speed in garbage collection, for reads that rarely come.
    const keep = this.recentLimit > 0 && this.listeners.size > 0;
    if (!keep) this.recent = [];
    const written: StoredEvent[] = [];
    let hashAt = 0;
    let prevHash = outcome.startHash;
    let committed = false;
    batch.forEach((p, i) => {
      const r = outcome.items[i];
      if (r === undefined) return;
      if (!Array.isArray(r)) {
        p.reject(
          r.kind === "log_moved"
            ? new LogMovedError(r.expected, r.actual)
            : new WrongExpectedRevisionError(r.streamId, r.expected, r.actual),
        );
        return;
      }
      committed = true;
      p.writes.forEach((w, j) => {
        const last = r[j] as AppendResult;
        const n = w.events.length;
        w.events.forEach((e, k) => {
          const hash = outcome.hashes[hashAt++] as string;
          // (Most writes hold one event: its revision and position are the write's last.)
          const back = n - 1 - k;
          if (keep)
            written.push({
              streamId: w.streamId,
              revision: back === 0 ? last.nextExpectedRevision : last.nextExpectedRevision - BigInt(back),
              position: back === 0 ? last.position : last.position - BigInt(back),
              type: e.type,
              dataJson: e.dataJson,
              metadata: {
                eventId: e.eventId,
                actor: e.actor,
                causationId: e.causationId,
                correlationId: e.correlationId,
                schemaVersion: e.schemaVersion,
                recordedAt,
                prevHash,
                hash,
              },
              parsed: e.data,
            });
          prevHash = hash;
        });
      });
      p.resolve(r);
    });
    if (keep) this.remember(written);
    if (committed) this.notify();
  }

  async readStream(streamId: string, fromRevision: bigint, maxCount: number): Promise<StoredEvent[]> {
    this.ensureOpen();
    return this.rows.readStream(streamId, fromRevision, maxCount);
  }

  /** Keeps committed events in memory while they extend the remembered run without a gap. */
  private remember(events: StoredEvent[]): void {
    if (events.length === 0 || this.recentLimit === 0) return;
    const last = this.recent.at(-1);
    if (!last || last.position + 1n !== events[0]?.position) this.recent = [];
    for (const e of events) this.recent.push(e);
    if (this.recent.length > this.recentLimit * 1.5) this.recent = this.recent.slice(-this.recentLimit);
  }

  async readAll(fromPosition: bigint, maxCount: number): Promise<StoredEvent[]> {
    this.ensureOpen();
    const first = this.recent[0];
    if (first && fromPosition >= first.position) {
      const offset = Number(fromPosition - first.position);
      if (offset < this.recent.length) return this.recent.slice(offset, offset + maxCount);
    }
    return this.rows.readAll(fromPosition, maxCount);
  }

  async streamRevision(streamId: string): Promise<StreamRevision> {
    this.ensureOpen();
    const sid = this.rows.sidOf(streamId);
    if (sid === undefined) return "no_stream";
    return (this.stmts.revisionOf.get(sid) as bigint | null) ?? "no_stream";
  }

  async headPosition(): Promise<bigint> {
    this.ensureOpen();
    return (this.stmts.headPosition.get() as bigint | null) ?? -1n;
  }

  watch(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Counts per table, for `chronolog log stats` and benchmarks. */
  stats(): { events: bigint; streams: bigint; pageCount: bigint; pageSize: bigint } {
    const one = (sql: string) => this.db.prepare(sql).pluck().get() as bigint;
    return {
      events: one("SELECT count(*) FROM events"),
      streams: one("SELECT count(*) FROM streams"),
      pageCount: this.db.pragma("page_count", { simple: true }) as bigint,
      pageSize: this.db.pragma("page_size", { simple: true }) as bigint,
    };
  }

  /** Makes every append queued so far, then closes (a second call waits for the first). */
  close(): Promise<void> {
    this.closing ??= this.closeOnce();
    return this.closing;
  }

  private closing: Promise<void> | null = null;

  private async closeOnce(): Promise<void> {
    while (this.queue.length > 0) this.flush();
    this.closed = true;
    // The helper thread's connection closes first: the last one to close removes the WAL.
    await this.writer?.close();
    this.fsWatcher?.close();
    if (this.trailingNotify) clearTimeout(this.trailingNotify);
    this.listeners.clear();
    this.db.close();
  }

  private notify(): void {
    for (const l of this.listeners) l();
  }

  /**
   * The WAL file changes before the writer publishes the commit in the shared index, so a read
   * made at once may not see it yet: look now, then again every 10 ms until 50 ms have passed
   * since the file last changed (the last change's commit is then visible). Subscribers are woken
   * only when another connection has committed: this connection's own commits change the file
   * too, and its subscribers have already heard of those.
   */
  private notifyFromFile(): void {
    this.lastFileChange = performance.now();
    // A commit writes the file many times: one look per turn of the event loop is enough.
    if (!this.fileCheckScheduled && this.listeners.size > 0) {
      this.fileCheckScheduled = true;
      setImmediate(() => {
        this.fileCheckScheduled = false;
        this.notifyIfOthersCommitted();
      });
    }
    if (this.trailingNotify) return;
    const later = (delay: number) => {
      this.trailingNotify = setTimeout(() => {
        this.notifyIfOthersCommitted();
        if (performance.now() - this.lastFileChange < 50) later(10);
        else this.trailingNotify = null;
      }, delay);
      this.trailingNotify.unref();
    };
    later(2);
  }

  private notifyIfOthersCommitted(): void {
    if (this.closed || this.listeners.size === 0) return;
    let version: unknown;
    try {
      version = this.stmts.dataVersion.get();
    } catch {
      this.notify(); // cannot tell (the file is busy): let the subscribers look
      return;
    }
    if (version === this.dataVersion) return;
    this.dataVersion = version;
    this.notify();
  }

  /** Another process's commit changes the WAL file: wake subscribers within milliseconds. */
  private watchFile(): void {
    const file = basename(this.options.path);
    try {
      this.fsWatcher = watchFs(dirname(this.options.path), { persistent: false }, (_event, name) => {
        if (name === `${file}-wal` || name === file) this.notifyFromFile();
      });
      this.fsWatcher.on("error", () => {
        this.fsWatcher?.close();
        this.fsWatcher = null;
      });
    } catch {
      this.fsWatcher = null; // subscriptions fall back to polling
    }
  }

  private ensureOpen(): void {
    if (this.closed) throw new LogClosedError();
  }
}
