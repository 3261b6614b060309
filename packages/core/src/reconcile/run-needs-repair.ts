import type { RunState } from "../run/state.js";

/** A run left running although every task of it is terminal: the scheduler must finish it. */
export function runNeedsRepair(run: RunState): boolean {
  if (run.status !== "running" || run.tasks.length === 0) return false;
  return run.tasks.every((t) => {
    const o = run.outcomes[t];
    return o !== undefined && o !== "queued" && o !== "running" && o !== "retry_wait";
  });
}
