import { type FSWatcher, mkdirSync, statSync, watch as watchFs } from "node:fs";
import { basename, dirname } from "node:path";
import {
  type AppendResult,
  type ExpectedRevision,
  GENESIS_HASH,
  hashPrepared,
  type LogBackend,
  LogClosedError,
  LogMovedError,
  LogReadOnlyError,
  type PreparedEvent,
  type PreparedWrite,
  revisionMatches,
  type StoredEvent,
  type StreamRevision,
  storePrepared,
  UnsupportedLogLayoutError,
  WrongExpectedRevisionError,
} from "@chronolog/log";
import Database from "better-sqlite3";
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
  /** Page cache size in MiB. */
  readonly cacheMiB?: number;
  /** Events kept in memory after commit for readers in this process (default 50,000). */
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
/** Shortest time between two looks at the WAL's size while appends come. */
const WAL_LOOK_EVERY_MS = 200;
/** How long after the last commit the WAL is looked at once more, when appends stop. */
const WAL_IDLE_MS = 1000;
/** How soon the WAL is looked at again after a checkpoint a reader was in the way of. */
const WAL_LOOK_AGAIN_MS = 50;
/** How long a checkpoint waits for readers in other processes before giving up. */
const WAL_CHECKPOINT_WAIT_MS = 50;

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
 * that many concurrent appenders share one commit (one fsync). Appends from several
 * processes are serialised by SQLite's write lock, and every check (expected revision,
 * chain head) is made inside the write transaction, so they stay correct.
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
   * Stream name -> interned id, for streams known to be committed. Safe to keep across
   * transactions and processes: a stream's id never changes and streams are never removed.
   */
  private readonly sids = new Map<string, bigint>();
  /**
   * Stream name -> last revision, as of `knownHead`: trusted only while the log's head is still
   * the one this connection last committed (no other process has written since).
   */
  private readonly revisions = new Map<string, bigint>();
  /** Revisions written by the transaction under way, kept in `revisions` once it commits. */
  private writtenRevisions = new Map<string, bigint>();
  private knownHead: bigint | null = null;
  /**
   * The position the file's first event has or will have: 0, or 1 for a file written when the
   * embedded log numbered from 1. Read once, at open.
   */
  readonly firstPosition: bigint;
  /**
   * The events this connection committed most recently, contiguous in position, so that
   * subscribers in this process (the scheduler following its own writes) read them from memory.
   */
  private recent: StoredEvent[] = [];
  /** Events inserted by the transaction under way. */
  private written: StoredEvent[] = [];
  private readonly recentLimit: number;
  private trailingNotify: NodeJS.Timeout | null = null;
  private lastFileChange = 0;
  /** `PRAGMA data_version` when last looked at: another connection's commit changes it. */
  private dataVersion: unknown;
  private fileCheckScheduled = false;
  /** Group commits made by this connection (each one transaction, one fsync). */
  commits = 0;
  /** Truncating checkpoints made by this connection, and those that found a reader in the way. */
  readonly walCheckpoints = { done: 0, busy: 0 };
  private lastWalLook = 0;
  private walIdle: NodeJS.Timeout | null = null;
  private readonly maxBatchEvents: number;
  private readonly stmts: ReturnType<SqliteBackend["prepareStatements"]>;
  /** How this file's layout stores events and streams. */
  private readonly rows: EventRows;
  private readonly writeBatch: Database.Transaction<
    (batch: PendingAppend[]) => Array<AppendResult[] | Error>
  >;

  constructor(readonly options: SqliteLogOptions) {
    if (!options.readonly) mkdirSync(dirname(options.path), { recursive: true });
    this.db = new Database(options.path, {
      readonly: options.readonly ?? false,
      fileMustExist: options.readonly ?? false,
      timeout: options.busyTimeoutMs ?? 10_000,
    });
    this.db.defaultSafeIntegers(true);
    this.maxBatchEvents = options.maxBatchEvents ?? 20_000;
    this.recentLimit = options.recentEvents ?? 50_000;
    this.db.pragma(`cache_size = -${(options.cacheMiB ?? 64) * 1024}`);
    this.db.pragma("temp_store = MEMORY");
    // Each event names its stream by id (events.sid REFERENCES streams). The writer inserts the
    // stream's row first, in the same transaction, and triggers refuse removing one, so checking
    // the reference on every insert (a lookup in streams per event, about 7% of an append here)
    // would only repeat what the transaction already guarantees.
    this.db.pragma("foreign_keys = OFF");
    this.db.pragma("mmap_size = 268435456");
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
      // Pages of 8 KiB, measured here on a million events over 1,000 streams: about 1.3x
      // faster than 4 KiB, and 5% faster than 16 KiB, whose commits write twice the bytes for
      // each (stream, revision) index page they touch. It only takes effect on a new file,
      // before the first table exists; a file keeps the page size it was made with.
      this.db.pragma("page_size = 8192");
      this.db.pragma("journal_mode = WAL");
      this.db.pragma(`synchronous = ${options.synchronous ?? "FULL"}`);
      this.db.pragma(`wal_autocheckpoint = ${options.walAutocheckpointPages ?? 16_384}`);
      // A WAL that was reset is also cut back to this size (it is otherwise kept at its largest).
      this.db.pragma(`journal_size_limit = ${options.walLimitBytes ?? WAL_LIMIT_BYTES}`);
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
    this.writeBatch = this.db.transaction((batch: PendingAppend[]) => this.writeBatchInTransaction(batch));
    if (options.watchOtherProcesses ?? true) this.watchFile();
  }

  /** The file's layout version (see schema.ts). */
  readonly layout: LayoutVersion;

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
      head: db.prepare("SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"),
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
      const events = writes.reduce((n, w) => n + w.events.length, 0);
      this.queue.push({
        writes,
        events,
        resolve,
        reject,
        ...(expectedHead !== undefined ? { expectedHead } : {}),
      });
      this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  /** One group commit: every append queued so far (up to the batch limit) in one transaction. */
  private flush(): void {
    this.flushScheduled = false;
    let count = 0;
    let take = 0;
    while (
      take < this.queue.length &&
      (take === 0 || count + (this.queue[take]?.events ?? 0) <= this.maxBatchEvents)
    ) {
      count += this.queue[take]?.events ?? 0;
      take += 1;
    }
    const batch = this.queue.splice(0, take);
    if (batch.length === 0) return;
    let results: Array<AppendResult[] | Error>;
    try {
      results = this.writeBatch.immediate(batch);
      this.commits += 1;
      this.remember(this.written);
      for (const [stream, revision] of this.writtenRevisions) this.revisions.set(stream, revision);
      this.written = [];
    } catch (error) {
      // The transaction rolled back: ids cached during it may name streams that were not kept.
      this.sids.clear();
      this.rows.rolledBack();
      this.revisions.clear();
      this.knownHead = null;
      for (const p of batch) p.reject(error);
      if (this.queue.length > 0) this.scheduleFlush();
      return;
    }
    let committed = false;
    batch.forEach((p, i) => {
      const r = results[i];
      if (r instanceof Error) p.reject(r);
      else if (r) {
        committed = true;
        p.resolve(r);
      }
    });
    if (this.queue.length > 0) this.scheduleFlush();
    if (committed) this.notify();
    this.keepWalSmall(false);
  }

  /**
   * Bounds the WAL file. SQLite's own checkpoints are passive: a reader in another process (a
   * `chronolog tail`, a `why`) that holds an old snapshot keeps them from finishing, and the WAL
   * is only ever reused from its start, never shrunk, until the last connection closes. So
   * while appends come (at most every WAL_LOOK_EVERY_MS), and once more when they stop, the
   * writer looks at the WAL's size and, past the limit, makes a TRUNCATE checkpoint: it copies
   * every frame into the database, waits a little (WAL_CHECKPOINT_WAIT_MS) for readers to move
   * off the WAL, and truncates it to nothing. A reader still in the way makes it give up
   * (SQLITE_BUSY) with the frames copied so far; a look WAL_LOOK_AGAIN_MS later tries again.
   * (A RESTART checkpoint, which leaves the file at `journal_size_limit` to be overwritten,
   * let the WAL grow to 25 MiB with a 2 MiB limit beside a reader holding read transactions
   * 20 ms out of every 25, where TRUNCATE kept it near 11 MiB: test/wal.test.ts.)
   */
  private keepWalSmall(idle: boolean): void {
    if (this.closed || this.options.readonly) return;
    const now = Date.now();
    if (!idle) {
      if (this.walIdle) clearTimeout(this.walIdle);
      this.walIdle = setTimeout(() => {
        this.walIdle = null;
        this.keepWalSmall(true);
      }, WAL_IDLE_MS);
      this.walIdle.unref();
      if (now - this.lastWalLook < WAL_LOOK_EVERY_MS) return;
    }
    this.lastWalLook = now;
    let size: number;
    try {
      size = statSync(`${this.options.path}-wal`).size;
    } catch {
      return; // no WAL file
    }
    if (size <= (this.options.walLimitBytes ?? WAL_LIMIT_BYTES)) return;
    this.db.pragma(`busy_timeout = ${WAL_CHECKPOINT_WAIT_MS}`);
    try {
      const [r] = this.db.pragma("wal_checkpoint(TRUNCATE)") as Array<{ busy: bigint | number }>;
      if (r && Number(r.busy) !== 0) {
        this.walCheckpoints.busy += 1;
        // Sooner than usual: a reader that was in the way is usually gone a moment later.
        this.lastWalLook = now - WAL_LOOK_EVERY_MS + WAL_LOOK_AGAIN_MS;
      } else this.walCheckpoints.done += 1;
    } catch {
      // A statement of this connection is still reading: the next look tries again.
      this.walCheckpoints.busy += 1;
    } finally {
      this.db.pragma(`busy_timeout = ${this.options.busyTimeoutMs ?? 10_000}`);
    }
  }

  private writeBatchInTransaction(batch: PendingAppend[]): Array<AppendResult[] | Error> {
    this.written = [];
    this.writtenRevisions = new Map();
    const head = this.stmts.head.get() as { position: bigint; hash: Buffer } | undefined;
    // Before the first event, the chain stands just before the file's first position.
    const beforeFirst = this.firstPosition - 1n;
    // Another process wrote since this connection's last commit: its cached revisions are stale.
    if ((head?.position ?? beforeFirst) !== this.knownHead) this.revisions.clear();
    const chain = {
      position: head?.position ?? beforeFirst,
      prevHash: head ? head.hash.toString("hex") : GENESIS_HASH,
      prevHashBytes: head ? head.hash : Buffer.alloc(0),
    };
    const recordedAt = (this.options.clock?.() ?? new Date()).toISOString();
    const storedAt = this.rows.commitTime(recordedAt);
    // The stored form of each event is kept only while someone in this process watches the log
    // (a subscription): it is what that reads next. Without one, keeping it costs a writer about
    // a fifth of its speed in garbage collection, for reads that rarely come.
    const keep = this.recentLimit > 0 && this.listeners.size > 0;
    if (!keep) this.recent = [];
    const results = batch.map((p) => {
      if (p.expectedHead !== undefined) {
        // An empty log's head is -1, whichever position its first event will take.
        const actual = chain.position === beforeFirst ? -1n : chain.position;
        if (actual !== p.expectedHead) return new LogMovedError(p.expectedHead, actual);
      }
      // Every expected revision of the append is checked before any of its events is written.
      const targets: Array<{ w: PreparedWrite; sid: bigint | undefined; last: bigint | null }> = [];
      for (const w of p.writes) {
        const sid = this.sids.get(w.streamId) ?? this.rows.sidOf(w.streamId);
        const last =
          sid === undefined
            ? null
            : (this.writtenRevisions.get(w.streamId) ??
              this.revisions.get(w.streamId) ??
              (this.stmts.revisionOf.get(sid) as bigint | null));
        const actual: StreamRevision = last ?? "no_stream";
        if (!revisionMatches(w.expected, actual))
          return new WrongExpectedRevisionError(w.streamId, w.expected, actual);
        targets.push({ w, sid, last });
      }
      return targets.map(({ w, sid, last }) =>
        this.insertEvents(w, sid, last, chain, recordedAt, storedAt, keep),
      );
    });
    this.knownHead = chain.position;
    return results;
  }

  private insertEvents(
    w: PreparedWrite,
    knownSid: bigint | undefined,
    last: bigint | null,
    chain: { position: bigint; prevHash: string; prevHashBytes: Buffer },
    recordedAt: string,
    /** `recordedAt` as the layout stores it. */
    storedAt: unknown,
    /** Whether to keep each event's stored form for readers in this process. */
    keep: boolean,
  ): AppendResult {
    let sid = knownSid;
    if (sid === undefined) sid = this.rows.insertStream(w.streamId);
    else this.sids.set(w.streamId, sid);
    let revision = last ?? -1n;
    for (const e of w.events) {
      chain.position += 1n;
      revision += 1n;
      const position = chain.position;
      const at = { streamId: w.streamId, revision, position, recordedAt };
      const stored = keep ? storePrepared(chain.prevHash, e, at) : null;
      const hash = stored ? stored.metadata.hash : hashPrepared(chain.prevHash, e, at);
      const hashBytes = Buffer.from(hash, "hex");
      this.rows.insertEvent({
        position,
        sid,
        revision,
        event: e,
        recordedAt: storedAt,
        hash: hashBytes,
        prevHash: chain.prevHashBytes,
      });
      if (stored) this.written.push(stored);
      chain.prevHash = hash;
      chain.prevHashBytes = hashBytes;
    }
    this.writtenRevisions.set(w.streamId, revision);
    return { nextExpectedRevision: revision, position: chain.position };
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

  async close(): Promise<void> {
    if (this.closed) return;
    while (this.queue.length > 0) this.flush();
    this.closed = true;
    if (this.walIdle) clearTimeout(this.walIdle);
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
