import { describeGateReason, evaluateGate, type GateDecision, type GateParent } from "../gate.js";
import { currentAttempt } from "../instance/state.js";
import { formatTaskKey } from "../keys.js";
import { shortInstant } from "../schedule/interval.js";
import type { TaskState } from "../task/state.js";
import type { SchedulerProjection } from "./scheduler-projection.js";

export type TaskCondition =
  | "retired"
  | "paused"
  | "failed"
  | "running"
  | "queued"
  | "retry_wait"
  | "succeeded"
  | "not_due"
  | "ended"
  | "blocked"
  | "ready"
  | "unknown";

export interface Explanation {
  readonly task: string;
  readonly condition: TaskCondition;
  /** One sentence per reason, e.g. "waiting for sales/acme/orders_raw/ALL to finish 2026-11-28T02:00Z; ...". */
  readonly reasons: readonly string[];
  readonly logicalDate: string | null;
  readonly nextRunDate: string | null;
  readonly gate: GateDecision | null;
}

/**
 * The gate's view of every parent of `task`, read from the projection, or from `ahead` for a
 * parent whose next state is decided but not yet in the projection.
 */
export function gateParents(
  projection: SchedulerProjection,
  task: TaskState,
  ahead?: ReadonlyMap<string, TaskState>,
): GateParent[] {
  return task.spec.parents.map((key) => {
    const id = formatTaskKey(key);
    const parent = ahead?.get(id) ?? projection.tasks.get(id);
    return {
      key,
      state: parent && {
        cron: parent.spec.cron,
        timezone: parent.spec.timezone,
        status: parent.status,
        prevIntervalStart: parent.prevIntervalStart,
        ...(parent.failure
          ? { failedInterval: { logicalDate: parent.failure.logicalDate, state: parent.failure.state } }
          : {}),
      },
    };
  });
}

export function gateFor(
  projection: SchedulerProjection,
  task: TaskState,
  ahead?: ReadonlyMap<string, TaskState>,
): GateDecision {
  if (task.spec.parents.length === 0) return { open: true };
  return evaluateGate(
    { logicalDate: task.logicalDate, cron: task.spec.cron, timezone: task.spec.timezone },
    gateParents(projection, task, ahead),
  );
}

/** Why is this task (not) running? Answered from the projection alone; writes nothing. */
export function explainTask(projection: SchedulerProjection, taskId: string, nowMs: number): Explanation {
  const task = projection.tasks.get(taskId);
  if (!task) {
    return {
      task: taskId,
      condition: "unknown",
      reasons: [`no task ${taskId} is declared`],
      logicalDate: null,
      nextRunDate: null,
      gate: null,
    };
  }
  const base = { task: taskId, logicalDate: task.logicalDate, nextRunDate: task.nextRunDate };
  const at = shortInstant(task.logicalDate);
  if (task.status === "retired")
    return { ...base, condition: "retired", reasons: ["the task is retired"], gate: null };
  const instance = projection.currentInstance(task);
  if (instance) {
    const attempt = currentAttempt(instance);
    switch (instance.status) {
      case "running":
        return {
          ...base,
          condition: "running",
          reasons: [`attempt ${attempt?.attempt} for ${at} is running on ${attempt?.workerId ?? "a worker"}`],
          gate: null,
        };
      case "queued":
        return {
          ...base,
          condition: "queued",
          reasons: [`attempt ${attempt?.attempt} for ${at} is dispatched; waiting for a worker to start it`],
          gate: null,
        };
      case "retry_wait":
        return {
          ...base,
          condition: "retry_wait",
          reasons: [
            `attempt ${attempt?.attempt} for ${at} failed (${attempt?.endReason ?? "unknown"}); retry due ${instance.retryAt ? shortInstant(instance.retryAt) : "now"}`,
          ],
          gate: null,
        };
      case "success":
        return {
          ...base,
          condition: "succeeded",
          reasons: [`${at} succeeded; advancing the schedule`],
          gate: null,
        };
      default:
        return {
          ...base,
          condition: "failed",
          reasons: [`${at} ended ${instance.status}: ${instance.reason ?? "no reason recorded"}`],
          gate: null,
        };
    }
  }
  if (task.failure) {
    return {
      ...base,
      condition: "failed",
      reasons: [
        `${shortInstant(task.failure.logicalDate)} ended ${task.failure.state}: ${task.failure.reason}`,
      ],
      gate: null,
    };
  }
  if (task.status === "paused")
    return { ...base, condition: "paused", reasons: ["the task is paused"], gate: null };
  if (task.spec.endDate && Date.parse(task.logicalDate) > Date.parse(task.spec.endDate)) {
    const end = shortInstant(task.spec.endDate);
    return { ...base, condition: "ended", reasons: [`the schedule ended at ${end}`], gate: null };
  }
  if (Date.parse(task.nextRunDate) > nowMs) {
    return {
      ...base,
      condition: "not_due",
      reasons: [`the interval ${at} is not due until ${shortInstant(task.nextRunDate)}`],
      gate: null,
    };
  }
  const gate = gateFor(projection, task);
  if (!gate.open)
    return { ...base, condition: "blocked", reasons: gate.reasons.map(describeGateReason), gate };
  return { ...base, condition: "ready", reasons: [`${at} is due and its parents are done`], gate };
}
