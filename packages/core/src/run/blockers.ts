import { TERMINAL_INSTANCE_STATUSES } from "../instance/state.js";
import { shortInstant } from "../schedule/interval.js";
import { markCommand, retryCommand } from "../task/decide-halted.js";
import type { TaskState } from "../task/state.js";
import type { RunState } from "./state.js";

const TERMINAL = TERMINAL_INSTANCE_STATUSES;

/**
 * Why a run that is going cannot finish: its tasks that have not ended in it and stand stopped
 * at an earlier interval they did not complete (a task never advances past one), or paused. One
 * sentence each, naming the task, its interval and what to do; none for a run that is moving.
 */
export function runBlockers(tasks: ReadonlyMap<string, TaskState>, run: RunState): string[] {
  if (run.status !== "running") return [];
  const out: string[] = [];
  for (const id of run.tasks) {
    const outcome = run.outcomes[id];
    if (outcome !== undefined && TERMINAL.has(outcome)) continue;
    const t = tasks.get(id);
    if (!t) continue;
    const f = t.failure;
    if (f && Date.parse(f.logicalDate) < Date.parse(run.logicalDate))
      out.push(
        `blocked by ${id}'s ${f.state} interval ${shortInstant(f.logicalDate)}: ${retryCommand(id, f.logicalDate)}, or ${markCommand(id, f.logicalDate, "skipped")}`,
      );
    else if (t.status === "paused") out.push(`${id} is paused${t.pausedReason ? `: ${t.pausedReason}` : ""}`);
  }
  return out;
}
