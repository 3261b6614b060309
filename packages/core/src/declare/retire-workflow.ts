import type { DomainEvent } from "../events/catalog.js";
import type { TaskKey } from "../keys.js";
import type { WorkflowSpec } from "../spec.js";
import { taskStream, workflowStream } from "../streams.js";
import type { TaskState } from "../task/state.js";

/** What retiring a workflow is decided on: what is declared now, with each stream's revision. */
export interface WorkflowRetirementState {
  readonly tasks: ReadonlyMap<string, TaskState>;
  readonly workflows: ReadonlyMap<string, WorkflowSpec>;
  readonly workflowRevisions: ReadonlyMap<string, bigint>;
}

export type WorkflowRetirementDecision =
  | {
      readonly kind: "retire";
      readonly workflow: WorkflowSpec;
      /** The tasks retired now, in key order; those retired before are left as they are. */
      readonly tasks: readonly string[];
      /** Every write, to be appended in one atomic step: each task's stream, then the workflow's. */
      readonly writes: ReadonlyArray<{
        readonly streamId: string;
        readonly events: readonly DomainEvent[];
        readonly expectedRevision: bigint | "exists";
      }>;
    }
  /** No workflow of that name is declared: nothing is written. */
  | { readonly kind: "unknown"; readonly known: readonly string[] }
  /** The workflow was declared, and is retired already: nothing is written. */
  | { readonly kind: "retired" };

/**
 * Retiring a workflow: every task of it that is not retired yet is retired (TaskRetired, with
 * `reason` or "workflow W retired"), and the workflow with them (WorkflowRetired, naming those
 * tasks), each write at its stream's revision in `state`, so the whole is one atomic
 * compare-and-set: all of it or nothing. A workflow that is not declared is refused, with the
 * names that are, and one retired already is refused as such.
 */
export function decideWorkflowRetirement(
  state: WorkflowRetirementState,
  name: string,
  reason?: string,
): WorkflowRetirementDecision {
  const workflow = state.workflows.get(name);
  if (!workflow)
    return state.workflowRevisions.has(name)
      ? { kind: "retired" }
      : { kind: "unknown", known: [...state.workflows.keys()].sort() };
  const tasks = [...state.tasks.values()]
    .filter((t) => t.spec.workflow === name && t.status !== "retired")
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const why = reason ?? `workflow ${name} retired`;
  const writes: Array<{ streamId: string; events: DomainEvent[]; expectedRevision: bigint | "exists" }> =
    tasks.map((t) => ({
      streamId: taskStream(t.key),
      events: [{ type: "TaskRetired", data: { key: t.key, reason: why } }],
      expectedRevision: t.revision,
    }));
  const keys: TaskKey[] = tasks.map((t) => t.key);
  writes.push({
    streamId: workflowStream(name),
    events: [{ type: "WorkflowRetired", data: { name, tasks: keys, ...(reason ? { reason } : {}) } }],
    expectedRevision: state.workflowRevisions.get(name) ?? "exists",
  });
  return { kind: "retire", workflow, tasks: tasks.map((t) => t.id), writes };
}
