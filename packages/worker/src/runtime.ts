import { chmod } from "node:fs/promises";
import { TickBatcher } from "./batcher.js";
import type { WorkerFaults } from "./faults.js";
import { Fifo } from "./fifo.js";
import { runOperator } from "./operators/index.js";
import { parseOperator, type WorkerOperator } from "./operators/spec.js";
import { AttemptAbort, errorMessage, failure, type OperatorOutcome } from "./operators/types.js";
import { DEFAULT_OUTPUT_MAX_BYTES, OutputFile, outputPathFor } from "./output-file.js";
import type {
  Batch,
  FailedReport,
  OutputFileInfo,
  QueryCommand,
  RunCommand,
  SucceededReport,
  WorkerCommand,
  WorkerReport,
} from "./protocol.js";
import { OUTPUT_TAIL_BYTES } from "./protocol.js";
import { handOver, makeRoot, prepareWorkDir, removeWorkDir, spawnIdentity, taskBaseEnv } from "./sandbox.js";
import { Masker, type MaskingStream, resolveSecrets, SECRET_PLACEHOLDER } from "./secrets.js";
import { discardStaged, prepareStagingDir, publishStaged, removeIfEmpty } from "./staging.js";

export interface WorkerRuntimeOptions {
  readonly workerId: string;
  /** Most attempts running at once; the rest wait in a FIFO queue. */
  readonly capacity: number;
  /** Receives every report made in one tick as one batch. */
  send(batch: Batch<WorkerReport>): void | Promise<void>;
  /** When set, each attempt gets an empty `<stagingRoot>/<token>/` for its outputs. */
  readonly stagingRoot?: string;
  readonly clock?: () => Date;
  /** Where a failing `send` is reported (default: console.error). */
  readonly onSendError?: (err: unknown) => void;
  /** Fault injection for the black-box fault tests (see faults.ts); none by default. */
  readonly faults?: WorkerFaults;
  /** When set, each attempt that runs something keeps its output in `<outputRoot>/<token>.log`. */
  readonly outputRoot?: string;
  /** The most an output file keeps (default 1 MiB); 0 keeps none. */
  readonly outputMaxBytes?: number;
  /**
   * Whether a shutdown reports the queued attempts it drops (interrupted, never started), for
   * their retry at once: a remote worker's, whose scheduler outlives it. Off, they are dropped
   * unreported (the scheduler's own pool: the restarted scheduler settles them).
   */
  readonly reportQueuedAtShutdown?: boolean;
}

interface Attempt {
  readonly cmd: RunCommand;
  state: "queued" | "running" | "removed";
  /** Created when the operator starts (a noop needs none: AbortControllers are not free). */
  controller?: AbortController;
  /** Why the attempt was stopped, once it was. */
  abort?: AttemptAbort;
  /** A ProceedCommand arrived for it (only matters with `awaitProceed`). */
  proceeded?: boolean;
  /** Set while the attempt waits for its ProceedCommand: ends the wait (proceed, cancel, shutdown). */
  release?: () => void;
}

/** The signal of an attempt that cannot be stopped because it does nothing. */
const NEVER = new AbortController().signal;

/** How many finished tokens a runtime remembers, to ignore a re-sent RunCommand for them. */
const REMEMBER_FINISHED = 10_000;

/** Shortest heartbeat period, whatever the lease. */
const MIN_HEARTBEAT_MS = 10;

/**
 * Runs the attempts one worker process is given: at most `capacity` at once, the rest queued in
 * arrival order; reports `started`, heartbeats at a third of the lease, then `succeeded` or
 * `failed`, every report of one tick in one batch.
 *
 * An attempt with `awaitProceed` reports `started` when it leaves the queue, then holds its
 * capacity slot and heartbeats without running anything until a `proceed` command for its token
 * arrives; a cancel or a shutdown while it waits ends it failed (`cancelled: <reason>`) unrun.
 */
export class WorkerRuntime {
  readonly workerId: string;
  readonly capacity: number;
  /** Resolves once a shutdown has finished and its last batch has been sent. */
  readonly closed: Promise<void>;

