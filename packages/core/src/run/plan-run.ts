import { ValidationError } from "../errors.js";
import { runIdInput } from "../input.js";
import type { InstanceStatus } from "../instance/state.js";
import type { SchedulerProjection } from "../projection/scheduler-projection.js";
import { firstSlotAtOrAfter, lastSlotEndingBy, nextCronTime, prevCronTime } from "../schedule/cron.js";
import { type DateArg, dateArg, intervalOn } from "../schedule/day.js";
import { shortInstant, toInstant } from "../schedule/interval.js";
import { runStream } from "../streams.js";
import { describeWindow, planWindow, windowHalted } from "../task/backfill-window.js";
import {
  type JoinedWindow,
  joinedWindow,
  type PlannedWrite,
  type PlanRefusal,
  refusal,
  resetWrite,
  unsettled,
  unsettledRefusal,
} from "../task/plan-backfill.js";
import type { TaskState } from "../task/state.js";
import { type RunState, type RunTrigger, runIdOf } from "./state.js";

/** One task a run (re)starts, at the run's interval, and what that does to the task. */
export interface RunPlanTask {
  readonly task: string;
  readonly interval: string;
  /** A pending backfill or rerun window of the task it joins (or takes over). */
  readonly merged?: JoinedWindow;
  readonly notes: readonly string[];
}

/** What a trigger or rerun will do: the run's try, its tasks and their interval. */
export interface RunPlan {
  readonly runId: string;
  readonly workflow: string;
  readonly logicalDate: string;
  readonly trigger: Extract<RunTrigger, "manual" | "rerun">;
  /** The try it starts (1: the run's first). */
  readonly try: number;
  readonly params: Readonly<Record<string, string>>;
  /** The tasks it (re)starts, by id. */
  readonly tasks: readonly string[];
  /** Each of them at the run's interval, with what that does to the task. */
  readonly intervals: readonly RunPlanTask[];
  /** Tasks of the run left as they are (a rerun of what failed keeps what succeeded). */
  readonly kept: readonly string[];
}

export type RunPlanDecision =
  | { readonly kind: "planned"; readonly plan: RunPlan; readonly writes: PlannedWrite[] }
  | PlanRefusal;

/** A run as its stream holds it, and the stream's revision (what a new try is written against). */
export interface RunAsRead {
  readonly run: RunState | undefined;
  readonly revision: bigint | "no_stream";
}

function workflowTasks(projection: SchedulerProjection, workflow: string): TaskState[] {
  return [...projection.tasks.values()].filter((t) => t.spec.workflow === workflow && t.status !== "retired");
}

/**
 * The interval a trigger names (default: the latest that has ended at `nowMs`), on the schedule
 * of the workflow's tasks; a day names the one interval that starts on it in their zone. Throws
 * a ValidationError for a date that is not a slot, or an interval not over yet; refuses a
 * workflow that is not declared or has no tasks. Pure.
 */
export function triggerDate(
  projection: SchedulerProjection,
  workflow: string,
  at: DateArg | undefined,
  nowMs: number,
): { kind: "date"; logicalDate: string } | PlanRefusal {
  if (!projection.workflows.has(workflow)) return refusal("not_found", `no workflow ${workflow} is declared`);
  const first = workflowTasks(projection, workflow)[0];
  if (!first) return refusal("state", `workflow ${workflow} has no tasks`);
  const { cron, timezone } = first.spec;
  const named = at ? intervalOn(at, { cron, timezone }, "--logical-date", `workflow ${workflow}`) : undefined;
  const when = named ? new Date(named) : lastSlotEndingBy(cron, timezone, new Date(nowMs));
  const slot = prevCronTime(cron, timezone, when);
  const end = nextCronTime(cron, timezone, slot);
  if (end.getTime() > nowMs)
    throw new ValidationError("trigger", [
      {
        path: "--logical-date",
        message: `the interval ${shortInstant(toInstant(slot))} is not over until ${shortInstant(toInstant(end))}`,
      },
    ]);
  if (at && slot.getTime() !== when.getTime()) {
    const next = firstSlotAtOrAfter(cron, timezone, when);
    throw new ValidationError("trigger", [
      {
        path: "--logical-date",
        message: `${at.text} is not a slot of ${cron} (${timezone}); the nearest are ${slot.toISOString()} and ${next.toISOString()}`,
      },
    ]);
  }
  return { kind: "date", logicalDate: toInstant(slot) };
}

/**
 * Where each task is set back to for the run's one interval, and the writes: the run's RunStarted
 * and every task's IntervalReset, written together so a run is never opened for tasks that were
 * not set back to its date.
 */
