import { readdir, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { RecordSource } from "./event-reader.js";
import { checkIndex } from "./index-check.js";
import { IndexFileError, loadIndex, saveIndex } from "./index-file.js";
import type { RecordDecider } from "./record-decider.js";

export type Notice = (level: "info" | "warn", message: string, fields: Record<string, unknown>) => void;

/** Says a client's notices on stderr, one line each. */
export const stderrNotice: Notice = (level, message, fields) => {
  process.stderr.write(`chronolog kafka log ${level}: ${message} ${JSON.stringify(fields)}\n`);
};

/** A checkpoint on close is written only if the log moved on at least this many offsets since the last. */
const CLOSE_SAVE_RECORDS = 1000;

export interface IndexCheckpointsOptions {
  readonly path: string;
  readonly topic: string;
  readonly decider: RecordDecider;
  /** The partition's first and end offsets. */
  readonly offsets: () => Promise<{ low: bigint; high: bigint }>;
  readonly source: RecordSource;
  readonly notice: Notice;
  readonly saveMs: number;
}

/**
 * A client's checkpoints of its index, in one file: read and checked against the topic when
 * the client starts (see checkIndex), written while the log moves on and when the client
 * closes. One is written at a time; a file is replaced whole (see saveIndex).
 */
export class IndexCheckpoints {
  private saving: Promise<void> | null = null;
  /** The next offset of the checkpoint last read or written, or null if there is none. */
  private saved: bigint | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly o: IndexCheckpointsOptions) {}

  /**
   * Starts the decider from the checkpoint in the file, if there is one and it fits the topic.
   * Returns whether it did; a checkpoint refused is said (with its reason) and left for the
   * next one written to replace.
   */
  async resume(): Promise<boolean> {
    const { path, topic, notice } = this.o;
    const started = performance.now();
    await removeLeftovers(path);
    let loaded: Awaited<ReturnType<typeof loadIndex>>;
    try {
      loaded = await loadIndex(path, topic);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
      const reason = error instanceof IndexFileError ? error.message : String(error);
      notice("warn", "index checkpoint refused; reading the topic from offset 0", { path, topic, reason });
      return false;
    }
    const reason = await checkIndex(loaded, await this.o.offsets(), this.o.source);
    if (reason) {
      notice("warn", "index checkpoint refused; reading the topic from offset 0", { path, topic, reason });
      return false;
    }
    this.o.decider.restore(loaded.index, loaded.state);
    this.saved = loaded.state.next;
    notice("info", "index checkpoint read; reading the topic past it", {
      path,
      topic,
      nextOffset: String(loaded.state.next),
      events: loaded.index.eventCount,
      ms: Math.round(performance.now() - started),
    });
    return true;
  }

  /** Writes a checkpoint every `saveMs` while the log moves on. */
  start(): void {
    this.timer = setInterval(() => {
      if (this.saved !== this.o.decider.nextOffset) void this.save().catch(() => {});
    }, this.o.saveMs);
    this.timer.unref();
  }

  /** Writes a checkpoint of the index as it is now (after one under way). */
  async save(): Promise<void> {
    while (this.saving) await this.saving.catch(() => {});
    const { path, topic, decider, notice } = this.o;
    this.saving = saveIndex(path, topic, decider).then(
      (r) => {
        this.saved = r.nextOffset;
      },
      (error: unknown) => {
        notice("warn", "index checkpoint not written", { path, topic, reason: (error as Error).message });
        throw error;
      },
    );
    try {
      await this.saving;
    } finally {
      this.saving = null;
    }
  }

  /** Stops the timer and writes a last checkpoint if the log moved on enough since the last. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const next = this.o.decider.nextOffset;
    if (next === 0n || next === this.saved) return;
    if (this.saved !== null && next - this.saved < CLOSE_SAVE_RECORDS) return;
    await this.save().catch(() => {});
  }
}

/** Removes what writes of a checkpoint to `path` left behind in processes that died mid-way. */
async function removeLeftovers(path: string): Promise<void> {
  const prefix = `${basename(path)}.`;
  const names = await readdir(dirname(path)).catch(() => [] as string[]);
  for (const name of names) {
    const m = /^(\d+)\.\d+\.tmp$/.exec(name.startsWith(prefix) ? name.slice(prefix.length) : "");
    if (m && !alive(Number(m[1]))) await rm(join(dirname(path), name), { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
