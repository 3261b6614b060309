import type { DomainEvent } from "../events/catalog.js";
import { formatTaskKey, type TaskKey } from "../keys.js";
import type { TaskSpec } from "../spec.js";

export type TaskStatus = "active" | "paused" | "retired";

/** A terminal outcome that stopped the task at an interval. */
export interface TaskFailure {
  readonly logicalDate: string;
  readonly state: "failed" | "upstream_failed" | "abandoned" | "cancelled";
  readonly reason: string;
}

export interface BackfillWindow {
  /** First interval of the range (absent in a window folded from before it was recorded). */
  readonly from?: string;
  readonly until: string;
  readonly resume?: { logicalDate: string; nextRunDate: string; prevIntervalStart: string | null };
  readonly backfillId?: string;
  /** The actor that asked for it: the runs it reopens name them. */
  readonly requestedBy?: string;
  /** The priority its intervals compete with (absent: below every scheduled interval). */
  readonly priority?: number;
}

/**
 * What a task's declaration says besides its key and its parents, which the task's state holds
 * itself: tasks declared alike can then hold one object (a catalogue of a million tasks holds a
 * handful of them).
 */
export type DeclaredSpec = Omit<TaskSpec, "key" | "parents">;

/** A task's declaration and schedule position: the fold of its task stream. */
export interface TaskState {
  readonly key: TaskKey;
  readonly id: string;
  /** Its declaration, but for its key and parents (see `declarationOf`). */
  readonly spec: DeclaredSpec;
  /** The keys of the tasks its declaration names as parents. */
  readonly parents: readonly TaskKey[];
  readonly status: TaskStatus;
  /** Why the task was paused, when it is paused and the pause said why. */
  readonly pausedReason?: string;
  /** The interval the task runs for next. */
  readonly logicalDate: string;
  /** The interval it last finished (null: none yet). */
  readonly prevIntervalStart: string | null;
  /** When the current interval is due. */
  readonly nextRunDate: string;
  readonly failure: TaskFailure | null;
  readonly backfill: BackfillWindow | null;
  /** The task stream's revision: the expected revision of the next write. */
  readonly revision: bigint;
  /**
   * Log position of the last event that moved the schedule (declared, reset, completed).
   * An instance outcome counts for the task only if its dispatch came after it.
   */
  readonly movedAt: bigint;
}

export interface Positioned {
  readonly revision: bigint;
  readonly position: bigint;
  /** Who wrote the event, when the caller knows. */
  readonly metadata?: { readonly actor?: string };
}

/** A declaration without its key and parents. */
export function declaredSpec(spec: TaskSpec): DeclaredSpec {
  const { key: _key, parents: _parents, ...rest } = spec;
  return rest;
}

/** A task's whole declaration, as it was declared: its key, its spec and its parents. */
export function declarationOf(task: Pick<TaskState, "key" | "spec" | "parents">): TaskSpec {
  return { key: task.key, ...task.spec, parents: task.parents as TaskKey[] };
}

/**
 * A task's state as it is shown (the API's task, `tasks show --json`): its whole declaration as
 * `spec`, key and parents in it.
 */
export function shownTask(task: TaskState): Omit<TaskState, "spec" | "parents"> & { spec: TaskSpec } {
  const { parents: _parents, ...rest } = task;
  return { ...rest, spec: declarationOf(task) };
}

