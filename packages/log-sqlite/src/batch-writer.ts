import { statSync } from "node:fs";
import {
  type AppendResult,
  type ExpectedRevision,
  GENESIS_HASH,
  hashPrepared,
  type PreparedFields,
  revisionMatches,
  type StreamRevision,
} from "@chronolog/log";
import type Database from "better-sqlite3";
import type { EventRows } from "./rows.js";

/** One stream's part of an append, as the writer needs it. */
export interface ItemWrite {
  readonly streamId: string;
  readonly expected: ExpectedRevision;
  readonly events: readonly PreparedFields[];
}

/** One append: one stream, or several written atomically. */
export interface WriteItem {
  readonly writes: readonly ItemWrite[];
  /** The position the log's last event must be at for the append to be made. */
  readonly expectedHead?: bigint;
}

/** Why an append of a group commit was not made (the others were). */
export type Refusal =
  | {
      readonly kind: "wrong_expected_revision";
      readonly streamId: string;
      readonly expected: ExpectedRevision;
      readonly actual: StreamRevision;
    }
  | { readonly kind: "log_moved"; readonly expected: bigint; readonly actual: bigint };

/** What one group commit made of its appends. */
export interface BatchOutcome {
  /** Per append, in order: the last revision and position of each of its writes, or its refusal. */
  readonly items: ReadonlyArray<AppendResult[] | Refusal>;
  /** The hash of the event before the first one written. */
  readonly startHash: string;
  /** The hash of every event written, in position order. */
  readonly hashes: readonly string[];
}

/** How the writer keeps the WAL file small (see keepWalSmall). */
export interface WalOptions {
  readonly path: string;
  readonly limitBytes: number;
  readonly busyTimeoutMs: number;
}

/**
 * Most streams each of the writer's caches holds. They only spare lookups, and a scheduler writes
 * a stream per task instance, most of them never again: past this they are emptied.
 */
const CACHE_LIMIT = 65_536;
/** Shortest time between two looks at the WAL's size while appends come. */
const WAL_LOOK_EVERY_MS = 200;
/** How long after the last commit the WAL is looked at once more, when appends stop. */
const WAL_IDLE_MS = 1000;
/** How soon the WAL is looked at again after a checkpoint a reader was in the way of. */
const WAL_LOOK_AGAIN_MS = 50;
/** How long a checkpoint waits for readers in other processes before giving up. */
const WAL_CHECKPOINT_WAIT_MS = 50;

/**
 * The write side of the embedded log: one connection that makes each group commit in one
 * transaction, every check (expected revision, chain head) inside it, so that appends from
 * several processes to one file stay correct.
 */