function resets(
  tasks: readonly TaskState[],
  logicalDate: string,
  refusedAs: string,
): { kind: "ok"; planned: RunPlanTask[]; writes: PlannedWrite[] } | PlanRefusal {
  const planned: RunPlanTask[] = [];
  const writes: PlannedWrite[] = [];
  const refused: string[] = [];
  for (const task of tasks) {
    const plan = planWindow(task, logicalDate, logicalDate);
    if (plan.kind === "refused") {
      refused.push(plan.reason);
      continue;
    }
    const { joins } = plan.reset;
    const notes: string[] = [];
    if (task.status === "paused") notes.push(`paused: it waits for \`chronolog resume ${task.id}\``);
    if (!joins && Date.parse(task.logicalDate) < Date.parse(logicalDate))
      notes.push(
        `it stands at ${shortInstant(task.logicalDate)}, behind the run: it goes on after ${shortInstant(logicalDate)}, and its intervals from ${shortInstant(task.logicalDate)} up to it are not run`,
      );
    else if (!joins && Date.parse(task.logicalDate) > Date.parse(logicalDate))
      notes.push(`afterwards it returns to ${shortInstant(task.logicalDate)}, where it stands now`);
    const merged = joinedWindow(task, plan.reset);
    planned.push({ task: task.id, interval: logicalDate, ...(merged ? { merged } : {}), notes });
    // (Due when its interval ends, as on the schedule: always in the past here.)
    writes.push(resetWrite(task, plan.reset, "operator", joins?.backfillId));
  }
  if (refused.length > 0) return refusal("state", `${refusedAs} refused: ${refused.join("; ")}`);
  return { kind: "ok", planned, writes };
}

/**
 * A trigger starts exactly the run it names: the workflow's tasks at that one interval, nothing
 * else. It is refused, writing nothing, when something stands in the way, naming it and how to go
 * on: the run is running already; a task is paused; a task has a backfill or rerun pending over
 * other dates (joining it would run them too; a rerun of this one date that stopped at a failure
 * is taken over, as a new try of the same run); an attempt of a task is still in flight. A param
 * the workflow does not declare is a ValidationError naming the declared ones. Pure.
 */
export function planTrigger(
  projection: SchedulerProjection,
  request: {
    readonly workflow: string;
    readonly logicalDate: string;
    readonly params: Readonly<Record<string, string>>;
    readonly existing: RunAsRead;
  },
): RunPlanDecision {
  const { workflow, logicalDate, params, existing } = request;
  const spec = projection.workflows.get(workflow);
  if (!spec) return refusal("not_found", `no workflow ${workflow} is declared`);
  const declared: Readonly<Record<string, string>> = spec.params ?? {};
  const unknown = Object.keys(params).filter((k) => !Object.hasOwn(declared, k));
  if (unknown.length > 0) {
    const names = Object.keys(declared).sort();
    const known = names.length > 0 ? `its params are ${names.join(", ")}` : "it declares no params";
    throw new ValidationError(
      "trigger",
      unknown.map((k) => ({
        path: `--param ${k}`,
        message: `workflow ${workflow} has no param "${k}" (${known})`,
      })),
    );
  }
  const tasks = workflowTasks(projection, workflow);
  if (tasks.length === 0) return refusal("state", `workflow ${workflow} has no tasks`);
  const runId = runIdOf(workflow, logicalDate);
  const run = existing.run;
  const date = shortInstant(logicalDate);
  if (run?.status === "running")
    return refusal(
      "state",
      `run ${runId} is already running (try ${run.try}, ${run.trigger}): wait for it to finish (\`chronolog run ${workflow}@${date}\` shows where it stands), then trigger it again`,
    );
  const paused = tasks.filter((t) => t.status === "paused");
  if (paused.length > 0)
    return refusal(
      "state",
      `trigger of ${runId} refused: ${paused.map((t) => t.id).join(", ")} ${paused.length === 1 ? "is" : "are"} paused and the run would wait for ${paused.length === 1 ? "it" : "them"}: resume first (\`chronolog resume ${paused[0]?.id}\`)`,
    );
  const pending: string[] = [];
  for (const t of tasks) {
    const w = t.backfill;
    if (!w) continue;
    const only = (w.from ?? t.logicalDate) === logicalDate && w.until === logicalDate;
    if (only && windowHalted(t)) continue;
    pending.push(describeWindow(t, w));
  }
  if (pending.length > 0)
    return refusal(
      "state",
      `trigger of ${runId} refused: ${pending.join("; ")}; a trigger starts only the run it names: wait for that to finish, or extend it with \`chronolog backfill\` over ${date}`,
    );
  const busy = unsettled(projection, tasks);
  if (busy.length > 0) return unsettledRefusal(busy);
  const planned = resets(tasks, logicalDate, `trigger of ${date}`);
  if (planned.kind === "refused") return planned;
  const plan: RunPlan = {
    runId,
    workflow,
    logicalDate,
    trigger: "manual",
    try: (run?.try ?? 0) + 1,
    params: { ...declared, ...params },
    tasks: planned.planned.map((t) => t.task),
    intervals: planned.planned,
    kept: [],
  };
  return { kind: "planned", plan, writes: [started(plan, tasks, existing.revision), ...planned.writes] };
}

