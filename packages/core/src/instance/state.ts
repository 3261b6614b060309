import type { DomainEvent, EventDataOf } from "../events/catalog.js";
import type { TaskKey } from "../keys.js";

export type AttemptStatus =
  | "queued"
  | "running"
  | "success"
  | "failed"
  /** Stopped by a shutdown (the scheduler's stop or drain): not a failure of the task. */
  | "interrupted"
  | "abandoned"
  | "cancelled"
  | "lease_expired";

export type InstanceStatus =
  | "queued"
  | "running"
  | "retry_wait"
  | "success"
  | "failed"
  | "skipped"
  | "upstream_failed"
  | "abandoned"
  | "cancelled";

export const TERMINAL_INSTANCE_STATUSES: ReadonlySet<InstanceStatus> = new Set([
  "success",
  "failed",
  "skipped",
  "upstream_failed",
  "abandoned",
  "cancelled",
]);

/** An attempt's whole output as the worker kept it in a file. */
export interface OutputFileRecord {
  readonly path: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly cutBytes: number;
  readonly error?: string;
}

export interface AttemptView {
  readonly attempt: number;
  readonly token: string;
  readonly status: AttemptStatus;
  readonly intendedAt: string;
  readonly workerId: string | null;
  readonly startedAt: string | null;
  readonly endedAt: string | null;
  readonly leaseExpiresAt: string | null;
  readonly durationMs: number | null;
  readonly exitCode: number | null;
  /** Why the attempt ended, in words: "exit code 1", "abandoned: never confirmed by a worker", ... */
  readonly endReason: string | null;
  readonly stdoutTail: string;
  readonly stderrTail: string;
  readonly cacheHit: boolean;
  /** Where the worker writes the attempt's whole output, once it said so. */
  readonly outputPath: string | null;
  /** The whole output's file as it was when the attempt ended (size, SHA-256, bytes cut). */
  readonly outputFile: OutputFileRecord | null;
}

/** An interval an operator marked done by hand. */
export interface MarkRecord {
  readonly outcome: "success" | "skipped";
  readonly by: string;
  readonly reason: string;
  readonly at: string;
}

/** An outside task's interval as its producer reported it. */
export interface ReportRecord {
  readonly outcome: "succeeded" | "failed";
  readonly by: string;
  readonly reason: string | null;
  readonly at: string;
}

/** One task for one logical date: the fold of its attempt stream. */
export interface InstanceState {
  readonly stream: string;
  readonly key: TaskKey;
  readonly logicalDate: string;
  readonly runId: string | null;
  readonly status: InstanceStatus;
  readonly attempts: readonly AttemptView[];
  readonly idempotent: boolean;
  readonly leaseSeconds: number;
  readonly connection: string | null;
  readonly operator: Record<string, unknown>;
  /** When the next attempt is due, while `retry_wait`. */
  readonly retryAt: string | null;
  readonly revision: bigint;
  /** Log position of the latest DispatchIntended. */
  readonly dispatchedAt: bigint;
  /** Why the instance ended, when it is terminal. */
  readonly reason: string | null;
  /** The current attempt's cache key, when the task declares one. */
  readonly cacheKey: string | null;
  /**
   * Attempts before this number do not count against the retry policy: the last attempt before
   * the interval was opened again after it had ended (a retry, rerun or backfill of it), which
   * starts a fresh retry budget. Absent (0) in states kept before it was recorded.
   */
  readonly budgetFrom?: number;
  /** Who marked the interval done by hand, and why (null, or absent: it was not). */
  readonly marked?: MarkRecord | null;
  /** How an outside task's interval was reported, by whom (null, or absent: it was not). */
  readonly reported?: ReportRecord | null;
}

export function currentAttempt(state: InstanceState): AttemptView | undefined {
  return state.attempts.at(-1);
}

export function isTerminal(state: InstanceState): boolean {
  return TERMINAL_INSTANCE_STATUSES.has(state.status);
}