export class BatchWriter {
  /** Group commits made (each one transaction, one fsync). */
  commits = 0;
  /** Truncating checkpoints made, and those that found a reader in the way. */
  readonly walCheckpoints = { done: 0, busy: 0 };
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
  private readonly stmts;
  private readonly transaction: Database.Transaction<
    (items: readonly WriteItem[], recordedAt: string) => BatchOutcome
  >;
  private lastWalLook = 0;
  private walIdle: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly db: Database.Database,
    private readonly rows: EventRows,
    /** The position the file's first event has or will have. */
    private readonly firstPosition: bigint,
    private readonly wal: WalOptions,
  ) {
    this.stmts = {
      revisionOf: db.prepare("SELECT max(revision) FROM events WHERE sid = ?").pluck(),
      head: db.prepare("SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"),
    };
    this.transaction = db.transaction((items: readonly WriteItem[], recordedAt: string) =>
      this.inTransaction(items, recordedAt),
    );
  }

  /**
   * Makes one group commit of `items`, its events recorded at `recordedAt`. A refused append
   * writes nothing and the others are made; a failure of the transaction itself (the disk, a
   * lock held too long) makes none and is thrown.
   */
  write(items: readonly WriteItem[], recordedAt: string): BatchOutcome {
    let outcome: BatchOutcome;
    try {
      outcome = this.transaction.immediate(items, recordedAt);
    } catch (error) {
      // The transaction rolled back: ids cached during it may name streams that were not kept.
      this.sids.clear();
      this.rows.rolledBack();
      this.revisions.clear();
      this.knownHead = null;
      throw error;
    }
    this.commits += 1;
    if (this.revisions.size + this.writtenRevisions.size > CACHE_LIMIT) this.revisions.clear();
    if (this.sids.size > CACHE_LIMIT) this.sids.clear();
    for (const [stream, revision] of this.writtenRevisions) this.revisions.set(stream, revision);
    this.keepWalSmall(false);
    return outcome;
  }

  close(): void {
    this.closed = true;
    if (this.walIdle) clearTimeout(this.walIdle);
  }

  private inTransaction(items: readonly WriteItem[], recordedAt: string): BatchOutcome {
    this.writtenRevisions = new Map();
    const head = this.stmts.head.get() as { position: bigint; hash: Buffer } | undefined;
    // Before the first event, the chain stands just before the file's first position.
    const beforeFirst = this.firstPosition - 1n;
    // Another process wrote since this connection's last commit: its cached revisions are stale.
    if ((head?.position ?? beforeFirst) !== this.knownHead) this.revisions.clear();
    const startHash = head ? head.hash.toString("hex") : GENESIS_HASH;
    const chain = {
      position: head?.position ?? beforeFirst,
      prevHash: startHash,
      prevHashBytes: head ? head.hash : Buffer.alloc(0),
    };
    const storedAt = this.rows.commitTime(recordedAt);
    const hashes: string[] = [];
    const outcomes = items.map((item): AppendResult[] | Refusal => {
      if (item.expectedHead !== undefined) {
        // An empty log's head is -1, whichever position its first event will take.
        const actual = chain.position === beforeFirst ? -1n : chain.position;
        if (actual !== item.expectedHead) return { kind: "log_moved", expected: item.expectedHead, actual };
      }
      // Every expected revision of the append is checked before any of its events is written.
      const targets: Array<{ w: ItemWrite; sid: bigint | undefined; last: bigint | null }> = [];
      for (const w of item.writes) {
        const sid = this.sids.get(w.streamId) ?? this.rows.sidOf(w.streamId);
        const last =
          sid === undefined
            ? null
            : (this.writtenRevisions.get(w.streamId) ??
              this.revisions.get(w.streamId) ??
              (this.stmts.revisionOf.get(sid) as bigint | null));
        const actual: StreamRevision = last ?? "no_stream";
        if (!revisionMatches(w.expected, actual))
          return { kind: "wrong_expected_revision", streamId: w.streamId, expected: w.expected, actual };
        targets.push({ w, sid, last });
      }
      return targets.map(({ w, sid, last }) =>
        this.insertEvents(w, sid, last, chain, recordedAt, storedAt, hashes),
      );
    });
    this.knownHead = chain.position;
    return { items: outcomes, startHash, hashes };
  }

  private insertEvents(
    w: ItemWrite,
    knownSid: bigint | undefined,
    last: bigint | null,
    chain: { position: bigint; prevHash: string; prevHashBytes: Buffer },
    recordedAt: string,
    /** `recordedAt` as the layout stores it. */
    storedAt: unknown,
    hashes: string[],
  ): AppendResult {
    // (A stream made by a transaction that rolls back is forgotten with every other cached id.)
    const sid = knownSid ?? this.rows.insertStream(w.streamId);
    this.sids.set(w.streamId, sid);
    let revision = last ?? -1n;
    for (const e of w.events) {
      chain.position += 1n;
      revision += 1n;
      const position = chain.position;
      const hash = hashPrepared(chain.prevHash, e, { streamId: w.streamId, revision, position, recordedAt });
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
      hashes.push(hash);
      chain.prevHash = hash;
      chain.prevHashBytes = hashBytes;
    }
    this.writtenRevisions.set(w.streamId, revision);
    return { nextExpectedRevision: revision, position: chain.position };
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
    if (this.closed) return;
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
      size = statSync(`${this.wal.path}-wal`).size;
    } catch {
      return; // no WAL file
    }
    if (size <= this.wal.limitBytes) return;
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
      this.db.pragma(`busy_timeout = ${this.wal.busyTimeoutMs}`);
    }
  }
}
