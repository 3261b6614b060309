import type { DomainEvent } from "../events/catalog.js";
import type { InstanceStatus } from "../instance/state.js";
import { formatTaskKey } from "../keys.js";

export type RunStatus = "running" | "success" | "failed" | "partial";

/** One workflow for one logical date: the fold of its run stream and its tasks' outcomes. */
export interface RunState {
  readonly runId: string;
  readonly workflow: string;
  readonly logicalDate: string;
  readonly status: RunStatus;
  /** The workflow's tasks (ids) when the run (re)started. */
  readonly tasks: readonly string[];
  /** What started the latest try. */
  readonly trigger: RunTrigger;
  readonly params: Readonly<Record<string, string>>;
  /** task id -> the status of its instance in this run, once it has one. */
  readonly outcomes: Readonly<Record<string, InstanceStatus>>;
  readonly revision: bigint;
  /**
   * The latest try: 1 for the run's first start, one more for each rerun, trigger or backfill
   * of its date after it.
   */
  readonly try: number;
  /** When the latest try started. */
  readonly startedAt: string;
  /** Who started the latest try (the actor that asked for it), when the log says. */
  readonly actor: string | null;
  /** When the run first started. */
  readonly firstStartedAt: string;
  /** When the latest try finished (null while it runs). */
  readonly finishedAt: string | null;
  /** task id -> the outcome an operator marked its interval with by hand (absent: none). */
  readonly marked?: Readonly<Record<string, "success" | "skipped">>;
}

export type RunTrigger = "schedule" | "manual" | "rerun" | "backfill";

export function runIdOf(workflow: string, logicalDate: string): string {
  return `${workflow}@${logicalDate}`;
}

interface At {
  readonly revision: bigint;
  readonly recordedAt: string;
  /** The actor that wrote the event. */
  readonly actor?: string;
}

/** Applies one run-stream event. */
export function evolveRun(state: RunState | undefined, event: DomainEvent, at: At): RunState | undefined {
  switch (event.type) {
    case "RunStarted": {
      const d = event.data;
      const tasks = d.tasks.map(formatTaskKey);
      // A rerun starts afresh for the tasks it names; other outcomes of the run stand.
      const outcomes = { ...(state?.outcomes ?? {}) };
      for (const t of tasks) delete outcomes[t];
      const all = state ? [...new Set([...state.tasks, ...tasks])] : tasks;
      const marked = { ...(state?.marked ?? {}) };
      for (const t of tasks) delete marked[t];
      return {
        runId: d.runId,
        workflow: d.workflow,
        logicalDate: d.logicalDate,
        status: "running",
        tasks: all,
        trigger: d.trigger,
        params: { ...(state?.params ?? {}), ...d.params },
        outcomes,
        revision: at.revision,
        try: d.try ?? (state ? state.try + 1 : 1),
        startedAt: at.recordedAt,
        actor: d.requestedBy ?? at.actor ?? null,
        firstStartedAt: state?.firstStartedAt ?? at.recordedAt,
        finishedAt: null,
        ...(Object.keys(marked).length > 0 ? { marked } : {}),
      };
    }
    case "RunFinished":
      return (
        state && { ...state, status: event.data.state, revision: at.revision, finishedAt: at.recordedAt }
      );
    default:
      return state;
  }
}

/**
 * Records a task's instance status in its run (from the attempt stream, not the run stream), and
 * whether an operator marked it by hand (`marked`: the mark; null: not marked, or no longer).
 */
export function withOutcome(
  run: RunState,
  taskId: string,
  status: InstanceStatus,
  marked: "success" | "skipped" | null = null,
): RunState {
  const was = run.marked?.[taskId] ?? null;
  if (run.outcomes[taskId] === status && was === marked) return run;
  let next: RunState = { ...run, outcomes: { ...run.outcomes, [taskId]: status } };
  if (was !== marked) {
    const all = { ...(run.marked ?? {}) };
    if (marked === null) delete all[taskId];
    else all[taskId] = marked;
    const { marked: _, ...rest } = next;
    next = Object.keys(all).length > 0 ? { ...rest, marked: all } : rest;
  }
  return next;
}

/**
 * A task's interval reopened by an operator while its run goes on: it has no outcome in the run
 * until it is dispatched again, so the run waits for it.
 */
export function withoutOutcome(run: RunState, taskId: string): RunState {
  if (!(taskId in run.outcomes) && !run.marked?.[taskId]) return run;
  const outcomes = { ...run.outcomes };
  delete outcomes[taskId];
  const marked = { ...(run.marked ?? {}) };
  delete marked[taskId];
  const { marked: _, ...rest } = run;
  return { ...rest, outcomes, ...(Object.keys(marked).length > 0 ? { marked } : {}) };
}