function started(plan: RunPlan, tasks: readonly TaskState[], revision: bigint | "no_stream"): PlannedWrite {
  return {
    streamId: runStream(plan.runId),
    expectedRevision: revision,
    events: [
      {
        type: "RunStarted",
        data: {
          runId: plan.runId,
          workflow: plan.workflow,
          logicalDate: plan.logicalDate,
          tasks: tasks.map((t) => t.key),
          trigger: plan.trigger,
          params: plan.trigger === "rerun" ? {} : { ...plan.params },
          try: plan.try,
        },
      },
    ],
  };
}

/**
 * A rerun of a finished run: all its tasks, or with `failedOnly` those whose instance did not
 * succeed (failed, upstream_failed, cancelled, abandoned); the rest are kept. A task with a
 * backfill or rerun pending joins it when the date overlaps or touches what it has left (said),
 * and a date apart from it is refused. Pure: `statuses` are the run's instances as read.
 */
export function planRerun(
  projection: SchedulerProjection,
  request: {
    readonly run: RunState;
    readonly revision: bigint | "no_stream";
    readonly statuses: ReadonlyMap<string, InstanceStatus | undefined>;
    readonly failedOnly: boolean;
  },
): RunPlanDecision {
  const { run, statuses, failedOnly } = request;
  if (run.status === "running")
    return refusal("state", `run ${run.runId} is still running (try ${run.try}): wait for it to finish`);
  const chosen = run.tasks.filter((t) => {
    if (!failedOnly) return true;
    const s = statuses.get(t);
    return s !== undefined && s !== "success" && s !== "skipped";
  });
  if (chosen.length === 0) return refusal("state", `run ${run.runId} has nothing to rerun`);
  const tasks = chosen.map((t) => projection.tasks.get(t)).filter((t): t is TaskState => !!t);
  const busy = unsettled(projection, tasks);
  if (busy.length > 0) return unsettledRefusal(busy);
  const planned = resets(tasks, run.logicalDate, `rerun of ${run.logicalDate}`);
  if (planned.kind === "refused") return planned;
  const rerunning = new Set(tasks.map((t) => t.id));
  const plan: RunPlan = {
    runId: run.runId,
    workflow: run.workflow,
    logicalDate: run.logicalDate,
    trigger: "rerun",
    try: run.try + 1,
    params: run.params,
    tasks: planned.planned.map((t) => t.task),
    intervals: planned.planned,
    kept: run.tasks.filter((t) => !rerunning.has(t)),
  };
  return { kind: "planned", plan, writes: [started(plan, tasks, request.revision), ...planned.writes] };
}

/**
 * The tasks of a workflow that run `logicalDate` in a backfill's try of its run (a new run or a
 * reopened one): those that stand at it, and those whose pending backfill window will walk to
 * it. A task the backfill did not set back (a sibling outside the subtree, or one whose start
 * date is later) is not in the try, so the run never waits for a task that will not come.
 */
export function tasksRunningDate(
  tasks: Iterable<TaskState>,
  workflow: string,
  logicalDate: string,
): TaskState[] {
  const at = Date.parse(logicalDate);
  const out: TaskState[] = [];
  for (const t of tasks) {
    if (t.spec.workflow !== workflow || t.status === "retired") continue;
    const stands = Date.parse(t.logicalDate);
    const w = t.backfill;
    if (
      stands === at ||
      (w !== null && stands < at && at <= Date.parse(w.until) && at >= Date.parse(w.from ?? t.logicalDate))
    )
      out.push(t);
  }
  return out;
}

/**
 * A run id as typed: `WORKFLOW@INSTANT` in any form the tables print, or `WORKFLOW@DAY`, which
 * names the workflow's one interval that starts on that day in its tasks' zone (a declared
 * workflow's; otherwise the day's midnight UTC, as before).
 */
export function runIdOn(projection: SchedulerProjection, text: string, field = "run"): string {
  const at = text.lastIndexOf("@");
  const workflow = at > 0 ? text.slice(0, at) : "";
  const date = at > 0 ? text.slice(at + 1) : "";
  const first = workflow ? workflowTasks(projection, workflow)[0] : undefined;
  if (!first || !/^\d{4}-\d{2}-\d{2}$/.test(date)) return runIdInput(text, field);
  return runIdOf(workflow, intervalOn(dateArg(date, field), first.spec, field, `workflow ${workflow}`));
}
