/**
 * Messages between the scheduler (the coordinator, the one process that writes the log in
 * embedded mode) and its worker processes, over the Node IPC channel. Messages travel in
 * batches: one IPC message carries every command or report made in one tick.
 *
 * Every report carries the attempt's dispatch token; the coordinator checks it against the
 * attempt stream before anything is applied.
 */

import type { AttemptFailureKind, Secrets } from "@chronolog/core";

export interface RunCommand {
  readonly kind: "run";
  /** The attempt stream, e.g. `instance-sales/acme/orders/ALL@2026-11-28T02:00:00.000Z`. */
  readonly instanceStream: string;
  readonly taskKey: string;
  readonly logicalDate: string;
  readonly attempt: number;
  readonly token: string;
  /** The rendered operator (an OperatorSpec with templates already rendered). */
  readonly operator: Record<string, unknown>;
  /** The task's worker queue, when it declares one (workers that serve that queue run it). */
  readonly queue?: string;
  /** Seconds the lease lasts without a heartbeat; the worker heartbeats at a third of it. */
  readonly leaseSeconds: number;
  /** Extra environment for shell tasks (merged over the worker's own). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The task's secrets by reference (`{ NAME: { env } | { file } | { command } }`): resolved by
   * this worker when the attempt runs, given to shell and node tasks as environment variables
   * and written into an http operator's `{{ secrets.NAME }}` placeholders; every value is masked
   * in what the attempt reports.
   */
  readonly secrets?: Readonly<Secrets>;
  /**
   * For tasks that are not idempotent: report `started`, then wait for a ProceedCommand (sent
   * once AttemptStarted is durable) before running anything. An attempt that never got that far
   * never ran, so the coordinator may safely dispatch it again.
   */
  readonly awaitProceed?: boolean;
}

/** AttemptStarted is durable: the worker may now run the attempt. */
export interface ProceedCommand {
  readonly kind: "proceed";
  readonly token: string;
}

/** "Do you know these attempts?" (the first reconcile check). */
export interface QueryCommand {
  readonly kind: "query";
  readonly requestId: string;
  readonly tokens: readonly string[];
}

/** Stop an attempt (fail-fast runs, operator decisions). The worker reports it failed. */
export interface CancelCommand {
  readonly kind: "cancel";
  readonly token: string;
  readonly reason: string;
}

/** Finish running attempts (or not, with `graceMs: 0`), then exit. */
export interface ShutdownCommand {
  readonly kind: "shutdown";
  readonly graceMs: number;
}

export type WorkerCommand = RunCommand | ProceedCommand | QueryCommand | CancelCommand | ShutdownCommand;

interface ReportBase {
  readonly token: string;
  readonly attempt: number;
  readonly instanceStream: string;
  readonly workerId: string;
  /** ISO time on the worker's clock. */
  readonly at: string;
  /**
   * Who the report is written as, when not the scheduler itself: `worker:<id>@<host>` for a
   * remote worker's report. Set by the scheduler when it receives the report, never taken from
   * the worker.
   */
  readonly actor?: string;
}

export interface StartedReport extends ReportBase {
  readonly kind: "started";
  readonly pid: number;
  /** Where the attempt's whole output is being written, when the worker keeps it. */
  readonly outputPath?: string;
}

export interface HeartbeatReport extends ReportBase {
  readonly kind: "heartbeat";
}

/** An attempt's whole output as kept in a file on the worker's host. */
export interface OutputFileInfo {
  /** Absolute path on the worker's host. */
  readonly path: string;
  /** The file's size, the cut marker included. */
  readonly bytes: number;
  /** SHA-256 of the file's bytes, in hex. */
  readonly sha256: string;
  /** Output dropped from the middle (past the size limit), 0 when it is whole. */
  readonly cutBytes: number;
  /** Why the file stops short (a write failed, e.g. a full disk), when it does. */
  readonly error?: string;
}

export interface OutputTail {
  /** At most the last 4 KiB of each stream. */
  readonly stdoutTail: string;
  readonly stderrTail: string;
  /** The whole output, when the worker keeps it in a file. */
  readonly outputFile?: OutputFileInfo;
  /**
   * A remote worker's end: the rest of the output file not uploaded yet, from `offset`
   * (base64), when it is small (the scheduler's `inlineOutputMax`).
   */
  readonly outputRest?: { readonly offset: number; readonly data: string };
}

export interface SucceededReport extends ReportBase, OutputTail {
  readonly kind: "succeeded";
  readonly durationMs: number;
  readonly exitCode: number | null;
}

/** How an attempt failed: the kinds AttemptFailed records. */
export type FailureKind = AttemptFailureKind;

export interface FailedReport extends ReportBase, OutputTail {
  readonly kind: "failed";
  readonly durationMs: number;
  readonly exitCode: number | null;
  readonly error: { readonly kind: FailureKind; readonly message: string };
  /**
   * An end of an attempt never begun: by the worker that held it queued for a slot (cancelled,
   * or its worker stopping), or by the scheduler (cancelled before any worker had it, or given
   * to a worker that said goodbye first). No worker is recorded as having started it; nothing
   * else depends on it (whether the attempt started is the log's: its start recorded or not).
   */
  readonly neverStarted?: true;
}

export type AttemptReport = StartedReport | HeartbeatReport | SucceededReport | FailedReport;

/** Answer to a QueryCommand: the tokens this worker is running or has finished but not yet had acknowledged. */
export interface KnownReport {
  readonly kind: "known";
  readonly requestId: string;
  readonly workerId: string;
  readonly running: readonly string[];
}

/** The worker is up and ready for commands. */
export interface ReadyReport {
  readonly kind: "ready";
  readonly workerId: string;
  readonly pid: number;
  readonly capacity: number;
}

export type WorkerReport = AttemptReport | KnownReport | ReadyReport;

export interface Batch<M> {
  readonly kind: "batch";
  readonly messages: readonly M[];
}

export const OUTPUT_TAIL_BYTES = 4096;