/**
 * Whether an interval's stream counts for the task standing at `movedAt`: dispatched (or decided)
 * since the task last moved, or a report of the interval the task stands at (an outside task's
 * report made ahead of it is held, and counts once the task reaches it).
 */
export function countsForTask(
  inst: InstanceState,
  task: { readonly logicalDate: string; readonly movedAt: bigint },
): boolean {
  return inst.dispatchedAt > task.movedAt || (!!inst.reported && inst.logicalDate === task.logicalDate);
}

interface At {
  readonly revision: bigint;
  readonly position: bigint;
  readonly recordedAt: string;
  readonly streamId: string;
}

/**
 * Who ran an attempt whose start was folded into its outcome, and when it began: the outcome's
 * worker, and its end less its duration, when the attempt has no worker yet.
 */
function startOf(
  a: AttemptView,
  workerId: string | undefined,
  durationMs: number | undefined,
  endedAt: string,
): { readonly workerId: string | null; readonly startedAt: string | null } {
  if (a.workerId !== null || workerId === undefined) return a;
  return { workerId, startedAt: new Date(Date.parse(endedAt) - (durationMs ?? 0)).toISOString() };
}

/** The status each "closed without running" event gives an instance. */
const CLOSED_STATUS = {
  InstanceSkipped: "skipped",
  InstanceUpstreamFailed: "upstream_failed",
  InstanceCancelled: "cancelled",
} as const satisfies Record<string, InstanceStatus>;

/**
 * The attempts with the one of `token` changed. Each change spreads the attempt once and names
 * the fields it sets: an attempt view keeps one shape (a spread inside a spread, or of an empty
 * object, leaves V8 an object of no fixed shape, many times slower to make and to read).
 */
function updateAttempt(
  state: InstanceState,
  token: string,
  change: (a: AttemptView) => AttemptView,
): readonly AttemptView[] {
  return state.attempts.map((a) => (a.token === token ? change(a) : a));
}

function failureText(d: EventDataOf<"AttemptFailed">): string {
  return d.error.kind === "exit_code" ? d.error.message : `${d.error.kind}: ${d.error.message}`;
}