/** Applies one task-stream event. Events of other streams are not passed here. */
export function evolveTask(
  state: TaskState | undefined,
  event: DomainEvent,
  at: Positioned,
): TaskState | undefined {
  switch (event.type) {
    case "TaskDeclared": {
      const d = event.data;
      return {
        key: d.key,
        id: formatTaskKey(d.key),
        spec: declaredSpec(d.spec),
        parents: d.spec.parents,
        status: "active",
        logicalDate: d.logicalDate,
        prevIntervalStart: null,
        nextRunDate: d.nextRunDate,
        failure: null,
        backfill: null,
        revision: at.revision,
        movedAt: at.position,
      };
    }
    case "TaskDeclarationChanged":
      return (
        state && {
          ...state,
          spec: declaredSpec(event.data.spec),
          parents: event.data.spec.parents,
          revision: at.revision,
        }
      );
    case "TaskPaused":
      return state && paused(state, event.data.reason, at.revision);
    case "TaskResumed":
      return state && resumed(state, at.revision);
    case "TaskRetired":
      return state && { ...state, status: "retired", revision: at.revision };
    case "TaskRevived":
      return state && revived(state, at.revision);
    case "IntervalReset": {
      if (!state) return state;
      const d = event.data;
      return {
        ...state,
        logicalDate: d.logicalDate,
        nextRunDate: d.nextRunDate,
        prevIntervalStart: d.prevIntervalStart,
        failure: null,
        backfill: d.until
          ? {
              from: d.from ?? d.logicalDate,
              until: d.until,
              resume: d.resume,
              backfillId: d.backfillId,
              ...(at.metadata?.actor ? { requestedBy: at.metadata.actor } : {}),
              ...(d.priority !== undefined ? { priority: d.priority } : {}),
            }
          : null,
        revision: at.revision,
        // A walk that goes on where it stands keeps the attempt under way there its own.
        movedAt: d.continues === true && d.logicalDate === state.logicalDate ? state.movedAt : at.position,
      };
    }
    case "IntervalCompleted": {
      if (!state) return state;
      const d = event.data;
      const backfillDone =
        state.backfill !== null && Date.parse(d.logicalDate) >= Date.parse(state.backfill.until);
      return {
        ...state,
        prevIntervalStart:
          backfillDone && state.backfill?.resume
            ? laterOf(d.logicalDate, state.backfill.resume.prevIntervalStart)
            : d.logicalDate,
        logicalDate: d.nextLogicalDate,
        nextRunDate: d.nextRunDate,
        failure: null,
        backfill: backfillDone ? null : state.backfill,
        revision: at.revision,
        movedAt: at.position,
      };
    }
    case "IntervalRetried": {
      if (!state) return state;
      // Only the interval the task stands at: its stop is lifted and it is decided afresh (an
      // attempt stream from before this move is an earlier one's).
      if (state.logicalDate !== event.data.logicalDate) return { ...state, revision: at.revision };
      return { ...state, failure: null, revision: at.revision, movedAt: at.position };
    }
    case "IntervalFailed": {
      if (!state) return state;
      const d = event.data;
      return {
        ...state,
        failure: { logicalDate: d.logicalDate, state: d.state, reason: d.reason },
        revision: at.revision,
      };
    }
    default:
      // An event of no meaning here (one an operator appended by hand, say) still moves the
      // stream: the revision every write to it, and every dispatch's check, expects moves too.
      return state && { ...state, revision: at.revision };
  }
}

/** Paused, with the pause's reason (a retired task stays retired). Kept out of evolveTask's body. */
function paused(state: TaskState, reason: string | undefined, revision: bigint): TaskState {
  if (state.status === "retired") return { ...state, revision };
  const { pausedReason: _, ...rest } = state;
  return { ...rest, status: "paused", ...(reason ? { pausedReason: reason } : {}), revision };
}

/** Active again, the pause's reason forgotten (a retired task stays retired). */
function resumed(state: TaskState, revision: bigint): TaskState {
  const { pausedReason: _, ...rest } = state;
  return { ...rest, status: state.status === "retired" ? "retired" : "active", revision };
}

/** Active again after being retired; a task that is not retired is left as it is. */
function revived(state: TaskState, revision: bigint): TaskState {
  if (state.status !== "retired") return { ...state, revision };
  const { pausedReason: _, ...rest } = state;
  return { ...rest, status: "active", revision };
}

function laterOf(a: string, b: string | null): string {
  return b !== null && Date.parse(b) > Date.parse(a) ? b : a;
}
