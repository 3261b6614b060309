import type { DomainEvent } from "../events/catalog.js";
import { countsForTask, currentAttempt, type InstanceState, isTerminal } from "../instance/state.js";
import type { TaskState } from "../task/state.js";

/**
 * Reconcile check: work left non-terminal with nothing running. An instance whose task has
 * moved on (reset by a backfill, or advanced) while the instance still waits for a retry or a
 * dispatch can never finish: it is closed as abandoned. Returns the events to write, or none.
 */
export function decideStuckInstance(
  inst: InstanceState,
  task: TaskState | undefined,
  by: string,
): DomainEvent[] {
  if (isTerminal(inst)) return [];
  const superseded = !task || task.logicalDate !== inst.logicalDate || inst.dispatchedAt < task.movedAt;
  if (!superseded) return [];
  if (inst.status === "running") return []; // its outcome still arrives; the lease check watches it
  const a = currentAttempt(inst);
  if (!a) return [];
  return [
    {
      type: "AttemptAbandoned",
      data: {
        attempt: a.attempt,
        token: a.token,
        reason: task ? "the task moved on to another interval" : "the task is no longer declared",
        by,
        retry: false,
      },
    },
  ];
}

/** A task whose current instance is terminal needs the scheduler to record the outcome. */
export function needsScheduler(inst: InstanceState, task: TaskState | undefined): boolean {
  return !!task && isTerminal(inst) && task.logicalDate === inst.logicalDate && countsForTask(inst, task);
}
