import type { GateReason } from "../gate.js";
import type { InstanceState } from "../instance/state.js";
import { formatTaskKey } from "../keys.js";
import { shortInstant } from "../schedule/interval.js";
import { isExternal } from "../spec.js";
import type { TaskFailure, TaskState } from "../task/state.js";

/**
 * `why` for outside tasks (`operator: { type: external }`): what their children wait for, and
 * which of their own intervals are awaited, held (reported ahead of an earlier one) or failed.
 */

/** An interval as a report names it: the day alone at midnight UTC, the instant otherwise. */
export function reportedDate(iso: string): string {
  return iso.endsWith("T00:00:00.000Z") ? iso.slice(0, 10) : shortInstant(iso);
}

/** `chronolog report` for an interval, as printed in advice. */
export function reportCommand(task: string, logicalDate: string): string {
  return `chronolog report ${task} --interval ${logicalDate}`;
}

/** The reports of a task's intervals the task has not reached yet, oldest first. */
export function heldReports(
  task: Pick<TaskState, "id" | "key" | "logicalDate">,
  instances: ReadonlyMap<string, InstanceState>,
): InstanceState[] {
  const out: InstanceState[] = [];
  const at = Date.parse(task.logicalDate);
  for (const inst of instances.values())
    if (inst.reported && Date.parse(inst.logicalDate) > at && formatTaskKey(inst.key) === task.id)
      out.push(inst);
  return out.sort((a, b) => Date.parse(a.logicalDate) - Date.parse(b.logicalDate));
}

/** Why an outside task waits: the interval awaited, and the reports held until it is in. */
export function describeAwaited(
  taskId: string,
  logicalDate: string,
  view: {
    readonly instances: ReadonlyMap<string, InstanceState>;
    readonly tasks?: ReadonlyMap<string, TaskState>;
  },
): string {
  const task = view.tasks?.get(taskId);
  const head = `waits for an outside report of ${taskId} ${reportedDate(logicalDate)} (${reportCommand(taskId, logicalDate)})`;
  if (!task) return head;
  const held = heldReports(task, view.instances);
  if (held.length === 0) return head;
  const list = held.map((i) => `${reportedDate(i.logicalDate)} ${describeReport(i)}`).join("; ");
  return `${head}; held until it is in (its intervals complete in order): ${list}`;
}

/** `succeeded (by ci at ...)` or `failed (by ci: no file)`. */
export function describeReport(inst: InstanceState): string {
  const r = inst.reported;
  if (!r) return inst.status;
  return `reported ${r.outcome} by ${r.by}${r.reason ? `: ${r.reason}` : ""}`;
}

/**
 * A gate reason about a parent that is an outside task, in words: the report it waits for (the
 * parent's first interval not in). Null when the parent is not an outside task.
 */
export function describeOutsideBlock(
  r: GateReason,
  tasks: ReadonlyMap<string, TaskState> | undefined,
): string | null {
  if (r.kind !== "parent_behind" && r.kind !== "parent_failed") return null;
  const id = formatTaskKey(r.parent);
  const parent = tasks?.get(id);
  if (!parent || !isExternal(parent.spec)) return null;
  if (r.kind === "parent_failed")
    return `waits for ${id} ${reportedDate(r.expected)}: its outside report of ${reportedDate(r.logicalDate)} says failed${parent.failure?.logicalDate === r.logicalDate ? ` (${parent.failure.reason})` : ""}`;
  const first = Date.parse(parent.logicalDate) <= Date.parse(r.expected) ? parent.logicalDate : r.expected;
  const through = first === r.expected ? "" : ` (and its intervals through ${reportedDate(r.expected)})`;
  return `waits for an outside report of ${id} ${reportedDate(first)}${through}${r.paused ? " (it is paused)" : ""}`;
}

/** Why an outside task stopped at an interval reported failed, and the reports held behind it. */
export function describeOutsideFailure(
  task: TaskState,
  failure: TaskFailure,
  view: { readonly instances: ReadonlyMap<string, InstanceState> },
): string[] {
  const at = reportedDate(failure.logicalDate);
  const out = [
    `stopped at ${at}, ${failure.state}: ${failure.reason}`,
    `it goes on once ${at} is reported succeeded (${reportCommand(task.id, failure.logicalDate)}), or marked`,
  ];
  const held = heldReports(task, view.instances);
  if (held.length > 0)
    out.push(
      `held until it is in (its intervals complete in order): ${held.map((i) => `${reportedDate(i.logicalDate)} ${describeReport(i)}`).join("; ")}`,
    );
  return out;
}
