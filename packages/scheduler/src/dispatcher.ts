import type { RunCommand, WorkerReport } from "@chronolog/worker";

/**
 * Hears a worker's report. A promise it returns settles once the report is written (or its
 * write failed): a dispatcher that acknowledges reports to their worker waits for it first.
 */
export type ReportListener = (report: WorkerReport) => unknown;

/** Where the scheduler sends attempts and hears back from: a worker pool, in practice. */
export interface Dispatcher {
  dispatch(commands: readonly RunCommand[]): void;
  /** Returns the function that stops the listening, where the dispatcher offers one. */
  onReport(listener: ReportListener): (() => void) | undefined;
  /** Which of these tokens does any live worker know? token -> worker id. */
  query(tokens: readonly string[], timeoutMs?: number): Promise<Map<string, string>>;
  cancel(token: string, reason: string): unknown;
  /** AttemptStarted is durable: give an attempt that waits for it (not idempotent) its start permission. */
  proceed(token: string): unknown;
  /**
   * Stops at once everything the workers run or hold, each attempt reported lost with `reason`:
   * for when this scheduler may no longer supervise them (see Membership.fenced). Returns how
   * many attempts were stopped.
   */
  killAll?(reason: string): number;
}
