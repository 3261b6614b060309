import { type ChildProcess, fork } from "node:child_process";
import { EventEmitter } from "node:events";
import { fileURLToPath } from "node:url";
import { workerDistFile } from "./dist-dir.js";
import type {
  Batch,
  FailedReport,
  KnownReport,
  QueryCommand,
  RunCommand,
  WorkerCommand,
  WorkerReport,
} from "./protocol.js";
import { afterWait } from "./wait.js";

export interface WorkerPoolOptions {
  /** Worker processes to keep running. */
  readonly size: number;
  /** Concurrent attempts per worker (default 64). */
  readonly capacity?: number;
  /** Staging root handed to every worker (CHRONOLOG_STAGING_ROOT). */
  readonly stagingRoot?: string;
  /** Where every worker keeps attempts' output files (CHRONOLOG_OUTPUT_ROOT). */
  readonly outputRoot?: string;
  /** The most one attempt's output file keeps (CHRONOLOG_OUTPUT_MAX_BYTES), 0 for none. */
  readonly outputMaxBytes?: number;
  /** Shells each worker keeps started ahead of need for shell tasks (CHRONOLOG_WARM_SHELLS, default 2). */
  readonly warmShells?: number;
  /** The worker entry point; default `main.js` beside this module (`dist/main.js` from `src`). */
  readonly workerModule?: string | URL;
  /** The uid and gid tasks run as (CHRONOLOG_TASK_IDENTITY); default: the workers' own user. */
  readonly runAs?: { readonly uid: number; readonly gid: number };
  /** Where each attempt gets its own working directory, its task's HOME (CHRONOLOG_WORK_ROOT). */
  readonly workRoot?: string;
  /** Variables of the workers' environment tasks get beyond the allowlist (CHRONOLOG_TASK_PASS_ENV). */
  readonly passEnv?: readonly string[];
  /** The umask task processes start with (CHRONOLOG_TASK_UMASK); default the workers' own. */
  readonly taskUmask?: number;
  /** Extra environment for the worker processes. */
  readonly env?: Readonly<Record<string, string>>;
  /** Node flags for the worker processes (default none). */
  readonly execArgv?: readonly string[];
  /** Worker ids are `<idPrefix>-<n>`, n counting every process ever forked (default `worker`). */
  readonly idPrefix?: string;
  /**
   * How long `query` waits for the workers (default 2000 ms); a worker that has not answered
   * by then but has spoken meanwhile (busy, not hung) is waited for in further such spans, up to
   * QUERY_BUSY_SPANS of them.
   */
  readonly queryTimeoutMs?: number;
  readonly clock?: () => Date;
}

export interface WorkerStats {
  readonly workerId: string;
  readonly pid: number | undefined;
  readonly ready: boolean;
  /** Attempts given to this worker and not yet reported finished (running or queued there). */
  readonly running: number;
  readonly capacity: number;
}

interface Given {
  readonly cmd: RunCommand;
  startedAt?: number;
}

interface WorkerHandle {
  readonly id: string;
  readonly child: ChildProcess;
  ready: boolean;
  capacity: number;
  exited: boolean;
  readonly given: Map<string, Given>;
  outbox: WorkerCommand[];
  /** When a batch went to the worker with nothing heard from it since (epoch ms), else undefined. */
  unansweredSince: number | undefined;
  /** When the worker last sent anything (epoch ms). */
  lastHeard: number;
  /** Why the pool killed the worker, when it did (see killAll). */
  killedFor?: string;
}

interface PendingQuery {
  readonly waiting: Set<string>;
  readonly found: Map<string, string>;
  finish(): void;
}

/**
 * Spans of `queryTimeoutMs` a query waits at most for a worker that keeps sending (reports,
 * heartbeats) but has not answered yet: a worker with thousands of attempts answers late, and
 * one counted as knowing none of them has them abandoned and run again.
 */
const QUERY_BUSY_SPANS = 10;
/** Longest wait for the IPC channel to drain after a worker's exit before reporting its attempts lost. */
const DRAIN_AFTER_EXIT_MS = 250;
const MAX_RESPAWN_DELAY_MS = 5000;
/**
 * A ready worker that has not answered a batch for this long is passed over for new attempts
 * while another one answers: it may be stopped (SIGSTOP), swapping or hung, and attempts given
 * to it would wait with it. Every batch is answered at once by a live worker's event loop.
 */
const SILENT_AFTER_MS = 300;
/** How often a worker that has sent nothing for as long is asked a question, to hear it is alive. */
const PROBE_EVERY_MS = 250;
/** The request id of a probe: the answer goes to no query. */
const PROBE_REQUEST = "probe";

