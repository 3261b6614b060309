import { type InstanceStatus, TERMINAL_INSTANCE_STATUSES } from "../instance/state.js";
import type { TaskState } from "../task/state.js";
import { runBlockers } from "./blockers.js";
import type { RunState, RunStatus } from "./state.js";

/**
 * Where a task stands in a run: its instance's status in the run's latest try once that try
 * has an attempt or an outcome for it (or, for a task the try did not run again, the outcome
 * kept from before), else `pending`: the try has done nothing for it yet.
 */
export type RunTaskState = InstanceStatus | "pending";

/** Every state a task can have in a run, in the order they are listed. */
export const RUN_TASK_STATES: readonly RunTaskState[] = [
  "success",
  "failed",
  "abandoned",
  "upstream_failed",
  "cancelled",
  "skipped",
  "running",
  "queued",
  "retry_wait",
  "pending",
];

/** A run's state, its tasks' states, their counts and why it waits: what every surface shows. */
export interface RunSummary {
  readonly state: RunStatus;
  /** task id -> its state in the run. */
  readonly tasks: Readonly<Record<string, RunTaskState>>;
  /** How many tasks are in each state (every state, zeros included). */
  readonly counts: Readonly<Record<RunTaskState, number>>;
  /** Tasks that have ended in the run, of `total`. */
  readonly ended: number;
  readonly total: number;
  /** Why a run that is going cannot finish (empty for one that is moving or has ended). */
  readonly waiting: readonly string[];
  /** All of it in one line: "running, 1 of 3 tasks ended (success 1, pending 2); waiting: ...". */
  readonly text: string;
}

/**
 * The one account of a run. `run.outcomes` holds, for each task, its status in the run's
 * latest try (a rerun clears those of the tasks it runs again); `tasks` is where each task
 * stands, for what keeps the run from finishing.
 */
export function summarizeRun(run: RunState, tasks: ReadonlyMap<string, TaskState>): RunSummary {
  const states: Record<string, RunTaskState> = {};
  const counts = Object.fromEntries(RUN_TASK_STATES.map((s) => [s, 0])) as Record<RunTaskState, number>;
  let ended = 0;
  for (const t of run.tasks) {
    const s: RunTaskState = run.outcomes[t] ?? "pending";
    states[t] = s;
    counts[s] += 1;
    if (s !== "pending" && TERMINAL_INSTANCE_STATUSES.has(s)) ended += 1;
  }
  const waiting = runBlockers(tasks, run);
  const parts = RUN_TASK_STATES.filter((s) => counts[s] > 0).map((s) => `${s} ${counts[s]}`);
  const text = `${run.status}, ${ended} of ${run.tasks.length} tasks ended${parts.length > 0 ? ` (${parts.join(", ")})` : ""}${waiting.length > 0 ? `; waiting: ${waiting.join("; ")}` : ""}`;
  return { state: run.status, tasks: states, counts, ended, total: run.tasks.length, waiting, text };
}
