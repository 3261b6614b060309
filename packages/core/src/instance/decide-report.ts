import type { DomainEvent, EventDataOf } from "../events/catalog.js";
import { PROCESS_ENDED } from "../reconcile/lost-worker.js";
import type { RetryPolicy } from "../spec.js";
import { budgetPlace } from "./budget.js";
import { canRetry, retryDelayMs } from "./retry.js";
import { currentAttempt, type InstanceState, type OutputFileRecord } from "./state.js";

/** How an attempt failed, as AttemptFailed records it. */
export type AttemptFailureKind = EventDataOf<"AttemptFailed">["error"]["kind"];

interface ReportBase {
  readonly token: string;
  readonly attempt: number;
  readonly workerId: string;
}

export type AttemptReportInput =
  | (ReportBase & { readonly kind: "started"; readonly pid?: number; readonly outputPath?: string })
  | (ReportBase & { readonly kind: "heartbeat" })
  | (ReportBase & {
      readonly kind: "succeeded";
      readonly durationMs: number;
      readonly exitCode: number | null;
      readonly stdoutTail: string;
      readonly stderrTail: string;
      readonly outputFile?: OutputFileRecord;
    })
  | (ReportBase & {
      readonly kind: "failed";
      readonly durationMs: number;
      readonly exitCode: number | null;
      readonly stdoutTail: string;
      readonly stderrTail: string;
      readonly outputFile?: OutputFileRecord;
      readonly error: { readonly kind: AttemptFailureKind; readonly message: string };
      /** Ended by the scheduler before any worker began it: no worker started it. */
      readonly neverStarted?: boolean;
    });

export interface ReportContext {
  /** Epoch milliseconds, from the shell's clock. */
  readonly now: number;
  readonly retry: RetryPolicy;
  /** A number in [0, 1) for retry jitter, from the shell. */
  readonly random: number;
}

/** Retries a lost worker is allowed on an idempotent task beyond what the policy says. */
export const LOST_WORKER_RETRIES = 3;

/**
 * How an end of a scheduler process that halts an interval says so ("the 4th such end in a
 * row"): in the attempt's error, or its abandon's reason, where `why` finds it (`endsInARow`).
 */
export const SUCH_ENDS_IN_A_ROW = (n: number) => `the ${n}th such end in a row`;

/** The N of SUCH_ENDS_IN_A_ROW in an error or reason, if it says one. */
export function endsInARow(text: string): number | undefined {
  const m = / the (\d+)th such end in a row/.exec(text);
  return m ? Number(m[1]) : undefined;
}

/**
 * Whether one more end of the instance's attempt by its scheduler process's end halts the
 * interval: the ordinal of that end in the row (past LOST_WORKER_RETRIES), or undefined while it
 * may be tried again. The one rule for an attempt interrupted so and an intent left so.
 */
export function haltingProcessEnd(state: InstanceState): number | undefined {
  const before = processEnds(state);
  return before >= LOST_WORKER_RETRIES ? before + 1 : undefined;
}

/**
 * When a failed attempt is tried again. A worker lost (killed, out of memory) says nothing about
 * the task: an idempotent task is retried even past its policy (up to LOST_WORKER_RETRIES); a
 * task that is not idempotent is never retried once it started, since its side effect may
 * have happened; an attempt that never started never ran, so it is always safe to retry.
 */
