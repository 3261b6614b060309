import {
  type AttemptReportInput,
  type DomainEvent,
  type DomainEventOf,
  decideIntervalCompleted,
  decideReport,
  evolveInstance,
  foldInstance,
  formatTaskKey,
  type InstanceState,
  type RetryPolicy,
  type SchedulerProjection,
  type TaskState,
  taskStream,
} from "@chronolog/core";
import { type AppendResult, type EventLog, LogMovedError, WrongExpectedRevisionError } from "@chronolog/log";
import type { AttemptReport } from "@chronolog/worker";
import type { Alongside } from "./success-commit.js";

const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 1,
  initialDelayMs: 1000,
  factor: 2,
  maxDelayMs: 300_000,
  jitter: 0.1,
};
const MAX_CONFLICT_RETRIES = 8;
/** Times the children of a success are decided again when the log moved on meanwhile. */
const MAX_MOVED_RETRIES = 2;

/** (The fold of an attempt stream read from the log, for callers that import it from here.) */
export { foldInstance } from "@chronolog/core";
export type { Alongside } from "./success-commit.js";

export interface ReportApplierOptions {
  readonly log: EventLog;
  /** What else to write with the success of `task`'s interval (see Alongside). */
  readonly alongside?: (
    task: TaskState,
    completed: DomainEventOf<"IntervalCompleted">,
  ) => Promise<Alongside | null> | Alongside | null;
  /** Called once a report has been applied (or refused): to let a gated attempt run, or stop it. */
  readonly onApplied?: (report: AttemptReport, outcome: "started_durable" | "rejected" | "other") => void;
  readonly projection: SchedulerProjection;
  readonly now: () => number;
  readonly random: () => number;
  readonly onError: (error: unknown, stream: string) => void;
}

/**
 * Applies worker reports to attempt streams. Reports that arrive in the same tick are grouped
 * per stream and written with one compare-and-set append each; appends to different streams
 * share one group commit. A report whose token is unknown or stale is recorded as rejected.
 */