/** Applies one attempt-stream event. */
export function evolveInstance(
  state: InstanceState | undefined,
  event: DomainEvent,
  at: At,
): InstanceState | undefined {
  if (event.type === "DispatchIntended") {
    const d = event.data;
    const attempt: AttemptView = {
      attempt: d.attempt,
      token: d.token,
      status: "queued",
      intendedAt: at.recordedAt,
      workerId: null,
      startedAt: null,
      endedAt: null,
      leaseExpiresAt: null,
      durationMs: null,
      exitCode: null,
      endReason: null,
      stdoutTail: "",
      stderrTail: "",
      cacheHit: false,
      outputPath: null,
      outputFile: null,
    };
    // A dispatch after the interval had ended (reopened by a retry, rerun or backfill) starts a
    // fresh retry budget; a retry of the policy goes on with the budget it has. An attempt past
    // the first of a stream not held (the scheduler let go of its ended interval, the task having
    // moved past it) is such a reopening too: its budget starts after the attempt before it.
    // (A stream taken up again by an outcome with no attempt of it held, a skip, a closing or a
    // mark, holds none: the attempt before this one is the last.)
    const budgetFrom = !state
      ? d.attempt - 1
      : isTerminal(state)
        ? (state.attempts.at(-1)?.attempt ?? d.attempt - 1)
        : (state.budgetFrom ?? 0);
    return {
      stream: at.streamId,
      key: d.key,
      logicalDate: d.logicalDate,
      runId: d.runId ?? state?.runId ?? null,
      status: "queued",
      attempts: [...(state?.attempts ?? []), attempt],
      idempotent: d.idempotent,
      leaseSeconds: d.leaseSeconds,
      connection: d.connection ?? null,
      operator: d.operator,
      retryAt: null,
      revision: at.revision,
      dispatchedAt: at.position,
      reason: null,
      cacheKey: d.cacheKey ?? null,
      budgetFrom,
      marked: null,
    };
  }
  if (event.type === "IntervalMarked") return marked(state, event.data, at);
  if (event.type === "IntervalReported") return reported(state, event.data, at);
  if (!state) {
    // An outcome with no dispatch before it: only the skip decisions start a stream this way.
    if (
      event.type === "InstanceSkipped" ||
      event.type === "InstanceUpstreamFailed" ||
      event.type === "InstanceCancelled"
    ) {
      return {
        stream: at.streamId,
        key: event.data.key,
        logicalDate: event.data.logicalDate,
        runId: event.data.runId ?? null,
        status: CLOSED_STATUS[event.type],
        attempts: [],
        idempotent: false,
        leaseSeconds: 30,
        connection: null,
        operator: {},
        retryAt: null,
        revision: at.revision,
        dispatchedAt: at.position,
        reason: event.data.reason,
        cacheKey: null,
      };
    }
    return undefined;
  }
  const revision = at.revision;
  switch (event.type) {
    case "AttemptStarted":
      return {
        ...state,
        revision,
        status: "running",
        attempts: updateAttempt(state, event.data.token, (a) => ({
          ...a,
          status: "running",
          workerId: event.data.workerId,
          startedAt: at.recordedAt,
          leaseExpiresAt: event.data.leaseExpiresAt,
          outputPath: event.data.outputPath ? event.data.outputPath : a.outputPath,
        })),
      };
    case "AttemptLeaseExtended":
      return {
        ...state,
        revision,
        attempts: updateAttempt(state, event.data.token, (a) => ({
          ...a,
          leaseExpiresAt: event.data.leaseExpiresAt,
        })),
      };
    case "AttemptHeartbeatExpired":
      return {
        ...state,
        revision,
        attempts: updateAttempt(state, event.data.token, (a) => ({
          ...a,
          status: "lease_expired",
          endReason: "lease expired",
        })),
      };
    case "AttemptSucceeded": {
      const d = event.data;
      const file = d.output?.file;
      return {
        ...state,
        revision,
        status: "success",
        reason: null,
        attempts: updateAttempt(state, d.token, (a) => {
          const start = startOf(a, d.workerId, d.durationMs, at.recordedAt);
          return {
            ...a,
            workerId: start.workerId,
            startedAt: start.startedAt,
            status: "success",
            endedAt: at.recordedAt,
            durationMs: d.durationMs,
            exitCode: d.exitCode,
            endReason: d.cacheHit ? "cache hit" : "succeeded",
            stdoutTail: d.output?.stdoutTail ?? "",
            stderrTail: d.output?.stderrTail ?? "",
            cacheHit: d.cacheHit,
            outputFile: file ?? a.outputFile,
            outputPath: file ? file.path : a.outputPath,
          };
        }),
      };
    }
    case "AttemptFailed": {
      const d = event.data;
      const reason = failureText(d);
      return {
        ...state,
        revision,
        status: d.retryAt ? "retry_wait" : "failed",
        retryAt: d.retryAt ?? null,
        reason: d.retryAt ? null : reason,
        attempts: updateAttempt(state, d.token, (a) => {
          const start = startOf(a, d.workerId, d.durationMs, at.recordedAt);
          const file = d.output?.file;
          return {
            ...a,
            workerId: start.workerId,
            startedAt: start.startedAt,
            // (Recorded as a failure of kind "interrupted": told apart here, on every read of
            // old and new logs alike.)
            status: d.error.kind === "interrupted" ? "interrupted" : "failed",
            endedAt: at.recordedAt,
            durationMs: d.durationMs ?? null,
            exitCode: d.exitCode,
            endReason: reason,
            stdoutTail: d.output?.stdoutTail ?? "",
            stderrTail: d.output?.stderrTail ?? "",
            outputFile: file ?? a.outputFile,
            outputPath: file ? file.path : a.outputPath,
          };
        }),
      };
    }
    case "AttemptAbandoned":
      return {
        ...state,
        revision,
        status: event.data.retry ? "retry_wait" : "abandoned",
        retryAt: event.data.retry ? at.recordedAt : null,
        reason: event.data.retry ? null : `abandoned: ${event.data.reason}`,
        attempts: updateAttempt(state, event.data.token, (a) => ({
          ...a,
          status: "abandoned",
          endedAt: at.recordedAt,
          endReason: `abandoned by ${event.data.by}: ${event.data.reason}`,
        })),
      };
    case "AttemptCancelled":
      return {
        ...state,
        revision,
        status: "cancelled",
        reason: `cancelled: ${event.data.reason}`,
        attempts: updateAttempt(state, event.data.token, (a) => ({
          ...a,
          status: "cancelled",
          endedAt: at.recordedAt,
          endReason: `cancelled: ${event.data.reason}`,
        })),
      };
    case "InstanceSkipped":
    case "InstanceUpstreamFailed":
    case "InstanceCancelled":
      return {
        ...state,
        revision,
        status: CLOSED_STATUS[event.type],
        reason: event.data.reason,
        runId: event.data.runId ?? state.runId,
      };
    case "CompletionRejected":
      return { ...state, revision };
    default:
      return state;
  }
}