export function retryAfterFailure(
  state: InstanceState,
  attempt: number,
  wasStarted: boolean,
  errorKind: string,
  ctx: ReportContext,
  errorMessage = "",
): string | undefined {
  const at = (delay: number) => iso(ctx.now + delay);
  if (errorKind === "interrupted") {
    // Stopped by a shutdown, not by the task: run again at once after the restart, apart from
    // the retry budget, if it is safe to; a started task that is not idempotent may have had
    // its side effect, and is left for the operator, as a lost one is. Its worker gone with its
    // scheduler process (killed, crashed) is such an interruption too, but one the task itself
    // may cause (its run taking the whole service down): past LOST_WORKER_RETRIES of them in a
    // row, the interval halts, as a lost worker's does.
    if (wasStarted && !state.idempotent) return undefined;
    if (errorMessage.includes(PROCESS_ENDED) && haltingProcessEnd(state) !== undefined) return undefined;
    return at(0);
  }
  // Interrupted attempts are counted apart from the policy's budget, and so are the attempts
  // before the interval was reopened (a retry, rerun or backfill starts a fresh budget).
  attempt =
    budgetPlace(state.attempts, attempt, ctx.retry.maxAttempts, state.budgetFrom ?? 0).place ?? attempt;
  if (errorKind === "lost") {
    if (!wasStarted) return at(0);
    if (!state.idempotent) return undefined;
    return attempt < Math.max(ctx.retry.maxAttempts, LOST_WORKER_RETRIES) ? at(0) : undefined;
  }
  return canRetry(ctx.retry, attempt) ? at(retryDelayMs(ctx.retry, attempt, ctx.random)) : undefined;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The attempts of the instance ended, one after another up to now, by their scheduler process's
 * end: interrupted as they ran, or abandoned as intents its workers never confirmed. Counted in
 * the interval's budget alone: an operator's retry, which reopens it, starts the count again.
 */
export function processEnds(state: InstanceState): number {
  let n = 0;
  const from = state.budgetFrom ?? 0;
  for (let i = state.attempts.length - 1; i >= 0; i--) {
    const a = state.attempts[i];
    if (a === undefined || a.attempt <= from) break;
    if ((a.status === "interrupted" || a.status === "abandoned") && a.endReason?.includes(PROCESS_ENDED)) n++;
    else if (a.status !== "queued" && a.status !== "running" && a.status !== "lease_expired") break;
  }
  return n;
}

function reject(
  report: AttemptReportInput,
  reason: "unknown_token" | "stale_token" | "already_terminal",
  currentToken?: string,
): DomainEvent[] {
  return [
    {
      type: "CompletionRejected",
      data: {
        token: report.token.slice(0, 256),
        attempt: report.attempt,
        report: report.kind,
        reason,
        workerId: report.workerId,
        ...(currentToken ? { currentToken } : {}),
      },
    },
  ];
}

/**
 * Decides what a worker's report means for the attempt stream. A report is applied only if
 * it carries the current attempt's token and the attempt has not ended; otherwise it is
 * rejected and the rejection recorded. Heartbeats write nothing (the lease lives in memory).
 */
export function decideReport(
  state: InstanceState | undefined,
  report: AttemptReportInput,
  ctx: ReportContext,
): DomainEvent[] {
  if (!state) return reject(report, "unknown_token");
  const known = state.attempts.find((a) => a.token === report.token);
  if (!known) return reject(report, "unknown_token");
  const current = currentAttempt(state);
  if (!current || current.token !== report.token) return reject(report, "stale_token", current?.token);
  const ended =
    current.status !== "queued" && current.status !== "running" && current.status !== "lease_expired";
  if (ended) {
    // A late start or heartbeat of an ended attempt changes nothing; a second outcome is refused.
    return report.kind === "started" || report.kind === "heartbeat" ? [] : reject(report, "already_terminal");
  }
  const token = report.token;
  const attempt = current.attempt;
  // Optional fields are spread after every other one, here and below: an object literal that
  // adds properties after spreading a non-empty object takes the engine's slow path (in Node 20,
  // some fifty times slower), and these literals are made for every report. The log stores the
  // fields in the catalog's order whatever the order here.
  const started = (): DomainEvent => ({
    type: "AttemptStarted",
    data: {
      attempt,
      token,
      workerId: report.workerId,
      leaseExpiresAt: iso(ctx.now + state.leaseSeconds * 1000),
      ...(report.kind === "started" && report.pid !== undefined ? { pid: report.pid } : {}),
      ...(report.kind === "started" && report.outputPath !== undefined
        ? { outputPath: report.outputPath }
        : {}),
    },
  });
  const needsStart = current.status === "queued" || current.status === "lease_expired";
  switch (report.kind) {
    case "started":
      return needsStart ? [started()] : [];
    // A heartbeat says the attempt started: one whose start is not on record is recorded running
    // (its lease had expired, or its start report went with a scheduler that took it and died
    // before writing it: the worker, told it was delivered, never sends it again).
    case "heartbeat":
      return needsStart ? [started()] : [];
    case "succeeded":
      // An attempt that ends before its start was recorded: the outcome names the worker.
      return [
        {
          type: "AttemptSucceeded",
          data: {
            attempt,
            token,
            durationMs: report.durationMs,
            exitCode: report.exitCode,
            output: outputOf(report),
            cacheHit: false,
            ...(current.status === "queued" ? { workerId: report.workerId } : {}),
            ...(state.cacheKey ? { cacheKey: state.cacheKey } : {}),
          },
        },
      ];
    case "failed": {
      const retryAt = retryAfterFailure(
        state,
        attempt,
        current.status !== "queued",
        report.error.kind,
        ctx,
        report.error.message,
      );
      // A worker lost before the start was recorded: the attempt did not start (a task that
      // is not idempotent waits for that record, its start permission, before running), so no
      // start is claimed for it; nor for one the scheduler ends that no worker began.
      const claimStart = current.status === "queued" && report.error.kind !== "lost" && !report.neverStarted;
      // Ended by its scheduler process's end once too often in a row (not for being a started
      // task that is not idempotent): said in its error, which `why` then reads.
      const nth =
        report.error.kind === "interrupted" &&
        report.error.message.includes(PROCESS_ENDED) &&
        (current.status === "queued" || state.idempotent)
          ? haltingProcessEnd(state)
          : undefined;
      const error =
        nth !== undefined
          ? { ...report.error, message: `${report.error.message}, ${SUCH_ENDS_IN_A_ROW(nth)}` }
          : report.error;
      return [
        {
          type: "AttemptFailed",
          data: {
            attempt,
            token,
            error,
            exitCode: report.exitCode,
            durationMs: report.durationMs,
            output: outputOf(report),
            ...(claimStart ? { workerId: report.workerId } : {}),
            ...(retryAt ? { retryAt } : {}),
          },
        },
      ];
    }
    default: {
      const never: never = report;
      return never;
    }
  }
}

function outputOf(report: { stdoutTail: string; stderrTail: string; outputFile?: OutputFileRecord }) {
  const { stdoutTail, stderrTail, outputFile } = report;
  if (!outputFile) return { stdoutTail, stderrTail };
  const { path, bytes, sha256, cutBytes, error } = outputFile;
  return { stdoutTail, stderrTail, file: { path, bytes, sha256, cutBytes, ...(error ? { error } : {}) } };
}
