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
import { type CopyResult, WalCopier } from "./wal-copier.js";

/** One stream's part of an append, as the writer needs it (no events: a check, see PreparedWrite). */
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
  /** The connection's `synchronous` setting, which the helper thread's connection copies. */
  readonly synchronous: string;
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
/** Past this many times its limit, the WAL is truncated at once, whatever the helper does. */
const WAL_HARD_FACTOR = 4;

/**
 * The write side of the embedded log: one connection that makes each group commit in one
 * transaction, every check (expected revision, chain head) inside it, so that appends from
 * several processes to one file stay correct.
 */
export class BatchWriter {
  /** Group commits made (each one transaction, one fsync). */
  commits = 0;
  /**
   * Checkpoints that left the WAL ready to start again from its beginning (`done`: copied by the
   * helper thread and finished here, or truncating ones), those that found a reader in the way
   * (`busy`), and how many of the done ones were truncating checkpoints on this thread.
   */
  readonly walCheckpoints = { done: 0, busy: 0, truncated: 0 };
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
  /** Whether the helper thread is copying the WAL into the database. */
  private copying = false;
  private readonly copier: WalCopier;

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
    this.copier = new WalCopier(wal.path, wal.synchronous, (result) => this.copied(result));
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

  /** Stops looking at the WAL and ends the helper thread (after a copy under way). */
  close(): Promise<void> {
    this.closed = true;
    if (this.walIdle) clearTimeout(this.walIdle);
    return this.copier.close();
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
        if (w.events.length > 0) targets.push({ w, sid, last });
        // A write of no events is a check: compared above, nothing written. What it found is
        // the stream's revision now (a write later in this commit updates it): kept, as a
        // write's is, the scheduler checks its tasks' streams at every dispatch.
        else if (sid !== undefined && last !== null) {
          this.sids.set(w.streamId, sid);
          if (!this.writtenRevisions.has(w.streamId)) this.writtenRevisions.set(w.streamId, last);
        }
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
   * Bounds the WAL file. SQLite's own checkpoints run on the writer's thread, after a commit,
   * and are passive: a reader in another process (a `chronolog tail`, a `why`) that holds an
   * old snapshot keeps them from finishing, and the WAL only starts again from its beginning
   * once every frame is in the database. So while appends come (at most every
   * WAL_LOOK_EVERY_MS) the writer looks at the WAL's size and, past the limit:
   *
   * 1. asks a helper thread to copy the frames into the database (passive checkpoints on a
   *    connection of its own: no lock the writer needs, so commits go on meanwhile, and the
   *    several milliseconds of copying and syncing are not spent on the writer's thread);
   * 2. when the helper is done, makes one more passive checkpoint here, which copies the few
   *    frames committed during the copy: every frame is then in the database, and the next
   *    commit starts the WAL again from its beginning (cutting the file back to
   *    `journal_size_limit`), unless a reader still uses it.
   *
   * A reader in the way makes a copy stop short; the next look asks again. If the WAL still
   * grows past WAL_HARD_FACTOR times the limit, or the helper cannot run, or appends have
   * stopped (a look once more WAL_IDLE_MS after the last commit), the writer makes a TRUNCATE
   * checkpoint itself: it copies every frame, waits a little (WAL_CHECKPOINT_WAIT_MS) for
   * readers to move off the WAL, and truncates it to nothing; a reader still in the way makes
   * it give up (SQLITE_BUSY) with the frames copied so far, and a look WAL_LOOK_AGAIN_MS later
   * tries again. (A RESTART checkpoint, which leaves the file at `journal_size_limit` to be
   * overwritten, let the WAL grow to 25 MiB with a 2 MiB limit beside a reader holding read
   * transactions 20 ms out of every 25, where TRUNCATE kept it near 11 MiB: test/wal.test.ts.)
   */
  private keepWalSmall(idle: boolean): void {
    if (this.closed) return;
    const now = Date.now();
    if (!idle) {
      if (this.walIdle) clearTimeout(this.walIdle);
      this.lookWhileIdle(WAL_IDLE_MS);
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
    if (idle || size > WAL_HARD_FACTOR * this.wal.limitBytes || !this.copier.usable) {
      this.truncate(now, idle);
    } else if (!this.copying) {
      this.copying = true;
      this.copier.copy();
    }
  }

  /** A look at the WAL `ms` from now, for when no commit brings one. */
  private lookWhileIdle(ms: number): void {
    this.walIdle = setTimeout(() => {
      this.walIdle = null;
      this.keepWalSmall(true);
    }, ms);
    this.walIdle.unref();
  }

  /** With no commit to bring the next look, one WAL_LOOK_AGAIN_MS from now. */
  private lookAgainWhileIdle(): void {
    if (this.walIdle || this.closed) return;
    this.lookWhileIdle(WAL_LOOK_AGAIN_MS);
  }

  /** The helper thread's copy is over (null: the helper failed, and copies stop). */
  private copied(result: CopyResult | null): void {
    this.copying = false;
    if (this.closed || result === null) return;
    if (result.checkpointed < result.log) {
      this.walCheckpoints.busy += 1;
      return;
    }
    // What was committed while the helper copied: a few frames, copied here, between commits.
    try {
      const [r] = this.db.pragma("wal_checkpoint(PASSIVE)") as Array<{
        busy: bigint | number;
        log: bigint | number;
        checkpointed: bigint | number;
      }>;
      if (r && Number(r.busy) === 0 && Number(r.checkpointed) === Number(r.log)) {
        this.walCheckpoints.done += 1;
      } else this.walCheckpoints.busy += 1;
    } catch {
      // A statement of this connection is still reading: the next look asks again.
      this.walCheckpoints.busy += 1;
    }
  }

  private truncate(now: number, idle: boolean): void {
    this.db.pragma(`busy_timeout = ${WAL_CHECKPOINT_WAIT_MS}`);
    try {
      const [r] = this.db.pragma("wal_checkpoint(TRUNCATE)") as Array<{ busy: bigint | number }>;
      if (r && Number(r.busy) !== 0) {
        this.walCheckpoints.busy += 1;
        // Sooner than usual: a reader that was in the way is usually gone a moment later.
        this.lastWalLook = now - WAL_LOOK_EVERY_MS + WAL_LOOK_AGAIN_MS;
        if (idle) this.lookAgainWhileIdle();
      } else {
        this.walCheckpoints.done += 1;
        this.walCheckpoints.truncated += 1;
      }
    } catch {
      // A statement of this connection is still reading: the next look tries again.
      this.walCheckpoints.busy += 1;
      if (idle) this.lookAgainWhileIdle();
    } finally {
      this.db.pragma(`busy_timeout = ${this.wal.busyTimeoutMs}`);
    }
  }
}
