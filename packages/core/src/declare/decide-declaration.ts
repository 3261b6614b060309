import type { DomainEventOf } from "../events/catalog.js";
import { initialPosition } from "../schedule/interval.js";
import type { ConnectionSpec, TaskSpec, WorkflowSpec } from "../spec.js";
import { deepEqual, diffTaskSpecs, type TaskSpecChange } from "./diff.js";

/** What a declaration did to what was declared before it. */
export type DeclarationOutcome = "declared" | "changed" | "unchanged";

/**
 * What declaring a task writes to its task stream. A new task is declared at its first
 * position (the first interval from its start date, or the latest one due by `now` when it
 * does not catch up); a changed one records the fields that changed; an unchanged one writes
 * nothing, so declaring the same files again leaves the log as it was.
 */
export type TaskDeclarationDecision =
  | {
      readonly outcome: "declared";
      readonly events: readonly [DomainEventOf<"TaskDeclared">];
      readonly changes: readonly [];
    }
  | {
      readonly outcome: "changed";
      readonly events: readonly [DomainEventOf<"TaskDeclarationChanged">];
      readonly changes: readonly TaskSpecChange[];
    }
  | { readonly outcome: "unchanged"; readonly events: readonly []; readonly changes: readonly [] };

/** `before`: the task's declaration today, if it has one; `now`: epoch milliseconds. */
export function decideTaskDeclaration(
  before: TaskSpec | undefined,
  spec: TaskSpec,
  now: number,
): TaskDeclarationDecision {
  if (!before) {
    const position = initialPosition(spec, new Date(now));
    return {
      outcome: "declared",
      events: [
        {
          type: "TaskDeclared",
          data: { key: spec.key, spec, logicalDate: position.logicalDate, nextRunDate: position.nextRunDate },
        },
      ],
      changes: [],
    };
  }
  const changes = diffTaskSpecs(before, spec);
  if (changes.length === 0) return { outcome: "unchanged", events: [], changes: [] };
  return {
    outcome: "changed",
    events: [{ type: "TaskDeclarationChanged", data: { key: spec.key, spec, changes: [...changes] } }],
    changes,
  };
}

/**
 * What declaring a connection or a workflow writes to its stream: the whole spec again when
 * it is new or differs in any field, nothing when it is equal to what is declared.
 */
export type SpecDeclarationDecision<Event> =
  | { readonly outcome: "declared" | "changed"; readonly events: readonly [Event] }
  | { readonly outcome: "unchanged"; readonly events: readonly [] };

export function decideConnectionDeclaration(
  before: ConnectionSpec | undefined,
  spec: ConnectionSpec,
): SpecDeclarationDecision<DomainEventOf<"ConnectionDeclared">> {
  if (before && deepEqual(before, spec)) return { outcome: "unchanged", events: [] };
  return {
    outcome: before ? "changed" : "declared",
    events: [{ type: "ConnectionDeclared", data: { spec } }],
  };
}

export function decideWorkflowDeclaration(
  before: WorkflowSpec | undefined,
  spec: WorkflowSpec,
): SpecDeclarationDecision<DomainEventOf<"WorkflowDeclared">> {
  if (before && deepEqual(before, spec)) return { outcome: "unchanged", events: [] };
  return { outcome: before ? "changed" : "declared", events: [{ type: "WorkflowDeclared", data: { spec } }] };
}