function defaultWorkerModule(): string {
  return workerDistFile("main.js");
}

/**
 * The coordinator's side of the workers: forks `size` worker processes, sends each the attempts
 * it should run (one batch per worker per tick) to the least loaded of the workers that are
 * ready and answer, holding them while none is ready, answers "who knows these tokens?", and
 * supervises: a worker that dies with attempts in hand gets them reported failed (`lost`) at
 * once, and a replacement is forked.
 */
export class WorkerPool {
  private readonly options: WorkerPoolOptions;
  private readonly workers = new Map<string, WorkerHandle>();
  private readonly owner = new Map<string, WorkerHandle>();
  private readonly queries = new Map<string, PendingQuery>();
  private readonly events = new EventEmitter();
  private readonly listeners = new Set<(reports: readonly WorkerReport[]) => void>();
  private readonly clock: () => Date;
  private readonly module: string;
  private forked = 0;
  private querySeq = 0;
  private startupFailures = 0;
  private flushScheduled: NodeJS.Immediate | undefined;
  private closing: Promise<void> | undefined;
  private respawnTimers = new Set<NodeJS.Timeout>();
  /** Attempts dispatched while no worker was ready (starting, or all crashed and backing off). */
  private backlog: RunCommand[] = [];
  private readonly probe: NodeJS.Timeout;

  constructor(options: WorkerPoolOptions) {
    if (!Number.isInteger(options.size) || options.size < 1)
      throw new Error("pool size must be a positive integer");
    if (options.warmShells !== undefined && (!Number.isInteger(options.warmShells) || options.warmShells < 0))
      throw new Error(`warmShells must be a non-negative integer, got ${options.warmShells}`);
    this.options = options;
    this.clock = options.clock ?? (() => new Date());
    const m = options.workerModule ?? defaultWorkerModule();
    this.module = m instanceof URL ? fileURLToPath(m) : m;
    this.events.setMaxListeners(0);
    for (let i = 0; i < options.size; i++) this.spawn();
    this.probe = setInterval(() => this.probeQuiet(), PROBE_EVERY_MS);
    this.probe.unref();
  }

  /** Live worker processes (ready or starting). */
  get workerCount(): number {
    return this.workers.size;
  }

  stats(): WorkerStats[] {
    return [...this.workers.values()].map((w) => ({
      workerId: w.id,
      pid: w.child.pid,
      ready: w.ready,
      running: w.given.size,
      capacity: w.capacity,
    }));
  }

