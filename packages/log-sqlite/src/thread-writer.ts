import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { BatchOutcome, WriteItem } from "./batch-writer.js";
import type { ConnectionSettings } from "./connection.js";
import type { LayoutVersion } from "./schema.js";

/** What the backend tells its writer thread. */
export type ToWriter =
  | {
      readonly kind: "write";
      readonly id: number;
      readonly items: readonly WriteItem[];
      readonly recordedAt: string;
    }
  | { readonly kind: "close" };

/** What the writer thread answers. */
type FromWriter =
  | {
      readonly kind: "written";
      readonly id: number;
      readonly outcome: BatchOutcome;
      readonly commits: number;
    }
  | { readonly kind: "failed"; readonly id: number; readonly message: string; readonly code?: string }
  | {
      readonly kind: "closed";
      readonly commits: number;
      readonly walCheckpoints: { readonly done: number; readonly busy: number };
    };

/** A group commit the writer thread could not make: nothing of it was written. */
export class WriterThreadError extends Error {
  readonly type = "writer_thread";
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = "WriterThreadError";
  }
}

function writerModule(): string {
  const beside = fileURLToPath(new URL("./writer-thread.js", import.meta.url));
  if (existsSync(beside)) return beside;
  return fileURLToPath(new URL("../dist/writer-thread.js", import.meta.url));
}

/**
 * The backend's side of a writer in a thread of its own: hands it one group commit at a time
 * and hears what it made of it. The thread keeps the process alive only while a commit is
 * under way (an append someone waits for).
 */
export class ThreadWriter {
  commits = 0;
  walCheckpoints = { done: 0, busy: 0 };
  private readonly worker: Worker;
  private readonly pending = new Map<
    number,
    { resolve: (o: BatchOutcome) => void; reject: (e: unknown) => void }
  >();
  private nextId = 0;
  private failure: Error | null = null;
  private closed: Promise<void> | null = null;
  private resolveClosed: (() => void) | null = null;

  constructor(settings: ConnectionSettings, layout: LayoutVersion, firstPosition: bigint) {
    this.worker = new Worker(writerModule(), { workerData: { settings, layout, firstPosition } });
    this.worker.unref();
    this.worker.on("message", (m: FromWriter) => this.receive(m));
    this.worker.on("error", (error) => this.fail(error));
    this.worker.on("exit", (code) => {
      this.fail(new WriterThreadError(`the log's writer thread exited (code ${code})`));
      this.resolveClosed?.();
    });
  }

  write(items: readonly WriteItem[], recordedAt: string): Promise<BatchOutcome> {
    if (this.failure) return Promise.reject(this.failure);
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ kind: "write", id, items, recordedAt } satisfies ToWriter);
    });
  }

  /** Stops the thread once the commits handed to it are made. */
  close(): Promise<void> {
    if (!this.closed) {
      this.closed = new Promise((resolve) => {
        this.resolveClosed = resolve;
      });
      this.worker.ref();
      this.worker.postMessage({ kind: "close" } satisfies ToWriter);
    }
    return this.closed;
  }

  private receive(m: FromWriter): void {
    if (m.kind === "closed") {
      this.commits = m.commits;
      this.walCheckpoints = { ...m.walCheckpoints };
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (this.pending.size === 0 && !this.closed) this.worker.unref();
    if (m.kind === "written") {
      this.commits = m.commits;
      p.resolve(m.outcome);
    } else p.reject(new WriterThreadError(m.message, m.code));
  }

  private fail(error: unknown): void {
    this.failure ??= error instanceof Error ? error : new WriterThreadError(String(error));
    for (const p of this.pending.values()) p.reject(this.failure);
    this.pending.clear();
  }
}