export class ReportApplier {
  private pending = new Map<string, AttemptReport[]>();
  /** Streams with an append under way: their next reports wait for it. */
  private readonly busy = new Map<string, Promise<void>>();
  /** The state this applier last wrote per stream, until the projection has caught up with it. */
  private readonly written = new Map<string, InstanceState>();
  private scheduled = false;
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly o: ReportApplierOptions) {}

  submit(report: AttemptReport): void {
    let list = this.pending.get(report.instanceStream);
    if (!list) {
      list = [];
      this.pending.set(report.instanceStream, list);
    }
    list.push(report);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Whether reports for the stream wait to be written (a worker spoke; the log has not heard yet). */
  hasPending(stream: string): boolean {
    return this.pending.has(stream) || this.busy.has(stream);
  }

  /** Resolves when every report submitted so far has been written (or rejected). */
  async idle(): Promise<void> {
    if (this.pending.size === 0 && this.inFlight === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = new Map();
    for (const [stream, reports] of batch) {
      this.inFlight += 1;
      const previous = this.busy.get(stream) ?? Promise.resolve();
      const run = previous
        .then(() => this.applyStream(stream, reports))
        .catch((error) => this.o.onError(error, stream))
        .finally(() => {
          if (this.busy.get(stream) === run) this.busy.delete(stream);
          this.inFlight -= 1;
          if (this.inFlight === 0 && this.pending.size === 0) {
            for (const w of this.idleWaiters.splice(0)) w();
          }
        });
      this.busy.set(stream, run);
    }
  }

  private async applyStream(stream: string, reports: readonly AttemptReport[]): Promise<void> {
    let state = this.latest(stream);
    let withSuccessPath = this.o.log.supportsAppendMany;
    let withAlongside = withSuccessPath;
    let moved = 0;
    for (let tries = 0; ; tries++) {
      if (!state) state = foldInstance(await this.o.log.readStream(stream));
      const { events, after } = this.decideAll(state, reports);
      const expectedRevision = state ? state.revision : ("no_stream" as const);
      let alongside: Alongside | null = null;
      try {
        if (events.length > 0) {
          const advance = withSuccessPath ? this.successPathOrNone(after, stream) : null;
          let revision: bigint;
          if (advance) {
            // The attempt's success and the task's advance in one atomic write, with the intents
            // of the children it lets start: one commit between a parent's success and its
            // children's dispatch.
            alongside = withAlongside ? await this.childrenAlongside(advance.task, advance.event) : null;
            const results = await this.o.log.appendMany(
              [
                { streamId: stream, events, expectedRevision },
                {
                  streamId: taskStream(advance.task.key),
                  events: [advance.event],
                  expectedRevision: advance.task.revision,
                },
                ...(alongside?.writes ?? []),
              ],
              alongside ? { expectedHead: alongside.expectedHead } : {},
            );
            revision = (results[0] as AppendResult).nextExpectedRevision;
            const settle = alongside;
            alongside = null;
            settle?.settle(results.slice(2));
          } else {
            revision = (await this.o.log.append(stream, events, { expectedRevision })).nextExpectedRevision;
          }
          if (after) this.written.set(stream, { ...after, revision });
        }
        this.afterApply(reports, events, after);
        return;
      } catch (error) {
        const refused = alongside;
        refused?.settle(null);
        if (refused && error instanceof LogMovedError && moved < MAX_MOVED_RETRIES) {
          // The log moved on after the children were decided (most often: another success in the
          // same group commit): they are decided again on what it holds now, so that they still
          // start in their parent's commit, before they are left to the pass.
          moved += 1;
          continue;
        }
        const conflict = error instanceof WrongExpectedRevisionError ? error : null;
        if (refused && (!conflict || refused.writes.some((w) => w.streamId === conflict.streamId))) {
          // The children's intents could not be written with the success (the log moved on
          // since they were decided, a child's stream is not where the scheduler thought, the
          // append is more than the log takes at once): write the success without them, and let
          // the scheduler's pass start them.
          withAlongside = false;
          continue;
        }
        if (!(error instanceof WrongExpectedRevisionError) || tries >= MAX_CONFLICT_RETRIES) throw error;
        if (error.streamId !== stream) {
          // The task moved meanwhile: write the attempt alone; the scheduler advances the task.
          withSuccessPath = false;
          withAlongside = false;
          continue;
        }
        state = undefined; // someone else wrote: read the stream again and decide afresh
      }
    }
  }

  /** What to write with the task's success (see Alongside); a failure to decide is no reason to lose it. */
  private async childrenAlongside(
    task: TaskState,
    completed: DomainEventOf<"IntervalCompleted">,
  ): Promise<Alongside | null> {
    try {
      return (await this.o.alongside?.(task, completed)) ?? null;
    } catch (error) {
      this.o.onError(error, taskStream(task.key));
      return null;
    }
  }

  /**
   * The success path, or none when it cannot be decided (the task's schedule cannot be
   * advanced): the attempt's outcome is then written alone, and the task's decision says why it
   * does not move.
   */
  private successPathOrNone(
    inst: InstanceState | undefined,
    stream: string,
  ): ReturnType<ReportApplier["successPath"]> {
    try {
      return this.successPath(inst);
    } catch (error) {
      this.o.onError(error, stream);
      return null;
    }
  }

  /** The task's IntervalCompleted, when `inst` is a success of the task's current interval. */
  private successPath(
    inst: InstanceState | undefined,
  ): { task: TaskState; event: DomainEventOf<"IntervalCompleted"> } | null {
    if (inst?.status !== "success") return null;
    const task = this.o.projection.tasks.get(formatTaskKey(inst.key));
    if (!task || task.status === "retired" || task.logicalDate !== inst.logicalDate) return null;
    if (inst.dispatchedAt <= task.movedAt) return null;
    return { task, event: decideIntervalCompleted(task, inst.attempts.at(-1)?.attempt) };
  }

  private afterApply(
    reports: readonly AttemptReport[],
    events: readonly DomainEvent[],
    after: InstanceState | undefined,
  ): void {
    if (!this.o.onApplied) return;
    const rejected = new Set(
      events.flatMap((e) => (e.type === "CompletionRejected" ? [`${e.data.report}:${e.data.token}`] : [])),
    );
    const current = after?.attempts.at(-1);
    for (const r of reports) {
      if (rejected.has(`${r.kind}:${r.token}`)) this.o.onApplied(r, "rejected");
      else if (r.kind === "started" && current?.token === r.token && current.status === "running") {
        this.o.onApplied(r, "started_durable");
      } else if (
        r.kind === "started" &&
        (current?.token !== r.token || current.status === "abandoned" || current.status === "cancelled")
      ) {
        // The attempt was replaced, abandoned or cancelled before it could start: a worker
        // holding it must not wait for a permission that will never come.
        this.o.onApplied(r, "rejected");
      } else this.o.onApplied(r, "other");
    }
  }

  /** The projection has applied `stream` up to `revision`: drop what it now knows better. */
  observed(stream: string, revision: bigint): void {
    const mine = this.written.get(stream);
    if (mine && mine.revision <= revision) this.written.delete(stream);
  }

  /** The newer of the projection's state and the one this applier last wrote. */
  private latest(stream: string): InstanceState | undefined {
    const projected = this.o.projection.instances.get(stream);
    const mine = this.written.get(stream);
    if (!mine) return projected;
    if (projected && projected.revision >= mine.revision) {
      this.written.delete(stream);
      return projected;
    }
    return mine;
  }

  private decideAll(
    initial: InstanceState | undefined,
    reports: readonly AttemptReport[],
  ): { events: DomainEvent[]; after: InstanceState | undefined } {
    let state = initial;
    const out: DomainEvent[] = [];
    const retry = state
      ? (this.o.projection.tasks.get(formatTaskKey(state.key))?.spec.retry ?? DEFAULT_RETRY)
      : DEFAULT_RETRY;
    let revision = state?.revision ?? -1n;
    // A start and an outcome of the same attempt in one batch: the outcome says it all (it
    // names the worker). A gated attempt's start is always written first: it runs only after.
    // Only a success: a failure must know the attempt started (a lost worker is then retried
    // within its bounds, not as an attempt that never ran).
    const ending = new Set(reports.filter((r) => r.kind === "succeeded").map((r) => r.token));
    for (const report of reports) {
      if (report.kind === "started" && ending.has(report.token) && state?.idempotent) continue;
      const events = decideReport(state, toInput(report), {
        now: this.o.now(),
        retry,
        random: this.o.random(),
      });
      for (const e of events) {
        out.push(e);
        revision += 1n;
        state = evolveInstance(state, e, {
          revision,
          position: -1n,
          recordedAt: new Date(this.o.now()).toISOString(),
          streamId: state?.stream ?? "",
        });
      }
    }
    return { events: out, after: state };
  }
}

function toInput(r: AttemptReport): AttemptReportInput {
  switch (r.kind) {
    case "started":
      return {
        kind: "started",
        token: r.token,
        attempt: r.attempt,
        workerId: r.workerId,
        pid: r.pid,
        ...(r.outputPath ? { outputPath: r.outputPath } : {}),
      };
    case "heartbeat":
      return { kind: "heartbeat", token: r.token, attempt: r.attempt, workerId: r.workerId };
    case "succeeded":
      return {
        kind: "succeeded",
        token: r.token,
        attempt: r.attempt,
        workerId: r.workerId,
        durationMs: r.durationMs,
        exitCode: r.exitCode,
        stdoutTail: r.stdoutTail,
        stderrTail: r.stderrTail,
        ...(r.outputFile ? { outputFile: r.outputFile } : {}),
      };
    case "failed":
      return {
        kind: "failed",
        token: r.token,
        attempt: r.attempt,
        workerId: r.workerId,
        durationMs: r.durationMs,
        exitCode: r.exitCode,
        stdoutTail: r.stdoutTail,
        stderrTail: r.stderrTail,
        error: r.error,
        ...(r.outputFile ? { outputFile: r.outputFile } : {}),
      };
    default: {
      const never: never = r;
      return never;
    }
  }
}
