import { ValidationError } from "../errors.js";
import type { DomainEvent, DomainEventOf } from "../events/catalog.js";
import { taskKeyText } from "../keys.js";
import { firstSlotAtOrAfter, nextCronTime } from "../schedule/cron.js";
import { initialPosition, toInstant } from "../schedule/interval.js";
import type { ConnectionSpec, TaskSpec, WorkflowSpec } from "../spec.js";
import { connectionStream, taskStream, workflowStream } from "../streams.js";
import { declarationOf, type TaskState } from "../task/state.js";
import { deepEqual, diffTaskSpecs, type TaskSpecChange } from "./diff.js";

/**
 * What a declaration did to what was declared before it. `retired`: a task of a declared
 * workflow that the workflow's declaration no longer names; `revived`: a retired task declared
 * again with revive.
 */
export type DeclarationOutcome = "declared" | "changed" | "unchanged" | "retired" | "revived";

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

/** What a declaration is decided on: what is declared now, with each stream's revision. */
export interface DeclarationState {
  readonly tasks: ReadonlyMap<string, TaskState>;
  /** Whether the task's current interval has an attempt on record (see scheduleRealigned). */
  inPlay?(task: TaskState): boolean;
  readonly connections: ReadonlyMap<string, ConnectionSpec>;
  readonly connectionRevisions: ReadonlyMap<string, bigint>;
  readonly workflows: ReadonlyMap<string, WorkflowSpec>;
  readonly workflowRevisions: ReadonlyMap<string, bigint>;
}

/** A validated declaration: the whole of what its files declare. */
export interface DeclarationInput {
  readonly tasks: readonly TaskSpec[];
  readonly connections: readonly ConnectionSpec[];
  readonly workflows: readonly WorkflowSpec[];
  /** Epoch milliseconds: where a new task starts. */
  readonly now: number;
  /** Declare retired tasks again (TaskRevived) instead of refusing them. */
  readonly revive?: boolean;
}

/** One stream's events and the revision the stream must be at for them to be written. */
export interface DeclarationWrite {
  readonly streamId: string;
  readonly events: readonly DomainEvent[];
  readonly expectedRevision: bigint | "no_stream";
}

export interface DeclarationDecision {
  /** Every write of the declaration, to be appended in one atomic step (empty: nothing changed). */
  readonly writes: readonly DeclarationWrite[];
  readonly connections: ReadonlyArray<{ readonly name: string; readonly outcome: DeclarationOutcome }>;
  readonly workflows: ReadonlyArray<{ readonly name: string; readonly outcome: DeclarationOutcome }>;
  readonly tasks: ReadonlyArray<{
    readonly task: string;
    readonly outcome: DeclarationOutcome;
    readonly changes: readonly TaskSpecChange[];
  }>;
}

/**
 * What a whole declaration writes, as one decision: its connections, workflows and tasks, in
 * that order (so no reader meets a task before its connection or workflow), each write with the
 * revision of its stream in `state`. A workflow's declaration is its whole task set: a task of
 * a declared workflow that it no longer names is retired. A retired task declared again is
 * refused (a ValidationError naming every such task, nothing written) unless `revive` is set,
 * which revives it (and records what changed in its declaration). Tasks outside workflows are
 * never retired here: a file of plain tasks speaks only for the tasks it names.
 */