  private readonly attempts = new Map<string, Attempt>();
  private readonly queue = new Fifo<Attempt>();
  /** Recently finished tokens, and the same in the order they finished (a ring, oldest next). */
  private readonly finished = new Set<string>();
  private readonly finishedRing: Array<string | undefined> = new Array(REMEMBER_FINISHED);
  private finishedAt = 0;
  private readonly batcher: TickBatcher<WorkerReport>;
  /** Starts of attempts that may end before they are sent, and the batch each went into. */
  private readonly unsentStarts = new Map<string, { report: WorkerReport; batch: number }>();
  private readonly stagingRoot: string | undefined;
  private readonly outputRoot: string | undefined;
  private readonly outputMaxBytes: number;
  private readonly reportQueuedAtShutdown: boolean;
  private readonly clock: () => Date;
  private readonly faults: WorkerFaults | undefined;
  private runningCount = 0;
  private waitingCount = 0;
  private lastAtMs = Number.NaN;
  private lastAt = "";
  private idleWaiters: (() => void)[] = [];
  private shuttingDown = false;
  private resolveClosed: () => void = () => {};

  constructor(options: WorkerRuntimeOptions) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1) {
      throw new Error(`capacity must be a positive integer, got ${options.capacity}`);
    }
    this.workerId = options.workerId;
    this.capacity = options.capacity;
    this.stagingRoot = options.stagingRoot;
    this.outputMaxBytes = options.outputMaxBytes ?? DEFAULT_OUTPUT_MAX_BYTES;
    this.reportQueuedAtShutdown = options.reportQueuedAtShutdown ?? false;
    this.outputRoot = this.outputMaxBytes > 0 ? options.outputRoot : undefined;
    this.clock = options.clock ?? (() => new Date());
    this.faults = options.faults;
    this.batcher = new TickBatcher((b) => options.send(b), options.onSendError);
    this.closed = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
  }

  /** Attempts running now, including those started but waiting for their `proceed`. */
  get running(): number {
    return this.runningCount;
  }

  /** Started attempts (counted in `running`) waiting for their `proceed` command. */
  get waiting(): number {
    return this.waitingCount;
  }

  /** Attempts waiting for a free slot. */
  get queued(): number {
    return this.attempts.size - this.runningCount;
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Tokens running (or waiting for `proceed`) or queued here. */
  knownTokens(): string[] {
    return [...this.attempts.keys()];
  }

  handle(batch: Batch<WorkerCommand>): void {
    for (const command of batch.messages) this.handleCommand(command);
  }

  handleCommand(command: WorkerCommand): void {
    switch (command.kind) {
      case "run":
        this.run(command);
        return;
      case "proceed":
        this.proceed(command.token);
        return;
      case "query":
        this.query(command);
        return;
      case "cancel":
        this.cancel(command.token, command.reason);
        return;
      case "shutdown":
        void this.shutdown(command.graceMs);
        return;
    }
  }

  /** Sends a report with the next batch (the `ready` report of a worker process, for one). */
  report(report: WorkerReport): void {
    this.batcher.push(report);
  }

  /**
   * Lets an `awaitProceed` attempt run its operator. A proceed that arrives while the attempt is
   * still queued is remembered (it runs as soon as it has reported `started`); one for an attempt
   * that does not wait, or for an unknown token, is ignored. Returns whether the token was known.
   */
  proceed(token: string): boolean {
    const a = this.attempts.get(token);
    if (!a) return false;
    a.proceeded = true;
    a.release?.();
    return true;
  }

  /**
   * Stops an attempt and reports it failed (`cancelled: <reason>`). A queued attempt is reported
   * at once; one waiting for `proceed` as soon as its wait ends (its operator never runs); a
   * running one when its operator has stopped. Returns whether the token was known.
   */
  cancel(token: string, reason: string, killGraceMs = 2000): boolean {
    const a = this.attempts.get(token);
    if (!a) return false;
    if (a.state === "queued") {
      a.state = "removed";
      this.attempts.delete(token);
      this.finish(a.cmd, failure("exception", `cancelled: ${reason}`, 0), undefined, true);
      this.notifyIdle();
    } else {
      this.stop(a, new AttemptAbort(reason, killGraceMs));
    }
    return true;
  }

  /** Kills every running attempt now (SIGKILL for shell tasks); each is reported cancelled. */
  killAll(reason: string, interrupted = false): void {
    for (const a of this.attempts.values()) {
      if (a.state === "running") this.stop(a, new AttemptAbort(reason, 0, interrupted));
    }
  }

  /**
   * Takes no more work, drops the queued attempts (never started: reported interrupted with
   * `reportQueuedAtShutdown`, else the coordinator's reconcile loop finds them unknown and
   * dispatches them again), ends those waiting for `proceed` without
   * running them (reported interrupted, `worker shutdown`), waits up to `graceMs` for the running
   * ones, kills the rest (reported interrupted, `worker shutdown (grace of … elapsed)`), then
   * resolves `closed`.
   */
  shutdown(graceMs: number): Promise<void> {
    // Asked again with no grace (a second Ctrl-C): stop what still runs now.
    if (this.shuttingDown) {
      if (graceMs <= 0) this.killAll("worker shutdown (stopped at once)", true);
      return this.closed;
    }
    this.shuttingDown = true;
    for (const a of this.queue.drain()) {
      if (a.state !== "queued") continue;
      a.state = "removed";
      this.attempts.delete(a.cmd.token);
      if (this.reportQueuedAtShutdown)
        this.finish(a.cmd, failure("interrupted", "worker shutdown", 0), undefined, true);
    }
    for (const a of this.attempts.values()) {
      if (a.release) this.stop(a, new AttemptAbort("worker shutdown", 0, true));
    }
    void this.drain(Math.max(0, graceMs));
    return this.closed;
  }

  private async drain(graceMs: number): Promise<void> {
    if (this.runningCount > 0 && graceMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.idle(), new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
    }
    if (this.runningCount > 0) {
      this.killAll(`worker shutdown (grace of ${graceMs} ms elapsed)`, true);
      await this.idle();
    }
    await this.batcher.flush();
    this.resolveClosed();
  }

  private idle(): Promise<void> {
    if (this.attempts.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private notifyIdle(): void {
    if (this.attempts.size !== 0 || this.idleWaiters.length === 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * Whether a run command for `token` would start an attempt here: not one already here or
   * finished lately (a coordinator may re-send a command: the attempt already here is the one
   * that counts, and one that just finished must not run twice, its report already on its
   * way), nor anything once shutting down.
   */
  takes(token: string): boolean {
    return !this.shuttingDown && !this.attempts.has(token) && !this.finished.has(token);
  }

  private run(cmd: RunCommand): void {
    if (!this.takes(cmd.token)) return;
    const a: Attempt = { cmd, state: "queued" };
    this.attempts.set(cmd.token, a);
    this.queue.push(a);
    this.pump();
  }

  private query(q: QueryCommand): void {
    const running =
      q.tokens.length === 0 ? this.knownTokens() : q.tokens.filter((token) => this.attempts.has(token));
    this.batcher.push({ kind: "known", requestId: q.requestId, workerId: this.workerId, running });
  }

  private pump(): void {
    while (this.runningCount < this.capacity && !this.shuttingDown) {
      const a = this.queue.shift();
      if (!a) return;
      if (a.state !== "queued") continue;
      a.state = "running";
      this.runningCount++;
      void this.execute(a);
    }
  }

  private stop(a: Attempt, reason: AttemptAbort): void {
    if (a.abort) return;
    a.abort = reason;
    a.controller?.abort(reason);
    a.release?.();
  }

  /** Resolves when the attempt may run: at once unless it awaits a `proceed` not yet received. */
  private startPermission(a: Attempt): Promise<void> | undefined {
    if (a.cmd.awaitProceed !== true || a.proceeded || a.abort) return undefined;
    this.waitingCount++;
    return new Promise<void>((resolve) => {
      a.release = () => {
        a.release = undefined;
        this.waitingCount--;
        resolve();
      };
    });
  }

  /** The worker clock as ISO text, formatted once per millisecond. */
  private at(): string {
    const now = this.clock();
    const ms = now.getTime();
    if (ms !== this.lastAtMs) {
      this.lastAtMs = ms;
      this.lastAt = now.toISOString();
    }
    return this.lastAt;
  }

  private async execute(a: Attempt): Promise<void> {
    const { cmd } = a;
    const { token, attempt, instanceStream } = cmd;
    const workerId = this.workerId;
    // A noop prints nothing: it gets no file.
    const keepsOutput = this.outputRoot !== undefined && cmd.operator.type !== "noop";
    const outputPath = keepsOutput ? outputPathFor(this.outputRoot as string, token) : undefined;
    const started: WorkerReport = {
      kind: "started",
      token,
      attempt,
      instanceStream,
      workerId,
      at: this.at(),
      pid: process.pid,
      ...(outputPath ? { outputPath } : {}),
    };
    this.batcher.push(started);
    if (cmd.awaitProceed !== true)
      this.unsentStarts.set(token, { report: started, batch: this.batcher.sent });

    let outcome: OperatorOutcome;
    let stagingDir: string | undefined;
    let workDir: string | undefined;
    let published = false;
    let heartbeat: NodeJS.Timeout | undefined;
    let output: OutputFile | undefined;
    /** Masks the attempt's secrets in all it reports and writes (none until they are resolved). */
    let masker: Masker | undefined;
    let masked: MaskingStream | undefined;
    /** The operator that ran, once it has (for the fault hooks). */
    let ran: WorkerOperator | undefined;
    try {
      let spec: WorkerOperator = parseOperator(cmd.operator);
      if (spec.publishTo !== undefined && this.stagingRoot === undefined) {
        throw new Error(
          "operator has publishTo but this worker has no staging root (CHRONOLOG_STAGING_ROOT)",
        );
      }
      const permission = this.startPermission(a);
      if (spec.type !== "noop" || permission) {
        // The lease covers the wait for `proceed` as well as the run.
        const every = Math.max(MIN_HEARTBEAT_MS, (cmd.leaseSeconds * 1000) / 3);
        heartbeat = setInterval(
          () =>
            this.batcher.push({ kind: "heartbeat", token, attempt, instanceStream, workerId, at: this.at() }),
          every,
        );
        heartbeat.unref();
      }
      if (permission) await permission;
      // Stopped while it waited (cancelled, or the worker is shutting down): it never runs.
      const stoppedWhileWaiting = a.abort;
      if (stoppedWhileWaiting) throw stoppedWhileWaiting;
      // From here a stop aborts the attempt's signal (see stop): whatever is awaited below
      // (its secrets, its directories) ends in the operator, which runs nothing once aborted.
      let signal = NEVER;
      if (spec.type !== "noop") {
        a.controller = new AbortController();
        signal = a.controller.signal;
      }
      // Secrets are resolved here, on this worker's host, once the attempt may run.
      let secretValues: Record<string, string> = {};
      if (cmd.secrets && spec.type !== "noop") {
        secretValues = await resolveSecrets(
          cmd.secrets,
          { env: process.env, commandEnv: taskBaseEnv(), identity: spawnIdentity() },
          signal,
        ).catch((error: unknown) => {
          throw a.abort ?? error;
        });
        masker = new Masker(Object.values(secretValues));
        if (spec.type === "http") spec = fillSecrets(spec, secretValues);
      }
      // A noop writes nothing: it needs no staging directory. The task's user owns it.
      if (this.stagingRoot !== undefined && spec.type !== "noop") {
        await makeRoot(this.stagingRoot);
        stagingDir = await prepareStagingDir(this.stagingRoot, token);
        await handOver(stagingDir);
      }
      // A task that runs a process gets a working directory of its own (its HOME).
      if (spec.type === "shell" || spec.type === "node") workDir = await prepareWorkDir(token);
      if (keepsOutput) output = OutputFile.open(this.outputRoot as string, token, this.outputMaxBytes);
      if (output && masker) masked = masker.stream(output);
      const ctx = {
        token,
        attempt,
        logicalDate: cmd.logicalDate,
        taskKey: cmd.taskKey,
        ...(cmd.queue !== undefined ? { queue: cmd.queue } : {}),
        stagingDir,
        ...(workDir !== undefined ? { workDir } : {}),
        env: masker && spec.type !== "http" ? { ...cmd.env, ...secretValues } : cmd.env,
        signal,
        output: masked ?? output,
      };
      outcome = await runOperator(spec, ctx);
      ran = spec;
      if (a.abort) {
        outcome = a.abort.interrupted
          ? failure("interrupted", a.abort.message, outcome.durationMs, outcome)
          : failure("exception", `cancelled: ${a.abort.message}`, outcome.durationMs, outcome);
      } else if (outcome.ok && spec.publishTo !== undefined && stagingDir !== undefined) {
        // Publish before reporting success: a succeeded report means the outputs are in place.
        try {
          // Published whole, the directory becomes the target: readable as any published output.
          await chmod(stagingDir, 0o755);
          await publishStaged(stagingDir, spec.publishTo);
          published = true;
        } catch (err) {
          const message = `publishing to ${spec.publishTo} failed: ${errorMessage(err)}`;
          outcome = failure("exception", message, outcome.durationMs, outcome);
        }
      }
    } catch (err) {
      if (err instanceof AttemptAbort && err.interrupted) outcome = failure("interrupted", err.message, 0);
      else {
        const message = err instanceof AttemptAbort ? `cancelled: ${err.message}` : errorMessage(err);
        outcome = failure("exception", message, 0);
      }
    } finally {
      clearInterval(heartbeat);
    }
    if (workDir !== undefined) await removeWorkDir(workDir);
    masked?.end();
    const outputFile = output?.close();
    if (masker) outcome = maskOutcome(outcome, masker);
    if (!outcome.ok && stagingDir !== undefined) await discardStaged(stagingDir).catch(() => {});
    // A success with nowhere to publish keeps what it staged, but an empty directory goes
    // (after its report is out): the staging root does not fill up with one per attempt.
    const leftOver = outcome.ok && !published ? stagingDir : undefined;
    if (ran) this.faults?.afterOperator?.(cmd, ran);

    a.state = "removed";
    this.attempts.delete(token);
    this.runningCount--;
    this.finish(cmd, outcome, outputFile);
    this.pump();
    this.notifyIdle();
    if (leftOver !== undefined) void removeIfEmpty(leftOver);
  }

  /** Reports the attempt's end; `neverStarted` when it ended still queued here, never begun. */
  private finish(
    cmd: RunCommand,
    outcome: OperatorOutcome,
    outputFile?: OutputFileInfo,
    neverStarted = false,
  ): void {
    const { token, attempt, instanceStream } = cmd;
    // A success in the batch of its own start says it all (it names the worker, and the start is
    // its end less its duration): the start is left out, half the messages of a quick task. Not
    // for a failure, which must say whether the attempt started, nor the start of an attempt
    // that waits for its start permission.
    const start = this.unsentStarts.get(token);
    if (start) {
      this.unsentStarts.delete(token);
      if (outcome.ok && start.batch === this.batcher.sent) this.batcher.withdraw(start.report);
    }
    // The oldest is forgotten by its place in the ring: asking a set for its first entry walks
    // past every entry deleted since it last grew, thousands of steps when it churns like this.
    const oldest = this.finishedRing[this.finishedAt];
    if (oldest !== undefined) this.finished.delete(oldest);
    this.finishedRing[this.finishedAt] = token;
    this.finishedAt = (this.finishedAt + 1) % REMEMBER_FINISHED;
    this.finished.add(token);
    const { durationMs, exitCode, stdoutTail, stderrTail } = outcome;
    const at = this.at();
    const workerId = this.workerId;
    const report: SucceededReport | FailedReport = outcome.ok
      ? {
          kind: "succeeded",
          token,
          attempt,
          instanceStream,
          workerId,
          at,
          durationMs,
          exitCode,
          stdoutTail,
          stderrTail,
          ...(outputFile ? { outputFile } : {}),
        }
      : {
          kind: "failed",
          token,
          attempt,
          instanceStream,
          workerId,
          at,
          durationMs,
          exitCode,
          stdoutTail,
          stderrTail,
          error: outcome.error ?? { kind: "unknown", message: "failed without an error" },
          ...(outputFile ? { outputFile } : {}),
          ...(neverStarted ? { neverStarted: true as const } : {}),
        };
    this.batcher.push(report);
    if (this.faults?.duplicateFinalReports) {
      // Fault injection: the same final report again, in the next batch.
      void this.batcher.flush();
      this.batcher.push(report);
    }
  }
}

/** The outcome with every secret masked in its tails and its error message. */
function maskOutcome(outcome: OperatorOutcome, masker: Masker): OperatorOutcome {
  // A tail that fills its buffer may start inside a value cut at the front.
  const cut = (tail: string) => Buffer.byteLength(tail) >= OUTPUT_TAIL_BYTES - 3;
  return {
    ...outcome,
    stdoutTail: masker.maskTail(outcome.stdoutTail, cut(outcome.stdoutTail)),
    stderrTail: masker.maskTail(outcome.stderrTail, cut(outcome.stderrTail)),
    ...(outcome.error ? { error: { ...outcome.error, message: masker.mask(outcome.error.message) } } : {}),
  };
}

/** An http operator with its `{{ secrets.NAME }}` placeholders (headers and body only) filled in. */
function fillSecrets(
  spec: Extract<WorkerOperator, { type: "http" }>,
  values: Readonly<Record<string, string>>,
): WorkerOperator {
  const fill = (text: string, field: string) =>
    text.replace(SECRET_PLACEHOLDER, (_, name: string) => {
      const value = values[name];
      if (value === undefined)
        throw new Error(`${field} names secret ${name}, which the task does not declare`);
      return value;
    });
  return {
    ...spec,
    headers: Object.fromEntries(Object.entries(spec.headers).map(([k, v]) => [k, fill(v, `headers.${k}`)])),
    ...(spec.body !== undefined ? { body: fill(spec.body, "body") } : {}),
  };
}