  /** Resolves when every live worker has reported `ready`. */
  ready(timeoutMs = 10_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (this.workers.size > 0 && [...this.workers.values()].every((w) => w.ready)) done(resolve);
      };
      const done = (then: () => void): void => {
        clearTimeout(timer);
        this.events.off("change", check);
        then();
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`workers not ready after ${timeoutMs} ms`))),
        timeoutMs,
      );
      this.events.on("change", check);
      check();
    });
  }

  /** Every report, one at a time. Returns the unsubscribe function. */
  onReport(listener: (report: WorkerReport) => void): () => void {
    return this.onReports((reports) => {
      for (const r of reports) listener(r);
    });
  }

  /** Every report, one worker's batch (or one batch of synthetic `lost` reports) at a time. */
  onReports(listener: (reports: readonly WorkerReport[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Sends each attempt to the least-loaded ready worker, one that answers first; while no worker
   * is ready, the attempts wait in the pool and go to the first that is. A token already given
   * to a worker goes to that worker again (which ignores the duplicate).
   */
  dispatch(cmds: readonly RunCommand[]): void {
    if (this.closing) throw new Error("WorkerPool is closed");
    const now = Date.now();
    for (const cmd of cmds) {
      let w = this.owner.get(cmd.token);
      if (!w) {
        const best = this.leastLoaded(now);
        if (!best) {
          this.backlog.push(cmd);
          continue;
        }
        w = best;
        w.given.set(cmd.token, { cmd });
        this.owner.set(cmd.token, w);
      }
      this.enqueue(w, cmd);
    }
  }

  /**
   * Which worker knows each of these tokens (running or queued there). A worker that does not
   * answer within `timeoutMs` and said nothing meanwhile counts as not knowing; one that is
   * sending (busy) is waited for longer (see QUERY_BUSY_SPANS).
   */
  query(
    tokens: readonly string[],
    timeoutMs = this.options.queryTimeoutMs ?? 2000,
  ): Promise<Map<string, string>> {
    const requestId = `q${++this.querySeq}`;
    const live = [...this.workers.values()];
    return new Promise((resolve) => {
      const found = new Map<string, string>();
      let spans = 1;
      let spanStart = Date.now();
      // At the end of a span: a worker still to answer that was heard during it is busy, not
      // hung, and is given another span; a silent one is counted as knowing none.
      const judge = () => {
        const busy = [...pending.waiting].some((id) => {
          const w = this.workers.get(id);
          return w !== undefined && !w.exited && w.lastHeard >= spanStart;
        });
        if (!busy || spans >= QUERY_BUSY_SPANS) return pending.finish();
        spans += 1;
        spanStart = Date.now();
        cancelWait = afterWait(timeoutMs, judge);
      };
      // (Judged once what has come in meanwhile is read, an answer among them: see afterWait.)
      let cancelWait = afterWait(timeoutMs, judge);
      const pending: PendingQuery = {
        waiting: new Set(live.map((w) => w.id)),
        found,
        finish: () => {
          cancelWait();
          this.queries.delete(requestId);
          resolve(found);
        },
      };
      if (live.length === 0) return pending.finish();
      this.queries.set(requestId, pending);
      const cmd: QueryCommand = { kind: "query", requestId, tokens: [...tokens] };
      for (const w of live) this.enqueue(w, cmd);
    });
  }

  /** Asks the worker running `token` to stop it; it reports the attempt failed. False if no worker has it. */
  cancel(token: string, reason = "cancelled by the coordinator"): boolean {
    const w = this.owner.get(token);
    if (!w) return false;
    this.enqueue(w, { kind: "cancel", token, reason });
    return true;
  }

  /**
   * Lets an attempt dispatched with `awaitProceed` run: sends `proceed` to the worker holding
   * `token` (with that worker's next batch). False if no live worker holds it.
   */
  proceed(token: string): boolean {
    const w = this.owner.get(token);
    if (!w || w.exited) return false;
    this.enqueue(w, { kind: "proceed", token });
    return true;
  }

  /**
   * Shuts every worker down: each finishes its running attempts within `graceMs`, kills the rest
   * (reporting them failed) and exits. Attempts still queued in a worker are dropped without a
   * report; the reconcile loop finds them unknown. Workers that have not exited `graceMs + 5 s`
   * later are killed.
   */
  close(graceMs = 10_000): Promise<void> {
    this.closing ??= this.shutdownAll(graceMs);
    return this.closing;
  }

  /**
   * During a close, stops what still runs at once (each attempt reported interrupted by the
   * shutdown) instead of waiting out the grace.
   */
  stopNow(): void {
    if (!this.closing) return;
    for (const w of this.workers.values()) {
      if (w.exited || !w.ready) continue;
      this.enqueue(w, { kind: "shutdown", graceMs: 0 });
    }
    this.flush();
  }

  /**
   * Kills every worker process now (SIGKILL), and with it everything it runs: a shell task's
   * watchdog kills its process group when its worker dies, and a node task's does likewise. For
   * when this process may no longer supervise its attempts, and another may soon take them for
   * lost and run them again: nothing of them may run on. Every attempt the workers had, running
   * or queued, is reported lost with `reason`; attempts still waiting for a worker are dropped
   * without a report (no worker ever had them). New workers are started in the killed ones'
   * place. Returns how many attempts were stopped or dropped.
   */
  killAll(reason: string): number {
    if (this.closing) return 0;
    let stopped = this.backlog.length;
    this.backlog = [];
    for (const w of this.workers.values()) {
      if (w.exited) continue;
      stopped += w.given.size;
      // From now on it takes nothing (its exit handler does the accounting, as for any death).
      w.exited = true;
      w.killedFor = reason;
      w.outbox = [];
      w.child.kill("SIGKILL");
    }
    if (this.flushScheduled) clearImmediate(this.flushScheduled);
    this.flushScheduled = undefined;
    this.events.emit("change");
    return stopped;
  }

  private async shutdownAll(graceMs: number): Promise<void> {
    clearInterval(this.probe);
    for (const t of this.respawnTimers) clearTimeout(t);
    this.respawnTimers.clear();
    const exits = [...this.workers.values()].map((w) => {
      const exited = new Promise<void>((resolve) => {
        if (w.exited) return resolve();
        w.child.once("exit", () => resolve());
      });
      if (w.ready) {
        this.enqueue(w, { kind: "shutdown", graceMs });
        this.flush();
      } else {
        w.child.kill("SIGTERM");
      }
      const hard = setTimeout(() => w.child.kill("SIGKILL"), graceMs + 5000);
      return exited.finally(() => clearTimeout(hard));
    });
    await Promise.all(exits);
    for (const q of [...this.queries.values()]) q.finish();
  }

  private spawn(): void {
    const id = `${this.options.idPrefix ?? "worker"}-${++this.forked}`;
    const env: NodeJS.ProcessEnv = { ...process.env, ...this.options.env, CHRONOLOG_WORKER_ID: id };
    if (this.options.capacity !== undefined) env.CHRONOLOG_WORKER_CAPACITY = String(this.options.capacity);
    if (this.options.stagingRoot !== undefined) env.CHRONOLOG_STAGING_ROOT = this.options.stagingRoot;
    if (this.options.outputRoot !== undefined) env.CHRONOLOG_OUTPUT_ROOT = this.options.outputRoot;
    if (this.options.outputMaxBytes !== undefined)
      env.CHRONOLOG_OUTPUT_MAX_BYTES = String(this.options.outputMaxBytes);
    if (this.options.warmShells !== undefined) env.CHRONOLOG_WARM_SHELLS = String(this.options.warmShells);
    // How tasks run is this pool's to say, never inherited from the environment.
    for (const k of [
      "CHRONOLOG_TASK_IDENTITY",
      "CHRONOLOG_WORK_ROOT",
      "CHRONOLOG_TASK_PASS_ENV",
      "CHRONOLOG_TASK_UMASK",
    ])
      delete env[k];
    if (this.options.runAs !== undefined)
      env.CHRONOLOG_TASK_IDENTITY = `${this.options.runAs.uid}:${this.options.runAs.gid}`;
    if (this.options.workRoot !== undefined) env.CHRONOLOG_WORK_ROOT = this.options.workRoot;
    if (this.options.passEnv !== undefined) env.CHRONOLOG_TASK_PASS_ENV = this.options.passEnv.join(",");
    if (this.options.taskUmask !== undefined) env.CHRONOLOG_TASK_UMASK = this.options.taskUmask.toString(8);
    const child = fork(this.module, [], {
      env,
      execArgv: [...(this.options.execArgv ?? [])],
      serialization: "json",
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const w: WorkerHandle = {
      id,
      child,
      ready: false,
      capacity: this.options.capacity ?? 64,
      exited: false,
      given: new Map(),
      outbox: [],
      unansweredSince: undefined,
      lastHeard: Date.now(),
    };
    this.workers.set(id, w);
    child.on("message", (msg: unknown) => this.receive(w, msg));
    child.on("error", () => {}); // a failed send or kill; the exit handler does the accounting
    child.once("exit", (code, signal) => this.exited(w, code, signal));
    this.events.emit("change");
  }

  /** Whether the worker has left a batch unanswered for longer than a live one would. */
  private silent(w: WorkerHandle, now: number): boolean {
    return w.unansweredSince !== undefined && now - w.unansweredSince > SILENT_AFTER_MS;
  }

  /**
   * The ready worker with the lowest share of its capacity in use, among those that answer
   * (among all ready ones when none does); undefined while no worker is ready.
   */
  private leastLoaded(now: number): WorkerHandle | undefined {
    let best: WorkerHandle | undefined;
    let bestScore = Number.POSITIVE_INFINITY;
    for (const w of this.workers.values()) {
      if (!w.ready || w.exited) continue;
      const score = (this.silent(w, now) ? 1e9 : 0) + w.given.size / w.capacity;
      if (score < bestScore) {
        best = w;
        bestScore = score;
      }
    }
    return best;
  }

  /** Asks each ready worker that has been quiet for a while a question it answers at once. */
  private probeQuiet(): void {
    const now = Date.now();
    for (const w of this.workers.values()) {
      if (!w.ready || w.exited || w.unansweredSince !== undefined) continue;
      if (now - w.lastHeard < PROBE_EVERY_MS) continue;
      this.enqueue(w, { kind: "query", requestId: PROBE_REQUEST, tokens: [PROBE_REQUEST] });
    }
  }

  /** Attempts held while no worker was ready go to the ready ones. */
  private drainBacklog(): void {
    if (this.backlog.length === 0 || this.closing) return;
    const backlog = this.backlog;
    this.backlog = [];
    this.dispatch(backlog);
  }

  private enqueue(w: WorkerHandle, cmd: WorkerCommand): void {
    w.outbox.push(cmd);
    if (w.ready) this.flushScheduled ??= setImmediate(() => this.flush());
  }

  private flush(): void {
    if (this.flushScheduled) clearImmediate(this.flushScheduled);
    this.flushScheduled = undefined;
    for (const w of this.workers.values()) this.flushWorker(w);
  }

  private flushWorker(w: WorkerHandle): void {
    if (!w.ready || w.exited || w.outbox.length === 0) return;
    const batch: Batch<WorkerCommand> = { kind: "batch", messages: w.outbox };
    w.outbox = [];
    w.unansweredSince ??= Date.now();
    try {
      w.child.send(batch, (err) => {
        if (err) w.child.emit("error", err);
      });
    } catch {
      // The channel is closed: the exit handler reports the attempts lost.
    }
  }

  private receive(w: WorkerHandle, msg: unknown): void {
    const batch = msg as Batch<WorkerReport> | null;
    if (batch?.kind !== "batch" || !Array.isArray(batch.messages)) return;
    w.lastHeard = Date.now();
    w.unansweredSince = undefined;
    let becameReady = false;
    for (const r of batch.messages) {
      switch (r.kind) {
        case "ready":
          w.ready = true;
          w.capacity = r.capacity;
          this.startupFailures = 0;
          becameReady = true;
          break;
        case "known":
          this.answer(w, r);
          break;
        case "started": {
          const g = w.given.get(r.token);
          if (g) g.startedAt = Date.now();
          break;
        }
        case "succeeded":
        case "failed":
          w.given.delete(r.token);
          if (this.owner.get(r.token) === w) this.owner.delete(r.token);
          break;
      }
    }
    if (becameReady) {
      this.drainBacklog();
      this.flushWorker(w);
      this.events.emit("change");
    }
    this.emit(batch.messages);
  }

  private answer(w: WorkerHandle, r: KnownReport): void {
    const q = this.queries.get(r.requestId);
    if (!q) return;
    for (const token of r.running) q.found.set(token, w.id);
    q.waiting.delete(w.id);
    if (q.waiting.size === 0) q.finish();
  }

  private emit(reports: readonly WorkerReport[]): void {
    if (reports.length === 0) return;
    for (const l of this.listeners) {
      try {
        l(reports);
      } catch (err) {
        console.error("chronolog: WorkerPool report listener threw", err);
      }
    }
  }

  private exited(w: WorkerHandle, code: number | null, signal: NodeJS.Signals | null): void {
    w.exited = true;
    // Reports the worker sent just before dying may still be in the channel: let it drain first.
    let settled = false;
    const settle = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      this.lost(w, code, signal);
    };
    const timer = setTimeout(settle, DRAIN_AFTER_EXIT_MS);
    if (w.child.connected) w.child.once("disconnect", settle);
    else settle();
  }

  private lost(w: WorkerHandle, code: number | null, signal: NodeJS.Signals | null): void {
    this.workers.delete(w.id);
    for (const q of [...this.queries.values()]) {
      if (q.waiting.delete(w.id) && q.waiting.size === 0) q.finish();
    }
    const how = signal ? `signal ${signal}` : `code ${code}`;
    const message = w.killedFor
      ? `${w.killedFor}: worker ${w.id} (pid ${w.child.pid}) was killed`
      : `worker ${w.id} (pid ${w.child.pid}) exited with ${how}`;
    const at = this.clock().toISOString();
    const now = Date.now();
    const reports: FailedReport[] = [];
    for (const [token, g] of w.given) {
      if (this.owner.get(token) === w) this.owner.delete(token);
      if (this.closing) continue;
      reports.push({
        kind: "failed",
        token,
        attempt: g.cmd.attempt,
        instanceStream: g.cmd.instanceStream,
        workerId: w.id,
        at,
        durationMs: g.startedAt === undefined ? 0 : now - g.startedAt,
        exitCode: null,
        stdoutTail: "",
        stderrTail: "",
        error: { kind: "lost", message },
      });
    }
    w.given.clear();
    w.outbox = [];
    this.events.emit("change");
    this.emit(reports);
    if (this.closing) return;
    // A worker that dies before it is even ready (and was not killed) is probably broken: back
    // off before the next.
    const delay =
      w.ready || w.killedFor ? 0 : Math.min(MAX_RESPAWN_DELAY_MS, 100 * 2 ** this.startupFailures++);
    if (delay === 0) {
      this.spawn();
      return;
    }
    const t = setTimeout(() => {
      this.respawnTimers.delete(t);
      if (!this.closing) this.spawn();
    }, delay);
    this.respawnTimers.add(t);
  }
}