export function decideDeclaration(state: DeclarationState, input: DeclarationInput): DeclarationDecision {
  const writes: DeclarationWrite[] = [];
  const connections: Array<{ name: string; outcome: DeclarationOutcome }> = [];
  for (const spec of input.connections) {
    const decision = decideConnectionDeclaration(state.connections.get(spec.name), spec);
    connections.push({ name: spec.name, outcome: decision.outcome });
    if (decision.events.length > 0)
      writes.push({
        streamId: connectionStream(spec.name),
        events: decision.events,
        expectedRevision: state.connectionRevisions.get(spec.name) ?? "no_stream",
      });
  }
  const workflows: Array<{ name: string; outcome: DeclarationOutcome }> = [];
  for (const spec of input.workflows) {
    const decision = decideWorkflowDeclaration(state.workflows.get(spec.name), spec);
    workflows.push({ name: spec.name, outcome: decision.outcome });
    if (decision.events.length > 0)
      writes.push({
        streamId: workflowStream(spec.name),
        events: decision.events,
        expectedRevision: state.workflowRevisions.get(spec.name) ?? "no_stream",
      });
  }
  const tasks: Array<{ task: string; outcome: DeclarationOutcome; changes: readonly TaskSpecChange[] }> = [];
  const refused: string[] = [];
  // The tasks named, to retire the rest of a declared workflow's: kept only when one is declared.
  const named = input.workflows.length > 0 ? new Set<string>() : undefined;
  for (const spec of input.tasks) {
    const id = taskKeyText(spec.key);
    named?.add(id);
    const before = state.tasks.get(id);
    if (before?.status === "retired") {
      if (!input.revive) {
        refused.push(id);
        continue;
      }
      const changes = diffTaskSpecs(declarationOf(before), spec);
      const events: DomainEvent[] = [
        { type: "TaskRevived", data: { key: spec.key, reason: "declared again with revive" } },
      ];
      if (changes.length > 0)
        events.push({ type: "TaskDeclarationChanged", data: { key: spec.key, spec, changes: [...changes] } });
      const realigned = scheduleRealigned(before, spec, changes, state);
      if (realigned) events.push(realigned);
      tasks.push({ task: id, outcome: "revived", changes });
      writes.push({ streamId: `task-${id}`, events, expectedRevision: before.revision });
      continue;
    }
    const decision = decideTaskDeclaration(before && declarationOf(before), spec, input.now);
    tasks.push({ task: id, outcome: decision.outcome, changes: decision.changes });
    const realigned = before && scheduleRealigned(before, spec, decision.changes, state);
    if (decision.events.length > 0)
      writes.push({
        streamId: `task-${id}`,
        events: realigned ? [...decision.events, realigned] : decision.events,
        expectedRevision: before ? before.revision : "no_stream",
      });
  }
  if (refused.length > 0) {
    throw new ValidationError(
      "declarations",
      refused.map((id) => ({
        path: id,
        message: "the task is retired; declaring it again needs revive (declare --revive)",
      })),
    );
  }
  const declaredWorkflows = new Set(input.workflows.map((w) => w.name));
  const dropped = (declaredWorkflows.size === 0 ? [] : [...state.tasks.values()])
    .filter(
      (t) =>
        t.spec.workflow !== undefined &&
        declaredWorkflows.has(t.spec.workflow) &&
        t.status !== "retired" &&
        !named?.has(t.id),
    )
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const t of dropped) {
    const reason = `no longer in workflow ${t.spec.workflow}'s declaration`;
    tasks.push({ task: t.id, outcome: "retired", changes: [] });
    writes.push({
      streamId: taskStream(t.key),
      events: [{ type: "TaskRetired", data: { key: t.key, reason } }],
      expectedRevision: t.revision,
    });
  }
  return { writes, connections, workflows, tasks };
}

/** The declaration fields that say which intervals a task has. */
const SCHEDULE_FIELDS = new Set(["cron", "timezone", "startDate"]);

/**
 * A task whose schedule changed (its cron, zone or start date) moves to the new schedule's first
 * interval at or after where it stood (and at or after its start date), so that it never runs an
 * interval the new schedule does not have: the intervals it finished stay finished. Not while
 * its current interval has an attempt on record (running, halted, or done and not yet recorded):
 * that interval ends as it began, and its completion moves the task on by the new schedule (see
 * decideIntervalCompleted); nor during a backfill, which returns the task where it was; nor for
 * a workflow's task, whose current interval its run may hold (it follows the new schedule after).
 */
function scheduleRealigned(
  before: TaskState,
  spec: TaskSpec,
  changes: readonly TaskSpecChange[],
  state: DeclarationState,
): DomainEventOf<"IntervalReset"> | null {
  if (!changes.some((c) => SCHEDULE_FIELDS.has(c.field)) || before.backfill !== null) return null;
  if (before.failure !== null || state.inPlay?.(before)) return null;
  // A workflow's task stands at an interval its workflow's run may hold already: it ends it.
  if (spec.workflow !== undefined) return null;
  const from = Math.max(Date.parse(before.logicalDate), Date.parse(spec.startDate));
  const first = firstSlotAtOrAfter(spec.cron, spec.timezone, new Date(from));
  const logicalDate = toInstant(first);
  // (Where it stands may be a slot of both schedules, whose interval ends elsewhere now.)
  const nextRunDate = toInstant(nextCronTime(spec.cron, spec.timezone, first));
  if (logicalDate === before.logicalDate && nextRunDate === before.nextRunDate) return null;
  return {
    type: "IntervalReset",
    data: {
      key: spec.key,
      logicalDate,
      nextRunDate,
      prevIntervalStart: before.prevIntervalStart,
      reason: "schedule_changed",
    },
  };
}