/** The interval marked done by hand: its outcome, who and why (its attempts stand as they were). */
function marked(state: InstanceState | undefined, d: EventDataOf<"IntervalMarked">, at: At): InstanceState {
  const mark: MarkRecord = { outcome: d.outcome, by: d.by, reason: d.reason, at: at.recordedAt };
  return {
    stream: at.streamId,
    key: d.key,
    logicalDate: d.logicalDate,
    runId: d.runId ?? state?.runId ?? null,
    status: d.outcome,
    attempts: state?.attempts ?? [],
    idempotent: state?.idempotent ?? false,
    leaseSeconds: state?.leaseSeconds ?? 30,
    connection: state?.connection ?? null,
    operator: state?.operator ?? {},
    retryAt: null,
    revision: at.revision,
    // The latest decision about the interval: the task completes it from here.
    dispatchedAt: at.position,
    reason: `marked ${d.outcome === "success" ? "succeeded" : "skipped"} by ${d.by}: ${d.reason}`,
    cacheKey: state?.cacheKey ?? null,
    budgetFrom: state?.budgetFrom ?? 0,
    marked: mark,
  };
}

/** An outside task's interval as its producer reported it: succeeded, or failed with why. */
function reported(
  state: InstanceState | undefined,
  d: EventDataOf<"IntervalReported">,
  at: At,
): InstanceState {
  const report: ReportRecord = { outcome: d.outcome, by: d.by, reason: d.reason ?? null, at: at.recordedAt };
  return {
    stream: at.streamId,
    key: d.key,
    logicalDate: d.logicalDate,
    runId: d.runId ?? state?.runId ?? null,
    status: d.outcome === "succeeded" ? "success" : "failed",
    attempts: [],
    idempotent: false,
    leaseSeconds: 30,
    connection: null,
    operator: {},
    retryAt: null,
    revision: at.revision,
    dispatchedAt: at.position,
    reason: `reported ${d.outcome} by ${d.by}${d.reason ? `: ${d.reason}` : ""}`,
    cacheKey: null,
    budgetFrom: 0,
    marked: null,
    reported: report,
  };
}

/** Folds an attempt stream read from the log (for instances no longer held in memory). */
export function foldInstance(
  events: ReadonlyArray<
    DomainEvent & {
      readonly streamId: string;
      readonly revision: bigint;
      readonly position: bigint;
      readonly metadata: { readonly recordedAt: string };
    }
  >,
): InstanceState | undefined {
  let state: InstanceState | undefined;
  for (const e of events) {
    state = evolveInstance(state, e, {
      revision: e.revision,
      position: e.position,
      recordedAt: e.metadata.recordedAt,
      streamId: e.streamId,
    });
  }
  return state;
}

/** The last line of an output tail that is not blank (a failed attempt's stderr usually says why there). */
export function lastLineOf(text: string): string | undefined {
  return text
    .split("\n")
    .map((l) => l.trimEnd())
    .filter((l) => l !== "")
    .at(-1);
}
