import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** What one copy by the helper thread did. */
export interface CopyResult {
  /** Frames in the WAL when the last round began, and how many of them are in the database. */
  readonly log: number;
  readonly checkpointed: number;
}

/**
 * The helper thread's program (CommonJS, run by `new Worker(..., { eval: true })`, so that it
 * works the same from the compiled package and from its sources). On each request it makes
 * passive checkpoints on its own connection, a round after another while the previous round
 * found new frames (at most three): each copies the WAL's frames into the database and syncs
 * it, without the write lock, so the writer's commits go on meanwhile.
 */
const HELPER = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma("busy_timeout = 0");
db.pragma("synchronous = " + workerData.synchronous);
db.defaultSafeIntegers(false);
parentPort.on("message", (m) => {
  if (m === "close") {
    db.close();
    parentPort.postMessage({ closed: true });
    parentPort.close();
    return;
  }
  let log = 0, checkpointed = 0, previous = -1;
  try {
    for (let round = 0; round < 3; round++) {
      const [r] = db.pragma("wal_checkpoint(PASSIVE)");
      // Another connection's checkpoint under way: busy, and -1 for both counts.
      if (r.busy !== 0 || r.log < 0) { log = 1; checkpointed = 0; break; }
      log = r.log;
      checkpointed = r.checkpointed;
      if (checkpointed < log || log <= previous) break;
      previous = log;
    }
  } catch (error) {
    parentPort.postMessage({ failed: String(error) });
    return;
  }
  parentPort.postMessage({ log, checkpointed });
});
`;

/**
 * A thread with a connection of its own that copies the WAL's frames into the database while
 * the writer's thread goes on committing. Started on first use; one copy at a time.
 */
export class WalCopier {
  private worker: Worker | null = null;
  private failed = false;
  private closing: Promise<void> | null = null;

  constructor(
    private readonly path: string,
    private readonly synchronous: string,
    private readonly onDone: (result: CopyResult | null) => void,
  ) {}

  /** Whether a copy can be asked for (the thread started, or can be). */
  get usable(): boolean {
    return !this.failed && this.closing === null;
  }

  /** Asks for a copy; `onDone` hears of it (null: the thread failed, and copies stop). */
  copy(): void {
    if (!this.usable) return;
    if (!this.worker) {
      try {
        this.worker = new Worker(HELPER, {
          eval: true,
          workerData: {
            driver: createRequire(import.meta.url).resolve("better-sqlite3"),
            path: this.path,
            synchronous: this.synchronous,
          },
        });
      } catch {
        this.failed = true;
        this.onDone(null);
        return;
      }
      this.worker.unref();
      this.worker.on("message", (m: CopyResult | { closed: true } | { failed: string }) => {
        if ("closed" in m) return;
        if ("failed" in m) {
          this.failed = true;
          this.onDone(null);
        } else this.onDone(m);
      });
      const lost = () => {
        if (this.closing !== null || this.worker === null) return;
        this.failed = true;
        this.worker = null;
        this.onDone(null);
      };
      this.worker.on("error", lost);
      // Ended without an error and without being asked to: as failed.
      this.worker.on("exit", lost);
    }
    this.worker.postMessage("copy");
  }

  /** Closes the thread's connection (after a copy under way) and ends the thread. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    const worker = this.worker;
    this.worker = null;
    this.closing = worker
      ? new Promise<void>((resolve) => {
          // Held open until the thread answers: unreferenced, a process with nothing else to
          // do would end before its log's connection is closed.
          worker.ref();
          const done = () => resolve();
          worker.on("message", (m: { closed?: true }) => {
            if (m.closed) void worker.terminate().then(done, done);
          });
          worker.once("exit", done);
          worker.once("error", done);
          worker.postMessage("close");
        })
      : Promise.resolve();
    return this.closing;
  }
}
